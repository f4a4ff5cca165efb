'use strict'
// Review sessions from Node: begin -> wait -> reply -> wait -> end with a
// host reviewer (a JS function) that calls the demo server's echo tool and
// then answers with a fenced JSON verdict; the error codes of the verbs; a
// host that throws; the event loop stays free while the host is awaited.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')

const h = require('./helpers.js')
const { Sessions, McpmuxError } = require('mcpmux')

const CHANGES =
  'I checked the tool.\n\n```json\n' +
  JSON.stringify({ verdict: 'REQUEST_CHANGES', blocks: [{ title: 'Missing tests', body: 'Step 2 has no test.' }] }) +
  '\n```\n'
const APPROVE = 'Looks good now.\n\n```json\n{"verdict": "APPROVE", "blocks": []}\n```\n'
const planInput = (request) => `---\nUSER_REQUEST: ${request}\n---\n## PLAN\n1. Write hello.js\n2. Ship it\n`

function sessionConfig() {
  return {
    mcpServers: { demo: { command: h.DEMO, allow_tools: ['echo'] } },
    session: { max_turns: 4 },
  }
}

async function waitDone(sessions, sessionDir) {
  const deadline = Date.now() + 60_000
  for (;;) {
    const status = await sessions.wait({ session_dir: sessionDir, max_wait_seconds: 2 })
    if (status.status !== 'running' || Date.now() > deadline) return status
  }
}

async function rejectsWith(promise, code) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof McpmuxError, `an McpmuxError, got ${e}`)
    assert.equal(e.code, code, e.message)
    return true
  })
}

test('begin, wait, reply, wait, end with a host reviewer calling a tool', { timeout: 120_000 }, async () => {
  const work = h.tempDir()
  const requests = []
  let ticks = 0
  const ticker = setInterval(() => ticks++, 5)
  const host = async (request) => {
    requests.push(request)
    // Await something real: the event loop keeps running meanwhile.
    await new Promise((r) => setTimeout(r, 30))
    if (requests.length === 1) {
      return {
        text: 'Let me check.',
        tool_calls: [{ id: 'call-1', name: 'mcp_demo_echo', arguments: { text: 'ping from node' } }],
      }
    }
    return requests.length === 2 ? CHANGES : { text: APPROVE }
  }
  const sessions = new Sessions({ config: sessionConfig(), host })
  try {
    const begun = await sessions.begin({ skill: 'review-plan', reviewer: 'host', input: planInput('Add a greeting'), working_dir: work })
    assert.equal(begun.round, 1)
    assert.equal(begun.status, 'running')
    const dir = begun.session_dir
    assert.equal(path.dirname(dir), path.join(work, '.mcpmux', 'sessions'))
    assert.match(path.basename(dir), /^review-plan-\d{8}-\d{3}$/)

    const first = await waitDone(sessions, dir)
    assert.equal(first.status, 'completed', JSON.stringify(first))
    assert.equal(first.review.verdict, 'REQUEST_CHANGES')
    assert.deepEqual(first.review.blocks.map((b) => b.title), ['Missing tests'])
    assert.equal(first.next, 'respond')
    assert.equal(first.next_reason, 'open_issues')
    assert.ok(Array.isArray(first.activities))

    assert.equal(requests.length, 2)
    assert.ok(requests[0].tools.some((t) => t.name === 'mcp_demo_echo'))
    const results = requests[1].messages.flatMap((m) => m.tool_results || [])
    assert.deepEqual(results.map((r) => r.call_id), ['call-1'])
    assert.match(results[0].content, /ping from node/)
    assert.equal(results[0].is_error, false)

    const replied = await sessions.reply({ session_dir: dir, input: '---\nRESPONSE: Added a test for step 2.\n---\n' })
    assert.equal(replied.status, 'started')
    assert.equal(replied.round, 2)
    assert.equal(replied.session_dir, dir)

    const second = await waitDone(sessions, dir)
    assert.equal(second.status, 'completed')
    assert.equal(second.round, 2)
    assert.equal(second.review.verdict, 'APPROVE')
    assert.equal(second.next, 'done')
    assert.equal(second.next_reason, 'approved')

    const ended = await sessions.end({ session_dir: dir })
    assert.equal(ended.status, 'ended')
    assert.equal(ended.finalized, true)
    assert.equal(ended.verdict, 'APPROVE')

    for (const name of ['session.json', 'thread.json', 'round-001/input.md', 'round-001/result.json', 'round-002/input.md', 'meta.json']) {
      assert.ok(fs.existsSync(path.join(dir, name)), name)
    }
    assert.match(fs.readFileSync(path.join(dir, 'thread.json'), 'utf8'), /ping from node/)
    assert.ok(ticks > 10, `the event loop ran while the session did (${ticks} ticks)`)
  } finally {
    clearInterval(ticker)
  }
})

