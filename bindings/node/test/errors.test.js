'use strict'
// Errors: every failure is an McpmuxError with a stable code
// (docs/errors.md); bad input
// names the argument; faults (timeouts, crashes, closed hubs) end in clear
// errors, never a hang.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')

const { Hub, McpmuxError } = require('mcpmux')
const h = require('./helpers.js')

const T = { timeout: 60_000 }
const rejects = (promise, code) => h.rejectsWith(promise, code, McpmuxError)

test('CONFIG_INVALID: bad TOML, bad JSON, a missing file, an unknown type, an unset variable', T, async () => {
  const dir = h.tempDir()
  let e = await rejects(Hub.connect('[[mcp.servers]]\nname = \n'), 'CONFIG_INVALID')
  assert.ok(e instanceof Error)
  assert.equal(e.name, 'McpmuxError')
  await rejects(Hub.connect('{"mcpServers": '), 'CONFIG_INVALID')
  e = await rejects(Hub.connect(path.join(dir, 'missing.toml')), 'CONFIG_INVALID')
  assert.match(e.message, /missing\.toml/)
  e = await rejects(Hub.connect({ mcp: { servers: [{ name: 'x', type: 'carrier-pigeon', command: 'x' }] } }), 'CONFIG_INVALID')
  assert.match(e.message, /carrier-pigeon/)
  e = await rejects(
    Hub.connect({ mcpServers: { s: { command: '${MCPMUX_NODE_TEST_SURELY_UNSET_VARIABLE}' } } }),
    'CONFIG_INVALID',
  )
  assert.match(e.message, /MCPMUX_NODE_TEST_SURELY_UNSET_VARIABLE/)
  const file = path.join(dir, 'dup.json')
  fs.writeFileSync(file, '{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}')
  await rejects(Hub.connect(file), 'CONFIG_INVALID')
})

test('INVALID_INPUT names the argument at fault', T, async () => {
  for (const bad of [42, null, undefined, [], '', Symbol('x')]) {
    const e = await rejects(Hub.connect(bad), 'INVALID_INPUT')
    assert.match(e.message, /^config/)
  }
  const hub = await Hub.connect(h.demoConfig())
  try {
    const cases = [
      [() => hub.callTool(42, {}), /^name/],
      [() => hub.callTool('mcp_demo_echo', [1, 2]), /^args/],
      [() => hub.callTool('mcp_demo_echo', 'text'), /^args/],
      [() => hub.callTool('mcp_demo_echo', { n: 1n }), /^args/],
      [() => hub.callTool('mcp_demo_echo', {}, 'fast'), /^options/],
      [() => hub.callTool('mcp_demo_echo', {}, { timeoutMs: -1 }), /^timeoutMs/],
      [() => hub.callTool('mcp_demo_echo', {}, { timeoutMs: 'soon' }), /^timeoutMs/],
      [() => hub.callTool('mcp_demo_echo', {}, { timeoutMs: Infinity }), /^timeoutMs/],
      [() => hub.callTool('mcp_demo_echo', {}, { signal: {} }), /^signal/],
      [() => hub.callTool('mcp_demo_echo', {}, { onProgress: 1 }), /^onProgress/],
      [() => hub.toolsFor(7), /^format/],
      [() => hub.toolsFor('bogus'), /bogus/],
      [() => hub.readResource(undefined), /^uri/],
      [() => hub.listResources({ server: 3 }), /^server/],
      [() => hub.getPrompt('greet', ['Ada']), /^args/],
      [() => hub.refresh(undefined), /^server/],
    ]
    for (const [call, message] of cases) {
      const e = await rejects(call(), 'INVALID_INPUT')
      assert.match(e.message, message)
    }
    // A tool that gets wrong arguments answers with its own error, not a throw.
    const r = await hub.callTool('mcp_demo_add', { a: 'x' })
    assert.equal(r.isError, true)
  } finally {
    await hub.close()
  }
})

test('UNKNOWN_TOOL and UNKNOWN_SERVER', T, async () => {
  const hub = await Hub.connect(h.demoConfig())
  try {
    const e = await rejects(hub.callTool('mcp_demo_nope', {}), 'UNKNOWN_TOOL')
    assert.match(e.message, /mcp_demo_nope/)
    await rejects(hub.listResources({ server: 'nope' }), 'UNKNOWN_SERVER')
    await rejects(hub.getPrompt('greet', {}, { server: 'nope' }), 'UNKNOWN_SERVER')
  } finally {
    await hub.close()
  }
})

test('SERVER_ERROR carries the JSON-RPC code', T, async () => {
  const hub = await Hub.connect(h.demoConfig())
  try {
    const e = await rejects(hub.readResource('demo://nope', { server: 'demo' }), 'SERVER_ERROR')
    assert.equal(e.rpcCode, -32002)
    assert.match(e.message, /demo:\/\/nope/)
  } finally {
    await hub.close()
  }
})

