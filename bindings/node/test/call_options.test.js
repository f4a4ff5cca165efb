'use strict'
// The call-options contract from Node: core's contract (read from core
// itself, native.contract(), generated from its Rust types) names every
// call option, policy option and search field; each is a property of the
// matching type in index.d.ts (read with the TypeScript compiler) — the
// drift test. Then the rows of the drift table end to end: core's timeout
// cap on every duration option, maxTotalTimeoutMs ending a call that
// progress keeps alive, taskTtlMs reaching the server, a server error's
// data, search limit 0, and camelCase keys for sessions.begin.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')

const h = require('./helpers.js')
const native = require('../native.js')
const { Hub, Sessions, McpmuxError } = require('mcpmux')

const T = { timeout: 120_000 }
const PKG_DIR = path.resolve(__dirname, '..')

function contract() {
  const c = JSON.parse(native.contract())
  assert.deepEqual(Object.keys(c.names).sort(), ['call_options', 'policy_options', 'search'])
  return c
}

/** Property names of interface `name` in index.d.ts. */
function interfaceProps(name) {
  const ts = require(require.resolve('typescript', { paths: [PKG_DIR] }))
  const file = path.join(PKG_DIR, 'index.d.ts')
  const src = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true)
  let props
  src.forEachChild((node) => {
    if (ts.isInterfaceDeclaration(node) && node.name.text === name) {
      props = node.members.filter((m) => m.name).map((m) => m.name.getText(src))
    }
  })
  assert.ok(props, `interface ${name} is in index.d.ts`)
  return props
}

/** The parameter names of method `method` of interface/class `owner` in index.d.ts. */
function methodParams(owner, method) {
  const ts = require(require.resolve('typescript', { paths: [PKG_DIR] }))
  const file = path.join(PKG_DIR, 'index.d.ts')
  const src = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true)
  let params
  src.forEachChild((node) => {
    if ((ts.isInterfaceDeclaration(node) || ts.isClassDeclaration(node)) && node.name && node.name.text === owner) {
      for (const m of node.members) {
        if (m.name && m.name.getText(src) === method && m.parameters) params = m.parameters.map((p) => p.name.getText(src))
      }
    }
  })
  assert.ok(params, `${owner}.${method} is in index.d.ts`)
  return params
}

test('index.d.ts types every option core names', () => {
  const c = contract()
  const missing = []
  const call = interfaceProps('CallOptions')
  for (const n of c.names.call_options) if (!call.includes(n.node)) missing.push(`CallOptions.${n.node}`)
  const policy = interfaceProps('PolicyOptions')
  for (const n of c.names.policy_options) if (!policy.includes(n.node)) missing.push(`PolicyOptions.${n.node}`)
  const search = methodParams('Hub', 'searchTools')
  for (const n of c.names.search) if (!search.includes(n.node)) missing.push(`searchTools(${n.node})`)
  assert.deepEqual(missing, [], `core has these, index.d.ts does not: ${missing.join(', ')}`)
  assert.ok(call.includes('maxTotalTimeoutMs') && call.includes('taskTtlMs'), call.join(', '))
})

test('every duration option has core\'s cap and names itself', T, async () => {
  const cap = contract().max_timeout_seconds * 1000
  const hub = await Hub.connect(h.demoConfig())
  try {
    for (const key of ['timeoutMs', 'maxTotalTimeoutMs', 'taskTtlMs']) {
      const e = await h.rejectsWith(hub.callTool('mcp_demo_echo', { text: 'x' }, { [key]: cap * 2 }), 'INVALID_INPUT', McpmuxError)
      assert.match(e.message, new RegExp(`${key}.*at most 1000000000000`), e.message)
      await h.rejectsWith(hub.callTool('mcp_demo_echo', { text: 'x' }, { [key]: 0 }), 'INVALID_INPUT', McpmuxError)
    }
    const e = await h.rejectsWith(hub.callToolAsTask('mcp_demo_echo', {}, { taskTtlMs: cap * 2 }), 'INVALID_INPUT', McpmuxError)
    assert.match(e.message, /taskTtlMs/)
    const r = await hub.callTool('mcp_demo_echo', { text: 'capped' }, { timeoutMs: cap, maxTotalTimeoutMs: cap })
    assert.equal(r.content[0].text, 'capped')
  } finally {
    await hub.close()
  }
})

test('maxTotalTimeoutMs ends a call that progress keeps alive', T, async () => {
  const hub = await Hub.connect(h.demoConfig())
  try {
    // 300 steps over 30 s: each step resets timeoutMs; only the total bound ends it early.
    await h.rejectsWith(
      hub.callTool('mcp_demo_slow', { seconds: 30, steps: 300 }, { timeoutMs: 20_000, maxTotalTimeoutMs: 500, onProgress: () => {} }),
      'TIMEOUT',
      McpmuxError,
    )
  } finally {
    await hub.close()
  }
})

