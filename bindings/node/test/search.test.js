'use strict'
// hub.searchTools against the demo server: the tool a query is about ranks
// first, the limit holds, and bad arguments are INVALID_INPUT.

const test = require('node:test')
const assert = require('node:assert/strict')

const { Hub, McpmuxError } = require('mcpmux')
const h = require('./helpers.js')

const T = { timeout: 120_000 }

test('searchTools ranks the tool the query is about first', T, async () => {
  const hub = await Hub.connect(h.demoConfig())
  try {
    const found = await hub.searchTools('add two numbers')
    assert.equal(found[0].name, 'mcp_demo_add', JSON.stringify(found.map((t) => t.name)))
    assert.ok(found[0].input_schema, JSON.stringify(found[0]))
    assert.equal((await hub.searchTools('echo', 1)).length, 1)
    // Nothing matches: still an answer while there are tools.
    assert.ok((await hub.searchTools('kubernetes cluster autoscaler')).length > 0)
    await h.rejectsWith(hub.searchTools(42), 'INVALID_INPUT', McpmuxError)
    await h.rejectsWith(hub.searchTools('echo', -1), 'INVALID_INPUT', McpmuxError)
  } finally {
    await hub.close()
  }
})
