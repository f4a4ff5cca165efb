'use strict'
// One config-source rule for every front end (core decides): each case of
// tests/fixtures/config_sources.json reaches the same servers, or the same
// error code, from Hub.connect and new Sessions() as from Python, the C ABI
// and the CLI. And the addon's worker threads: one variable,
// MCPMUX_WORKER_THREADS, with MCPMUX_NODE_WORKER_THREADS kept as an alias,
// counted by name in /proc.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { pathToFileURL } = require('node:url')

const { Hub, Sessions, McpmuxError } = require('mcpmux')
const h = require('./helpers.js')

const T = { timeout: 60_000 }
const FIXTURES = path.join(h.ROOT, 'tests', 'fixtures')
const CASES = JSON.parse(fs.readFileSync(path.join(FIXTURES, 'config_sources.json'), 'utf8')).cases
// This file runs in a process of its own: paths are relative to here.
process.chdir(path.join(FIXTURES, 'config_sources'))

/** The ways a Node caller passes the case's input. */
function inputs(c) {
  if (c.kind === 'path') return [c.input, pathToFileURL(path.resolve(c.input))]
  return [c.input]
}

function expectError(c, given, e) {
  assert.ok(e instanceof McpmuxError, `${c.name} (${given}): ${e}`)
  assert.equal(e.code, c.code, `${c.name} (${given}): ${e.message}`)
  if (c.message) assert.ok(e.message.includes(c.message), `${c.name} (${given}): ${e.message}`)
}

for (const c of CASES) {
  test(`Hub.connect: ${c.name}`, T, async () => {
    for (const given of inputs(c)) {
      let hub
      try {
        hub = await Hub.connect(given)
      } catch (e) {
        if (!c.code) throw e
        expectError(c, given, e)
        continue
      }
      try {
        assert.ok(!c.code, `${c.name} (${given}): connected, expected ${c.code}`)
        assert.deepEqual((await hub.servers()).map((s) => s.name), c.servers, `${c.name} (${given})`)
      } finally {
        await hub.close()
      }
    }
  })

  test(`new Sessions: ${c.name}`, T, () => {
    // A context has no server list: it is made (the config read) or refused.
    for (const given of inputs(c)) {
      let made = false
      try {
        new Sessions({ config: given })
        made = true
      } catch (e) {
        if (!c.code) throw e
        expectError(c, given, e)
      }
      assert.equal(made, !c.code, `${c.name} (${given})`)
    }
  })
}

/** Threads named mcpmux-node in a Node process that connected a hub, or
 * the error code its connect failed with. Threads name themselves once
 * running, so it polls (bounded: only a hang fails there) until the count
 * is `want`. */
function nodeThreads(env, want = 0) {
  const script = `
    const fs = require('node:fs')
    const { Hub } = require(${JSON.stringify(h.PKG_DIR)})
    const count = () =>
      fs.readdirSync('/proc/self/task')
        .map((t) => fs.readFileSync('/proc/self/task/' + t + '/comm', 'utf8').trim())
        .filter((n) => n === 'mcpmux-node').length
    Hub.connect({ mcpServers: { a: { command: 'x', disabled: true } } }).then(async (hub) => {
      const deadline = Date.now() + 20_000
      while (count() !== ${want} && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10))
      console.log(count())
      await hub.close()
    }, (e) => console.log(e.code + ' ' + e.message))
  `
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.includes('THREADS')))
  const r = spawnSync(process.execPath, ['-e', script], { env: { ...clean, ...env }, encoding: 'utf8', timeout: 60_000 })
  assert.equal(r.status, 0, r.stderr)
  return r.stdout.trim()
}

test('MCPMUX_WORKER_THREADS sets the worker threads; MCPMUX_NODE_WORKER_THREADS is its alias', T, () => {
  assert.equal(nodeThreads({ MCPMUX_WORKER_THREADS: '3' }, 3), '3')
  assert.equal(nodeThreads({ MCPMUX_NODE_WORKER_THREADS: '2' }, 2), '2')
  assert.equal(nodeThreads({ MCPMUX_WORKER_THREADS: '1', MCPMUX_NODE_WORKER_THREADS: '4' }, 1), '1')
  assert.match(nodeThreads({ MCPMUX_WORKER_THREADS: 'lots' }), /^INVALID_INPUT .*MCPMUX_WORKER_THREADS/)
})

/** A Node with MCPMUX_STAY_AWAKE_US = `value` (unset for undefined) making calls to the demo server. */
function stayAwake(value) {
  const script = `
    const native = require(${JSON.stringify(path.join(h.PKG_DIR, 'native.js'))})
    const { Hub } = require(${JSON.stringify(h.PKG_DIR)})
    console.log(native.stayAwakeMicros())
    Hub.connect({ mcpServers: { demo: { command: ${JSON.stringify(h.DEMO)} } } }).then(async (hub) => {
      for (let i = 0; i < 50; i++) {
        const r = await hub.callTool('mcp_demo_echo', { text: String(i) })
        if (r.content[0].text !== String(i)) throw new Error('wrong answer ' + JSON.stringify(r))
      }
      const many = await Promise.all(Array.from({ length: 32 }, (_, i) => hub.callTool('mcp_demo_echo', { text: String(i) })))
      if (many.some((r, i) => r.content[0].text !== String(i))) throw new Error('wrong answers')
      await hub.close()
      console.log('ok')
    }, (e) => console.log(e.code + ' ' + e.message))
  `
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'MCPMUX_STAY_AWAKE_US'))
  if (value !== undefined) env.MCPMUX_STAY_AWAKE_US = value
  const r = spawnSync(process.execPath, ['-e', script], { env, encoding: 'utf8', timeout: 60_000 })
  assert.equal(r.status, 0, r.stderr)
  return r.stdout.trim()
}

test('MCPMUX_STAY_AWAKE_US is core rule: the default, 0 and a value all make working calls', T, () => {
  assert.deepEqual(stayAwake(undefined).split(/\s+/), ['60', 'ok'])
  assert.deepEqual(stayAwake('0').split(/\s+/), ['0', 'ok'])
  assert.deepEqual(stayAwake('5000').split(/\s+/), ['5000', 'ok'])
  assert.match(stayAwake('soon'), /^60\nINVALID_INPUT .*MCPMUX_STAY_AWAKE_US/)
})
