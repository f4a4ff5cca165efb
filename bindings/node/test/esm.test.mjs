// `import { Hub } from 'mcpmux'` works, and gives the same objects as require('mcpmux').
import test from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'

import mcpmux, { Hub, McpmuxError, ERROR_CODES, Sessions, version } from 'mcpmux'

const require = createRequire(import.meta.url)
const h = require('./helpers.js')

test('ESM named and default exports are the CommonJS ones', () => {
  const cjs = require('mcpmux')
  assert.equal(Hub, cjs.Hub)
  assert.equal(Sessions, cjs.Sessions)
  assert.equal(McpmuxError, cjs.McpmuxError)
  assert.equal(ERROR_CODES, cjs.ERROR_CODES)
  assert.equal(version, cjs.version)
  assert.equal(mcpmux, cjs)
})

test('connect, list and call from an ES module', { timeout: 60_000 }, async () => {
  const hub = await Hub.connect(h.demoConfig())
  try {
    assert.ok((await hub.listTools()).some((t) => t.name === 'mcp_demo_echo'))
    const result = await hub.callTool('mcp_demo_echo', { text: 'from esm' })
    assert.equal(result.content[0].text, 'from esm')
    await assert.rejects(hub.callTool('nope'), (e) => e instanceof McpmuxError && e.code === 'UNKNOWN_TOOL')
  } finally {
    await hub.close()
  }
})
