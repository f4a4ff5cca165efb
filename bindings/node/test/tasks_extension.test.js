'use strict'
// The 2026-07-28 tasks extension from Node, against the rmcp tasks server
// (tests/servers/rmcp-tasks, built by tests/setup.sh): a call the server
// makes a task is followed to its result, its input is answered by
// onElicitation (a Promise), and the handle API works on this revision.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')

const h = require('./helpers.js')
const { Hub, McpmuxError } = require('mcpmux')

const T = { timeout: 60_000 }
const TARGET = process.env.CARGO_TARGET_DIR || path.join(h.ROOT, 'target')
const RMCP = path.join(TARGET, 'debug', 'rmcp-tasks-server')

function rmcp() {
  assert.ok(fs.existsSync(RMCP), `${RMCP} missing: run bash tests/setup.sh`)
  return { command: RMCP, protocol_version: '2026-07-28' }
}

const text = (r) => r.content[0].text

test('a task is followed to its result and its input answered', T, async () => {
  const asked = []
  const hub = await Hub.connect(
    { mcpServers: { tasks: rmcp() } },
    {
      onElicitation: async (params) => {
        asked.push(params.message)
        return { action: 'accept', content: { name: 'Ada' } }
      },
    },
  )
  try {
    const [status] = await hub.servers()
    assert.equal(status.protocol_version, '2026-07-28')
    assert.ok(status.capabilities.extensions['io.modelcontextprotocol/tasks'])
    const r = await hub.callTool('mcp_tasks_slow_sum', { a: 2, b: 40, ms: 200 })
    assert.equal(text(r), 'sum: 42')
    assert.deepEqual(r.structuredContent, { sum: 42 })
    assert.equal(text(await hub.callTool('mcp_tasks_ask_name')), 'Hello, Ada')
    assert.deepEqual(asked, ['What is your name?'])
  } finally {
    await hub.close()
  }
})

test('the handle API works on this revision and names what it lacks', T, async () => {
  const hub = await Hub.connect({ mcpServers: { tasks: rmcp() } })
  try {
    const handle = await hub.callToolAsTask('mcp_tasks_slow_sum', { a: 1, b: 2, ms: 100 })
    assert.equal(handle.server, 'tasks')
    assert.equal((await hub.task('tasks', handle.task_id)).status.length > 0, true)
    const result = await hub.taskResult('tasks', handle.task_id)
    assert.equal(text(result), 'sum: 3')
    await assert.rejects(hub.listTasks('tasks'), (e) => e instanceof McpmuxError && e.code === 'INVALID_INPUT' && /tasks\/list/.test(e.message))
    await assert.rejects(
      hub.callTool('mcp_tasks_never_ends', {}, { timeoutMs: 1000, maxTotalTimeoutMs: 1000 }),
      (e) => e instanceof McpmuxError && e.code === 'TIMEOUT',
    )
    await assert.rejects(hub.callTool('mcp_tasks_fails'), (e) => e.code === 'SERVER_ERROR' && /failed on purpose/.test(e.message))
  } finally {
    await hub.close()
  }
})