test('taskTtlMs reaches the server', T, async () => {
  const entry = h.fault('task_server.py')
  entry.args.push('hostile')
  const hub = await Hub.connect({ mcpServers: { tasks: entry } })
  try {
    const handle = await hub.callToolAsTask('mcp_tasks_needs_task', {}, { taskTtlMs: 7500 })
    const task = await hub.task(handle.server, handle.task_id)
    assert.equal(task.ttl_ms, 7500)
    const other = await hub.callToolAsTask('mcp_tasks_needs_task', {})
    assert.equal((await hub.task(other.server, other.task_id)).ttl_ms, 60000)
  } finally {
    await hub.close()
  }
})

test('a server error carries its data; search limit 0 finds nothing', T, async () => {
  // Inherited by the server (a value written in the config is a secret, redacted).
  process.env.LEAKY_SECRET = 'visible-token'
  const hub = await Hub.connect(h.demoConfig({ leaky: h.fault('leaky.py') }))
  try {
    const e = await h.rejectsWith(hub.callTool('mcp_leaky_fail', {}), 'SERVER_ERROR', McpmuxError)
    assert.deepEqual(e.data, { token: 'visible-token' })
    assert.deepEqual(await hub.searchTools('echo', 0), [])
    assert.deepEqual((await hub.searchTools('echo', 1)).map((t) => t.name), ['mcp_demo_echo'])
    // No limit: core's default.
    const names = (tools) => tools.map((t) => t.name)
    const many = names(await hub.searchTools('qqzzxxww', 1000))
    assert.ok(many.length > contract().search_default_limit, many.join(', '))
    assert.deepEqual(names(await hub.searchTools('qqzzxxww')), many.slice(0, contract().search_default_limit))
  } finally {
    delete process.env.LEAKY_SECRET
    await hub.close()
  }
})

test('sessions.begin takes camelCase keys derived from core, snake_case still works', T, async () => {
  const work = h.tempDir()
  const sessions = new Sessions({ host: () => ({ text: 'no review' }) })
  const PLAN = '---\nUSER_REQUEST: camel\n---\n## PLAN\n1. x\n'
  const begun = await sessions.begin({
    skill: 'review-plan',
    reviewer: 'host',
    input: PLAN,
    workingDir: work,
    maxTurns: 2,
    maxToolCalls: 3,
    callTimeoutSeconds: 4.5,
    maxOutputBytes: 500,
    scope: 'dev',
  })
  const { settings } = JSON.parse(fs.readFileSync(path.join(begun.session_dir, 'session.json'), 'utf8'))
  assert.deepEqual(
    [settings.max_turns, settings.max_tool_calls, settings.call_timeout_seconds, settings.max_output_bytes, settings.scope],
    [2, 3, 4.5, 500, 'dev'],
  )
  await sessions.wait({ sessionDir: begun.session_dir, maxWaitSeconds: 1 })
  await sessions.end({ sessionDir: begun.session_dir })
  // Both spellings of one field: refused, naming it.
  await h.rejectsWith(
    sessions.begin({ skill: 'review-plan', input: PLAN, working_dir: work, max_turns: 1, maxTurns: 2 }),
    'INVALID_INPUT',
    McpmuxError,
  )
  // An unknown camelCase key is still an unknown key (named by core).
  const e = await h.rejectsWith(sessions.begin({ skill: 'review-plan', input: PLAN, working_dir: work, maxTurnz: 1 }), 'INVALID_INPUT', McpmuxError)
  assert.match(e.message, /maxTurnz/)
})

test('validateOutput: a result breaking its outputSchema is OUTPUT_INVALID unless warn or off', T, async () => {
  // The demo server's `add` answers {sum: "5"} against its outputSchema.
  const hub = await Hub.connect({ mcpServers: { demo: { command: h.demoConfig().mcpServers.demo.command, env: { DEMO_ADD_OUTPUT: 'wrong_type' } } } })
  try {
    const e = await h.rejectsWith(hub.callTool('mcp_demo_add', { a: 2, b: 3 }), 'OUTPUT_INVALID', McpmuxError)
    assert.match(e.message, /tool 'add'.*'\/sum'/, e.message)
    for (const validateOutput of ['warn', 'off']) {
      const r = await hub.callTool('mcp_demo_add', { a: 2, b: 3 }, { validateOutput })
      assert.deepEqual(r.structuredContent, { sum: '5' })
    }
    const bad = await h.rejectsWith(hub.callTool('mcp_demo_add', { a: 2, b: 3 }, { validateOutput: 'loud' }), 'INVALID_INPUT', McpmuxError)
    assert.match(bad.message, /validateOutput/)
  } finally {
    await hub.close()
  }
})