test('TIMEOUT: per-call timeoutMs and the server timeout', T, async () => {
  // hang.py never answers. `hang` has an hour as its server timeout, so
  // only the call's own timeoutMs can end the first call (ignored, the test
  // fails at its guard); `quick` has 0.3 s, before the hub's default (60 s,
  // the test's guard). The server is told to stop each timed-out call.
  const log = path.join(h.tempDir(), 'cancelled.log')
  const cancelled = () => (fs.existsSync(log) ? fs.readFileSync(log, 'utf8').split('\n').filter(Boolean) : [])
  const env = { HANG_CANCEL_LOG: log }
  const hub = await Hub.connect({
    mcpServers: {
      hang: { ...h.fault('hang.py', env), timeout_seconds: 3600 },
      quick: { ...h.fault('hang.py', env), timeout_seconds: 0.3 },
    },
  })
  try {
    const e = await rejects(hub.callTool('mcp_hang_wait_forever', {}, { timeoutMs: 200 }), 'TIMEOUT')
    assert.match(e.message, /no response to 'tools\/call' within/)
    const q = await rejects(hub.callTool('mcp_quick_wait_forever', {}), 'TIMEOUT')
    assert.match(q.message, /server 'quick'/)
    await h.waitFor(() => cancelled().length === 2, 10_000, 'the two cancellations')
  } finally {
    await hub.close()
  }
})

test('a crash mid-call fails that call and the calls in flight with TRANSPORT_CLOSED', T, async () => {
  // restart: 'never' keeps the crashed demo server failed instead of coming back.
  const hub = await Hub.connect({
    mcpServers: { demo: { command: h.DEMO, restart: 'never' }, crashy: h.fault('crash_mid_call.py') },
  })
  try {
    // The demo server's own crash tool, with slow calls in flight.
    // (Each rejection is caught at once, so none goes unhandled meanwhile.)
    const inflight = [1, 2, 3].map(() =>
      hub.callTool('mcp_demo_slow', { seconds: 10, steps: 0 }).then(
        () => null,
        (err) => err,
      ),
    )
    const crash = hub.callTool('mcp_demo_crash')
    const e = await rejects(crash, 'TRANSPORT_CLOSED')
    assert.match(e.message, /demo/)
    for (const call of inflight) await rejects(Promise.reject(await call), 'TRANSPORT_CLOSED')
    const demo = (await hub.servers()).find((s) => s.name === 'demo')
    assert.equal(demo.state, 'failed')
    assert.equal(demo.error_code, 'TRANSPORT_CLOSED')
    await rejects(hub.callTool('mcp_demo_echo', { text: 'x' }), 'TRANSPORT_CLOSED')

    // A Python server that dies while handling tools/call; stderr is kept.
    const e2 = await rejects(hub.callTool('mcp_crashy_work', {}), 'TRANSPORT_CLOSED')
    assert.match(e2.message, /simulated crash|exit/)

    // refresh brings the demo server back.
    await hub.refresh('demo')
    assert.equal((await hub.callTool('mcp_demo_echo', { text: 'back' })).content[0].text, 'back')
  } finally {
    await hub.close()
  }
})

test('use after close: TRANSPORT_CLOSED; closing twice is harmless', T, async () => {
  const hub = await Hub.connect(h.demoConfig())
  const [pid] = h.childrenOf(process.pid).filter((p) => fs.readlinkSync(`/proc/${p}/exe`) === h.DEMO)
  assert.ok(pid, 'the demo server runs as a child of this process')
  assert.equal(hub.closed, false)
  await hub.close()
  assert.equal(hub.closed, true)
  assert.equal(h.alive(pid), false, 'close() waits until the server is gone')
  const e = await rejects(hub.callTool('mcp_demo_echo', { text: 'x' }), 'TRANSPORT_CLOSED')
  assert.match(e.message, /closed/)
  await rejects(hub.readResource('demo://readme'), 'TRANSPORT_CLOSED')
  await rejects(hub.listResources(), 'TRANSPORT_CLOSED')
  await rejects(hub.refresh('demo'), 'TRANSPORT_CLOSED')
  assert.deepEqual(await hub.listTools(), [])
  assert.equal((await hub.servers())[0].error_code, 'TRANSPORT_CLOSED')
  await hub.close()
})

test('a huge message and garbage on the wire end in PROTOCOL_ERROR, and the hub goes on', T, async () => {
  const hub = await Hub.connect({
    mcpServers: {
      garbage: h.fault('garbage_stdout.py'),
      huge: { ...h.fault('huge_line.py', { HUGE_LINE_BYTES: '2000000' }), max_message_bytes: 1000000 },
    },
  })
  try {
    for (let i = 0; i < 2; i++) {
      const e = await rejects(hub.callTool('mcp_huge_flood', {}), 'PROTOCOL_ERROR')
      assert.match(e.message, /exceeds the limit of 1000000 bytes/)
      const g = await rejects(hub.callTool('mcp_garbage_garble', {}, { timeoutMs: 5000 }), 'PROTOCOL_ERROR')
      assert.match(g.message, /not JSON-RPC/)
    }
    assert.deepEqual(
      (await hub.servers()).map((s) => s.state),
      ['connected', 'connected'],
    )
  } finally {
    await hub.close()
  }
})
