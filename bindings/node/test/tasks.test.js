'use strict'
// MCP tasks against server-everything over stdio: its simulate-research-query
// requires a task, so a plain callTool runs it as one; the handle API
// (callToolAsTask, task, taskResult, cancelTask, listTasks); task_status
// events. No sleeps: the only timers catch hangs.

const test = require('node:test')
const assert = require('node:assert/strict')

const { Hub, McpmuxError } = require('mcpmux')
const h = require('./helpers.js')

const T = { timeout: 180_000 }
/** Only catches hangs: the research takes about four seconds. */
const HANG_MS = 120_000
const RESEARCH = 'mcp_everything_simulate-research-query'

/** `promise`, or a rejection naming `what` if it hangs. */
function bounded(promise, what) {
  let timer
  const hang = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing within ${HANG_MS} ms`)), HANG_MS)
  })
  return Promise.race([promise, hang]).finally(() => clearTimeout(timer))
}

test('a tool that requires a task runs through callTool, with task_status events', T, async () => {
  const hub = await Hub.connect({ mcpServers: { everything: h.everything() } })
  try {
    const completed = new Promise((resolve) => {
      hub.on('event', (event) => {
        if (event.type === 'task_status' && event.status === 'completed') resolve(event)
      })
    })
    assert.match(JSON.stringify(await hub.toolsFor('anthropic')), /simulate-research-query/)
    const result = await bounded(hub.callTool(RESEARCH, { topic: 'node' }), 'callTool')
    assert.ok(!result.isError, JSON.stringify(result))
    assert.match(result.content[0].text, /Research Report: node/)
    const event = await bounded(completed, 'task_status completed')
    assert.equal(event.server, 'everything')
    assert.equal(typeof event.task_id, 'string')
    // task: true on a tool that forbids tasks is a plain call.
    const echo = await hub.callTool('mcp_everything_echo', { message: 'm' }, { task: true })
    assert.equal(echo.content[0].text, 'Echo: m')
    await assert.rejects(hub.callTool(RESEARCH, { topic: 'x' }, { task: 'yes' }), (err) => {
      assert.ok(err instanceof McpmuxError)
      assert.equal(err.code, 'INVALID_INPUT')
      return true
    })
  } finally {
    await hub.close()
  }
})

test('the task handle API', T, async () => {
  const hub = await Hub.connect({ mcpServers: { everything: h.everything() } })
  try {
    const handle = await hub.callToolAsTask(RESEARCH, { topic: 'handles' })
    assert.equal(handle.server, 'everything')
    assert.equal(typeof handle.task_id, 'string')
    const status = await hub.task('everything', handle.task_id)
    assert.equal(status.task_id, handle.task_id)
    assert.ok(['working', 'completed'].includes(status.status), JSON.stringify(status))
    const listed = await hub.listTasks('everything')
    assert.ok(listed.some((t) => t.task_id === handle.task_id), JSON.stringify(listed))
    const result = await bounded(hub.taskResult('everything', handle.task_id), 'taskResult')
    assert.match(result.content[0].text, /Research Report: handles/)

    const other = await hub.callToolAsTask(RESEARCH, { topic: 'stop' })
    const cancelled = await hub.cancelTask('everything', other.task_id)
    assert.equal(cancelled.status, 'cancelled')
    await assert.rejects(hub.taskResult('everything', other.task_id), (err) => {
      assert.equal(err.code, 'CANCELLED')
      return true
    })
    await assert.rejects(hub.callToolAsTask('mcp_everything_echo', { message: 'x' }), (err) => {
      assert.equal(err.code, 'INVALID_INPUT')
      return true
    })
  } finally {
    await hub.close()
  }
})
