'use strict'
// Options objects: a key no method knows is refused (INVALID_INPUT naming it
// and the nearest known name, as core's contract spells it for Node), never
// ignored; `hub.callTool(name, args, { timeoutMS: 5 })` would otherwise wait
// the default timeout. A key whose value is undefined or null is as if
// absent. Every known key stays accepted.

const test = require('node:test')
const assert = require('node:assert/strict')

const h = require('./helpers.js')
const { Hub, Sessions, McpmuxError } = require('mcpmux')

const T = { timeout: 120_000 }

/** An INVALID_INPUT naming `key` and suggesting `near`. */
function names(e, key, near) {
  assert.ok(e instanceof McpmuxError, String(e && e.stack))
  assert.equal(e.code, 'INVALID_INPUT', e.message)
  assert.ok(e.message.includes(`unknown option '${key}'`), e.message)
  assert.ok(e.message.includes(`did you mean '${near}'?`), e.message)
  return true
}

test('every method taking options refuses an unknown key, naming the nearest', T, async () => {
  const hub = await Hub.connect({ mcpServers: { demo: { command: h.DEMO, allow_tools: ['echo'] } } })
  try {
    const started = Date.now()
    await assert.rejects(hub.callTool('mcp_demo_echo', { text: 'x' }, { timeoutMS: 5 }), (e) => names(e, 'timeoutMS', 'timeoutMs'))
    assert.ok(Date.now() - started < 5000, 'refused at once, not after a timeout')
    await assert.rejects(hub.callTool('mcp_demo_echo', {}, { onProgres: () => {} }), (e) => names(e, 'onProgres', 'onProgress'))
    await assert.rejects(hub.callTool('mcp_demo_echo', {}, { maxTotalTimeout: 5 }), (e) => names(e, 'maxTotalTimeout', 'maxTotalTimeoutMs'))
    await assert.rejects(hub.callTool('mcp_demo_echo', {}, { signl: undefined, sinal: new AbortController().signal }), (e) => names(e, 'sinal', 'signal'))
    await assert.rejects(hub.callToolAsTask('mcp_demo_echo', {}, { taskTTLMs: 5 }), (e) => names(e, 'taskTTLMs', 'taskTtlMs'))
    await assert.rejects(hub.taskResult('demo', 't', { timeOutMs: 5 }), (e) => names(e, 'timeOutMs', 'timeoutMs'))
    for (const call of [
      () => hub.listResources({ sever: 'demo' }),
      () => hub.listResourceTemplates({ sever: 'demo' }),
      () => hub.readResource('demo://x', { sever: 'demo' }),
      () => hub.listPrompts({ sever: 'demo' }),
      () => hub.getPrompt('greet', {}, { sever: 'demo' }),
      () => hub.subscribe('demo://x', { sever: 'demo' }),
      () => hub.unsubscribe('demo://x', { sever: 'demo' }),
    ]) {
      await assert.rejects(call(), (e) => names(e, 'sever', 'server'))
    }
    assert.throws(() => hub.policy({ maxToolCall: 1 }), (e) => names(e, 'maxToolCall', 'maxToolCalls'))
    assert.throws(() => hub.policy({ auditpath: '/tmp/x' }), (e) => names(e, 'auditpath', 'auditPath'))
    // Known keys, and unknown ones left undefined or null, still work.
    const policy = hub.policy({ maxToolCalls: 5, callTimeoutMs: 5000, auditPath: undefined, onAudit: () => {}, nope: undefined })
    const ac = new AbortController()
    const r = await hub.callTool('mcp_demo_echo', { text: 'all' }, {
      timeoutMs: 5000,
      maxTotalTimeoutMs: 10000,
      taskTtlMs: 60000,
      signal: ac.signal,
      onProgress: () => {},
      policy,
      task: false,
      traceparent: undefined,
      tracestate: undefined,
      timeoutMS: undefined,
      other: null,
    })
    assert.equal(r.content[0].text, 'all')
    assert.ok(Array.isArray(await hub.listResources({ server: undefined, x: undefined })))
  } finally {
    await hub.close()
  }
})

test('Hub.connect refuses an unknown option and keeps every known one', T, async () => {
  await assert.rejects(Hub.connect(h.demoConfig(), { startupTimeoutMS: 100 }), (e) => names(e, 'startupTimeoutMS', 'startupTimeoutMs'))
  await assert.rejects(Hub.connect(h.demoConfig(), { onElicitaton: () => ({ action: 'decline' }) }), (e) => names(e, 'onElicitaton', 'onElicitation'))
  await assert.rejects(Hub.connect(h.demoConfig(), { root: [h.tempDir()] }), (e) => names(e, 'root', 'roots'))
  const events = []
  const hub = await Hub.connect(h.demoConfig(), {
    authorize: () => 'http://localhost/cb',
    onEvent: (e) => events.push(e),
    startupTimeoutMs: 30000,
    onElicitation: () => ({ action: 'decline' }),
    onSampling: () => ({ role: 'assistant', content: { type: 'text', text: 'x' }, model: 'm' }),
    roots: [h.tempDir()],
    unused: undefined,
  })
  try {
    assert.equal(hub.roots.length, 1)
    await h.waitFor(() => events.some((e) => e.type === 'server_state'), 10_000, 'the onEvent listener')
  } finally {
    await hub.close()
  }
})

test('Sessions refuses an unknown option, and names the nearest parameter of a verb', () => {
  assert.throws(() => new Sessions({ hots: () => 'x' }), (e) => names(e, 'hots', 'host'))
  assert.throws(() => new Sessions({ confg: {} }), (e) => names(e, 'confg', 'config'))
})

test('a session verb names the nearest parameter of an unknown one', T, async () => {
  const sessions = new Sessions({ config: { mcpServers: {} } })
  const e = await h.rejectsWith(
    sessions.begin({ skill: 'review-plan', input: 'x', working_dir: h.tempDir(), maxTurnz: 1 }),
    'INVALID_INPUT',
    McpmuxError,
  )
  assert.match(e.message, /maxTurnz/)
  assert.match(e.message, /did you mean 'max_turns'\?/)
})
