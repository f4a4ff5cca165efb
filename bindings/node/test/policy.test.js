'use strict'
// Policies for a host's own calls (hub.policy() / callTool(..., { policy }))
// against the demo server with allow_tools = ["echo", "add", "big", "extra_1", "nosuch"].

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { execFileSync } = require('node:child_process')

const { Hub, Policy, McpmuxError } = require('mcpmux')
const h = require('./helpers.js')

const T = { timeout: 60_000 }
const ALLOW = ['echo', 'add', 'big', 'extra_1', 'nosuch']
const SECRET = 'AKIAIOSFODNN7EXAMPLE'
const config = () => ({ mcpServers: { demo: { command: h.DEMO, allow_tools: ALLOW } } })

/** Waits until `cond()` holds (events reach onAudit shortly after a call). */
async function until(cond) {
  for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setTimeout(r, 10))
  assert.ok(cond(), 'timed out waiting')
}

const withHub = (fn) => h.withHub(config(), fn)

test('offered, verdicts and report (the JSON of `mcpmux policy --json`)', T, () =>
  withHub(async (hub) => {
    const policy = hub.policy()
    assert.ok(policy instanceof Policy)
    const offered = await policy.offered()
    assert.deepEqual(offered.map((t) => t.name), ['mcp_demo_echo', 'mcp_demo_add', 'mcp_demo_big'])
    assert.deepEqual(offered[0], (await hub.listTools())[0])
    const verdicts = Object.fromEntries((await policy.verdicts()).map((v) => [v.tool, v]))
    assert.deepEqual(verdicts.echo, { name: 'mcp_demo_echo', server: 'demo', tool: 'echo', offered: true })
    assert.equal(verdicts.crash.offered, false)
    assert.equal(verdicts.crash.refusal, 'not_allowed')
    assert.match(verdicts.crash.reason, /allow_tools/)
    const file = path.join(h.tempDir(), 'mcpmux.json')
    fs.writeFileSync(file, JSON.stringify(config()))
    const cli = JSON.parse(execFileSync(h.CLI, ['--config', file, '--json', 'policy'], { encoding: 'utf8' }))
    const report = await policy.report()
    // `mcpmux policy` pins tool definitions as a review session does (a
    // host's policy only when it asks): the rest of the report is the same.
    assert.deepEqual(cli.servers[0].pins.map((p) => p.status), Array(7).fill('pinned'))
    for (const s of cli.servers) Object.assign(s, { pinned: false, pins: null })
    assert.deepEqual(report, cli)
    assert.deepEqual(report.servers[0].missing, ['extra_1', 'nosuch'])
  }),
)

test('calls through a policy: redaction, refusal, cap, limit, audit', T, () =>
  withHub(async (hub) => {
    const auditPath = path.join(h.tempDir(), 'audit.jsonl')
    const seen = []
    const policy = hub.policy({ maxToolCalls: 6, maxOutputBytes: 100, auditPath, onAudit: (e) => seen.push(e) })

    const r = await hub.callTool('mcp_demo_echo', { text: `key ${SECRET} here` }, { policy })
    assert.equal(r.content[0].text, 'key [REDACTED:aws_access_key_id] here')
    const refused = await h.rejectsWith(hub.callTool('mcp_demo_crash', {}, { policy }), 'TOOL_NOT_ALLOWED', McpmuxError)
    assert.match(refused.message, /mcp_demo_crash/)
    // The server was never asked to crash.
    assert.equal((await hub.callTool('mcp_demo_echo', { text: 'alive' }, { policy })).content[0].text, 'alive')
    // Its head and its tail are kept, one marker between them.
    const big = (await hub.callTool('mcp_demo_big', { bytes: 1000, tail: '\nLAST LINE' }, { policy })).content[0].text
    assert.ok(big.startsWith('x'.repeat(67) + '\n[output truncated by mcpmux: ') && !big.includes('x'.repeat(101)), big)
    assert.ok(big.endsWith('\nLAST LINE'), big)
    assert.match(big, /max_output_bytes = 100/)
    assert.deepEqual((await hub.callTool('mcp_demo_add', { a: 2, b: 3 }, { policy })).structuredContent, { sum: 5 })
    await hub.callTool('mcp_demo_echo', { text: 'six' }, { policy })
    await h.rejectsWith(hub.callTool('mcp_demo_echo', { text: 'seven' }, { policy }), 'LIMIT_EXCEEDED', McpmuxError)
    assert.equal(policy.callsMade, 7)
    // Without the policy the hub is unrestricted.
    assert.equal((await hub.callTool('mcp_demo_echo', { text: SECRET })).content[0].text, SECRET)

    const events = policy.auditEvents()
    assert.deepEqual(
      events.map((e) => [e.tool, e.status]),
      [
        ['echo', 'ok'],
        ['crash', 'not_allowed'],
        ['echo', 'ok'],
        ['big', 'ok'],
        ['add', 'ok'],
        ['echo', 'ok'],
        ['echo', 'limit_exceeded'],
      ],
    )
    for (const e of events) {
      for (const k of ['time', 'server', 'tool', 'status', 'bytes', 'duration_ms', 'redactions']) assert.ok(k in e, k)
      assert.equal(e.server, 'demo')
    }
    assert.equal(events[0].redactions, 1)
    assert.equal(events[1].bytes, 0)
    assert.equal(events[1].code, 'TOOL_NOT_ALLOWED', McpmuxError)
    assert.equal(events[3].truncated, true)
    await until(() => seen.length === 7)
    assert.deepEqual(seen, events)
    const text = fs.readFileSync(auditPath, 'utf8')
    assert.deepEqual(text.trim().split('\n').map((l) => JSON.parse(l)), events)
    assert.ok(!text.includes(SECRET) && !text.includes('alive'))
  }),
)

