// startupTimeoutMs: connect resolves with what is up; a server hung in its
// own initialize shows as `starting`.
'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { Hub, McpmuxError } = require('..')
const { DEMO, PYTHON, FAULTS } = require('./helpers')

const T = { timeout: 60_000 }

function hung() {
  return {
    mcpServers: {
      demo: { command: DEMO },
      // Longer than any wait here: only a bounded startup resolves in time.
      stuck: { command: PYTHON, args: [path.join(FAULTS, 'hang_in_init.py')], timeout_seconds: 600 },
    },
  }
}

test('connect with startupTimeoutMs resolves with what is up', T, async () => {
  const hub = await Hub.connect(hung(), { startupTimeoutMs: 1000 })
  try {
    const states = Object.fromEntries((await hub.servers()).map((s) => [s.name, s.state]))
    assert.deepEqual(states, { demo: 'connected', stuck: 'starting' })
    const result = await hub.callTool('mcp_demo_echo', { text: 'up' })
    assert.equal(result.content[0].text, 'up')
  } finally {
    await hub.close()
  }
})

test('a bad startupTimeoutMs is INVALID_INPUT', T, async () => {
  await assert.rejects(Hub.connect(hung(), { startupTimeoutMs: -5 }), (e) => e instanceof McpmuxError && e.code === 'INVALID_INPUT' && /startupTimeoutMs/.test(e.message))
})
