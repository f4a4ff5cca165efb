'use strict'
// Cancellation with AbortSignal: the promise rejects at once with an
// McpmuxError CANCELLED (cause: the signal's reason) and the server is sent
// notifications/cancelled (checked with tests/servers/hang.py, which logs
// every cancellation it receives to $HANG_CANCEL_LOG).

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')

const { Hub, McpmuxError } = require('mcpmux')
const h = require('./helpers.js')

const T = { timeout: 60_000 }
const rejects = (promise, code) => h.rejectsWith(promise, code, McpmuxError)

function cancelLog() {
  const file = path.join(h.tempDir(), 'cancelled.log')
  const lines = () => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean) : [])
  return { file, lines }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

test('abort: rejects with CANCELLED and the server gets notifications/cancelled', T, async () => {
  const log = cancelLog()
  const hub = await Hub.connect({ mcpServers: { hang: h.fault('hang.py', { HANG_CANCEL_LOG: log.file }) } })
  try {
    const controller = new AbortController()
    // hang.py never answers, and the call's own timeout is an hour: only
    // the abort can end it (a missed abort fails the test at its guard).
    let settled = false
    const call = hub.callTool('mcp_hang_wait_forever', {}, { signal: controller.signal, timeoutMs: 3_600_000 })
    call.then(
      () => (settled = true),
      () => (settled = true),
    )
    await sleep(200)
    assert.deepEqual(log.lines(), [])
    assert.equal(settled, false, 'pending until aborted')
    const reason = new Error('user pressed stop')
    controller.abort(reason)
    const e = await rejects(call, 'CANCELLED')
    assert.equal(e.cause, reason)
    assert.match(e.message, /mcp_hang_wait_forever/)
    const lines = await h.waitFor(() => (log.lines().length > 0 ? log.lines() : null), 5000, 'the cancellation')
    assert.equal(lines.length, 1)
    assert.match(lines[0], /^\d+$/, 'the request id')

    // The connection is still fine: a second call can be cancelled as well.
    const second = new AbortController()
    const call2 = hub.callTool('mcp_hang_wait_forever', {}, { signal: second.signal })
    await sleep(50)
    second.abort()
    const e2 = await rejects(call2, 'CANCELLED')
    assert.equal(e2.cause.name, 'AbortError')
    await h.waitFor(() => log.lines().length === 2, 5000, 'the second cancellation')
    assert.notEqual(log.lines()[1], log.lines()[0], 'each request has its own id')
  } finally {
    await hub.close()
  }
})

test('abort many calls in flight; each is cancelled once', T, async () => {
  const log = cancelLog()
  const hub = await Hub.connect({ mcpServers: { hang: h.fault('hang.py', { HANG_CANCEL_LOG: log.file }) } })
  try {
    const controller = new AbortController()
    const calls = Array.from({ length: 50 }, () =>
      hub.callTool('mcp_hang_wait_forever', {}, { signal: controller.signal }).then(
        () => null,
        (err) => err,
      ),
    )
    await sleep(200)
    controller.abort()
    for (const call of calls) await rejects(Promise.reject(await call), 'CANCELLED')
    await h.waitFor(() => log.lines().length === 50, 10_000, '50 cancellations')
    assert.equal(new Set(log.lines()).size, 50)
  } finally {
    await hub.close()
  }
})

test('an already aborted signal rejects without sending the call', T, async () => {
  const log = cancelLog()
  const hub = await Hub.connect({ mcpServers: { hang: h.fault('hang.py', { HANG_CANCEL_LOG: log.file }) } })
  try {
    const e = await rejects(
      hub.callTool('mcp_hang_wait_forever', {}, { signal: AbortSignal.abort('too late') }),
      'CANCELLED',
    )
    assert.equal(e.cause, 'too late')
    await sleep(300)
    assert.deepEqual(log.lines(), [], 'nothing was sent, so nothing is cancelled')
  } finally {
    await hub.close()
  }
})

test('AbortSignal.timeout cancels; a signal that fires after completion changes nothing', T, async () => {
  const log = cancelLog()
  const hub = await Hub.connect(h.demoConfig({ hang: h.fault('hang.py', { HANG_CANCEL_LOG: log.file }) }))
  try {
    const e = await rejects(
      hub.callTool('mcp_hang_wait_forever', {}, { signal: AbortSignal.timeout(150) }),
      'CANCELLED',
    )
    assert.equal(e.cause.name, 'TimeoutError')
    await h.waitFor(() => log.lines().length === 1, 5000, 'the cancellation')

    const controller = new AbortController()
    const result = await hub.callTool('mcp_demo_echo', { text: 'done' }, { signal: controller.signal })
    assert.equal(result.content[0].text, 'done')
    controller.abort() // after completion: no effect, no unhandled rejection
    await sleep(50)
  } finally {
    await hub.close()
  }
})

test('abort while progress arrives; the connection goes on', T, async () => {
  const events = cancelLog()
  const hub = await Hub.connect({ mcpServers: { demo: { command: h.DEMO, env: { DEMO_EVENT_LOG: events.file } } } })
  try {
    const controller = new AbortController()
    const progress = []
    const call = hub.callTool(
      'mcp_demo_slow',
      { seconds: 3600, steps: 3600 },
      { signal: controller.signal, onProgress: (p) => progress.push(p) },
    )
    await h.waitFor(() => progress.length > 0, 5000, 'the first progress notification')
    controller.abort()
    await rejects(call, 'CANCELLED')
    // The server stopped the cancelled call, and the next call is answered
    // although the cancelled one would have run for an hour.
    await h.waitFor(() => events.lines().some((l) => l.startsWith('cancelled ')), 10_000, 'the cancellation')
    assert.equal((await hub.callTool('mcp_demo_echo', { text: 'next' })).content[0].text, 'next')
  } finally {
    await hub.close()
  }
})
