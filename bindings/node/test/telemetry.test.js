'use strict'
// Telemetry from Node: with mcpmux's telemetry on (the OTEL_* variables), a
// call made under the host's active span (`@opentelemetry/api`, an optional
// peer dependency) is that span's child, so the server receives the host's
// trace id in `params._meta.traceparent`, whatever trace flags the host's
// span has (`03`, sampled and W3C Trace Context Level 2's random flag, is
// what OpenTelemetry SDKs set). Each case runs in a child process
// (the variables are read once per process); the collector is a port
// nothing listens on, which must not fail a call.

const test = require('node:test')
const assert = require('node:assert')
const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const net = require('node:net')
const path = require('node:path')
const { PKG_DIR, PYTHON, FAULTS, tempDir } = require('./helpers')

const HOST_TRACE = '0af7651916cd43dd8448eb211c80319c'
const HOST_SPAN = 'b7ad6b7169203331'

// The host: a minimal synchronous context manager (an SDK would install
// its own) and a span made active around the call.
const SCRIPT = `
const api = require('@opentelemetry/api')
const { Hub } = require(${JSON.stringify(PKG_DIR)})
class Stack {
  constructor() { this.stack = [api.ROOT_CONTEXT] }
  active() { return this.stack[this.stack.length - 1] }
  with(cx, fn, self, ...args) { this.stack.push(cx); try { return fn.call(self, ...args) } finally { this.stack.pop() } }
  bind(cx, target) { return target }
  enable() { return this }
  disable() { return this }
}
api.context.setGlobalContextManager(new Stack())
const host = api.trace.wrapSpanContext({ traceId: process.argv[2], spanId: process.argv[3], traceFlags: parseInt(process.argv[4], 16) })
;(async () => {
  const hub = await Hub.connect(JSON.parse(process.argv[1]))
  await api.context.with(api.trace.setSpan(api.ROOT_CONTEXT, host), () => hub.callTool('mcp_rec_echo', { text: 'under' }))
  await hub.callTool('mcp_rec_echo', { text: 'alone' })
  await hub.close()
})().catch((e) => { console.error(e); process.exit(1) })
`

function deadPort() {
  return new Promise((resolve) => {
    const server = net.createServer()
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
}

function run(env, flags = '01') {
  const dir = tempDir()
  const record = path.join(dir, 'meta.jsonl')
  const config = { mcpServers: { rec: { command: PYTHON, args: [path.join(FAULTS, 'meta_recorder.py'), record] } } }
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('OTEL_')))
  const out = spawnSync(process.execPath, ['-e', SCRIPT, JSON.stringify(config), HOST_TRACE, HOST_SPAN, flags], {
    env: { ...clean, ...env },
    encoding: 'utf8',
    timeout: 60000,
  })
  assert.strictEqual(out.status, 0, out.stderr)
  return fs.readFileSync(record, 'utf8').trim().split('\n').map((l) => JSON.parse(l))
}

for (const flags of ['01', '03']) {
  test(`a call under the host span is its child (trace flags ${flags})`, async () => {
    const seen = run({ OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${await deadPort()}` }, flags)
    const calls = seen.filter((r) => r.method === 'tools/call').map((r) => r.meta)
    assert.strictEqual(calls.length, 2, JSON.stringify(seen))
    const [, traceId, parent, sampled] = calls[0].traceparent.split('-')
    assert.strictEqual(traceId, HOST_TRACE, JSON.stringify(calls[0]))
    assert.notStrictEqual(parent, HOST_SPAN, "the parent is mcpmux's own client span")
    assert.strictEqual(sampled, '01')
    assert.notStrictEqual(calls[1].traceparent.split('-')[1], HOST_TRACE, 'no active span: a trace of its own')
  })
}

test('nothing is sent when telemetry is off', () => {
  const seen = run({})
  assert.ok(seen.length > 0)
  for (const r of seen) assert.ok(!(r.meta && 'traceparent' in r.meta), JSON.stringify(r))
})