test('refresh reports allowed tools the server no longer offers', T, () =>
  withHub(async (hub) => {
    const policy = hub.policy({ callTimeoutMs: 5000 })
    await hub.callTool('mcp_demo_grow') // adds extra_1 until the server restarts
    for (let i = 0; i < 500; i++) {
      if ((await hub.listTools()).some((t) => t.name === 'mcp_demo_extra_1')) break
      await new Promise((r) => setTimeout(r, 10))
    }
    assert.ok((await policy.offered()).some((t) => t.name === 'mcp_demo_extra_1'))
    assert.deepEqual(await policy.refresh('demo'), {
      server: 'demo',
      offered: ['echo', 'add', 'big'],
      dropped: ['extra_1'],
      added: [],
      missing: ['extra_1', 'nosuch'],
    })
    await h.rejectsWith(policy.refresh('nope'), 'UNKNOWN_SERVER', McpmuxError)
  }),
)

test('bad options throw INVALID_INPUT naming them', T, () =>
  withHub(async (hub) => {
    const bad = (options, re) =>
      assert.throws(() => hub.policy(options), (e) => e instanceof McpmuxError && e.code === 'INVALID_INPUT' && re.test(e.message))
    bad({ maxOutputBytes: 0 }, /max_output_bytes/)
    bad({ maxToolCall: 1 }, /maxToolCall/)
    bad({ onAudit: 42 }, /onAudit/)
    bad({ callTimeoutMs: 1000, callTimeoutSeconds: 1 }, /callTimeoutMs/)
    await h.rejectsWith(hub.callTool('mcp_demo_echo', { text: 'x' }, { policy: {} }), 'INVALID_INPUT', McpmuxError)
    const other = await Hub.connect(config())
    try {
      await h.rejectsWith(hub.callTool('mcp_demo_echo', { text: 'x' }, { policy: other.policy() }), 'INVALID_INPUT', McpmuxError)
    } finally {
      await other.close()
    }
  }),
)

test('a 50 MB result keeps its head and tail and is kept whole in result_dir', T, async () => {
  // A hostile server's 50 MB log whose last line is the one that matters.
  const kept = path.join(h.tempDir(), 'results')
  const hub = await Hub.connect({
    mcpServers: { demo: { command: h.DEMO, allow_tools: ALLOW, max_message_bytes: 67108864 } },
    session: { max_output_bytes: 3000, result_dir: kept },
  })
  try {
    const tail = `\nERROR: disk full (${SECRET})`
    const r = await hub.callTool('mcp_demo_big', { bytes: 50_000_000, tail }, { policy: hub.policy() })
    const text = r.content[0].text
    assert.ok(text.length < 3500, `${text.length}`)
    assert.ok(text.startsWith('x'.repeat(2000)))
    assert.ok(text.endsWith('\nERROR: disk full ([REDACTED:aws_access_key_id])'), text.slice(-200))
    assert.match(text, /\[output truncated by mcpmux: \d+ of \d+ bytes left out .* whole result: read_result id=[0-9a-f]{32}/)
    const files = fs.readdirSync(kept)
    assert.equal(files.length, 1)
    const st = fs.statSync(path.join(kept, files[0]))
    assert.equal(st.mode & 0o777, 0o600)
    assert.ok(text.includes(files[0].replace(/\.txt$/, '')))
  } finally {
    await hub.close()
  }
})