test('errors carry the session codes', { timeout: 60_000 }, async () => {
  const work = h.tempDir()
  const sessions = new Sessions({ host: () => APPROVE })
  await rejectsWith(sessions.begin({ skill: 'no-such-skill', reviewer: 'host', input: 'x', working_dir: work }), 'UNKNOWN_SKILL')
  await assert.rejects(
    sessions.begin({ skill: 'review-plan', reviewer: 'host', input: '---\nUSER_REQUEST: x\n---\n', working_dir: work }),
    (e) => e.code === 'INVALID_INPUT' && /PLAN/.test(e.message),
  )
  await rejectsWith(sessions.wait({ session_dir: path.join(work, 'not-a-session'), max_wait_seconds: 1 }), 'INVALID_SESSION')
  await rejectsWith(new Sessions().begin({ skill: 'review-plan', reviewer: 'host', input: planInput('x'), working_dir: work }), 'REVIEWER_NOT_FOUND')
  await rejectsWith(sessions.wait('not an object'), 'INVALID_INPUT')
  assert.throws(() => new Sessions({ config: 'this = = is not a config\n' }), (e) => e instanceof McpmuxError && e.code === 'CONFIG_INVALID')
  assert.throws(() => new Sessions({ host: 42 }), (e) => e instanceof McpmuxError && e.code === 'INVALID_INPUT')
})

test('reply while a round runs is ROUND_STILL_RUNNING', { timeout: 60_000 }, async () => {
  const work = h.tempDir()
  let release
  const released = new Promise((r) => (release = r))
  let entered
  const inside = new Promise((r) => (entered = r))
  const sessions = new Sessions({
    host: async () => {
      entered()
      await released
      return APPROVE
    },
  })
  // A round in the background does not keep Node alive by itself (a
  // pending wait() does); this test awaits a bare promise meanwhile.
  const keepAlive = setInterval(() => {}, 1000)
  const begun = await sessions.begin({ skill: 'review-plan', reviewer: 'host', input: planInput('slow'), working_dir: work })
  await inside
  const running = await sessions.wait({ session_dir: begun.session_dir, max_wait_seconds: 1 })
  assert.equal(running.status, 'running')
  assert.equal(running.next, 'running')
  await rejectsWith(sessions.reply({ session_dir: begun.session_dir, input: '---\nRESPONSE: early\n---\n' }), 'ROUND_STILL_RUNNING')
  release()
  const done = await waitDone(sessions, begun.session_dir)
  clearInterval(keepAlive)
  assert.equal(done.review.verdict, 'APPROVE')
})

test('a host reviewer that throws fails the round with its message', { timeout: 60_000 }, async () => {
  const work = h.tempDir()
  const cases = [
    [
      () => {
        throw new Error('the host model exploded')
      },
      /the host model exploded/,
    ],
    [async () => Promise.reject(new Error('the host model exploded')), /the host model exploded/],
    [() => 42, /must return an object \{text, tool_calls\?\} or a string, got number/],
  ]
  for (const [host, message] of cases) {
    const sessions = new Sessions({ host })
    const begun = await sessions.begin({ skill: 'review-plan', reviewer: 'host', input: planInput('f'), working_dir: work })
    const status = await waitDone(sessions, begun.session_dir)
    assert.equal(status.status, 'failed', JSON.stringify(status))
    assert.match(JSON.stringify(status), message)
    assert.equal(status.next, 'stopped')
  }
})

test('a Sessions with a host reviewer can be garbage collected', { timeout: 60_000 }, () => {
  // The threadsafe function holds the wrapper's host function; that function
  // must not hold the native context, or neither could ever be collected.
  const { spawnSync } = require('node:child_process')
  const script = `
    const { Sessions } = require(${JSON.stringify(h.PKG_DIR)})
    const registry = new FinalizationRegistry((what) => console.log('collected ' + what))
    ;(() => {
      const s = new Sessions({ host: () => 'x' })
      registry.register(s, 'wrapper')
      registry.register(s._native, 'native')
    })()
    ;(async () => {
      for (let i = 0; i < 50; i++) {
        global.gc()
        await new Promise((r) => setTimeout(r, 20))
      }
    })()
  `
  const r = spawnSync(process.execPath, ['--expose-gc', '-e', script], { encoding: 'utf8', timeout: 30_000 })
  assert.equal(r.status, 0, r.stderr)
  assert.match(r.stdout, /collected wrapper/)
  assert.match(r.stdout, /collected native/)
})
