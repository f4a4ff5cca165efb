'use strict'
// The framework adapters without their frameworks (Node 20, CommonJS): the
// subpath exports load, HubMCPServer works on its own, mcpmux/ai-sdk names
// the missing `ai` package, and its tools run with an injected `ai`. The
// whole agent turns with the real frameworks are in test/frameworks/
// (Node 22, run by ci.sh).

const test = require('node:test')
const assert = require('node:assert/strict')

const { Hub, McpmuxError } = require('mcpmux')
const { HubMCPServer } = require('mcpmux/openai-agents')
const h = require('./helpers.js')

const T = { timeout: 60_000 }

test('mcpmux/openai-agents: CommonJS and ESM give the same class', T, async () => {
  const esm = await import('mcpmux/openai-agents')
  assert.equal(esm.HubMCPServer, HubMCPServer)
})

test('HubMCPServer: hub names, results, isError, refusals as results, cancellation', T, async () => {
  const hub = await Hub.connect({ mcpServers: { demo: { command: h.DEMO, allow_tools: ['echo', 'fail', 'slow'] } } })
  try {
    const policy = hub.policy({ maxToolCalls: 10 })
    const server = new HubMCPServer(hub, { policy })
    assert.equal(server.name, 'mcpmux')
    await server.connect()
    const tools = await server.listTools()
    assert.deepEqual(tools.map((t) => t.name), ['mcp_demo_echo', 'mcp_demo_slow', 'mcp_demo_fail'])
    assert.deepEqual(tools[0].inputSchema.required, ['text'])
    assert.equal(tools[0].inputSchema.type, 'object')

    const echo = await server.callTool('mcp_demo_echo', { text: 'hi' })
    assert.equal(echo.length, 1)
    assert.match(echo[0].text, /<untrusted-data-[0-9a-f]{16}>\nhi\n<\/untrusted-data-/)
    assert.equal(echo.isError, undefined)

    const fail = await server.callTool('mcp_demo_fail', { message: 'nope' })
    assert.equal(fail.isError, true)
    assert.match(fail[0].text, /nope/)

    const refused = await server.callTool('mcp_demo_crash', {})
    assert.equal(refused.isError, true)
    assert.match(refused[0].text, /^TOOL_NOT_ALLOWED: /)
    assert.deepEqual(refused._meta, { 'mcpmux/error': 'TOOL_NOT_ALLOWED' })

    const plain = new HubMCPServer(hub, { frameOutput: true })
    assert.equal((await plain.callTool('mcp_demo_echo', { text: 'raw' }))[0].text, 'raw', 'framing comes with a policy')
    const unknown = await plain.callTool('mcp_nope', {})
    assert.match(unknown[0].text, /^UNKNOWN_TOOL: /)

    const controller = new AbortController()
    const call = server.callTool('mcp_demo_slow', { seconds: 30, steps: 1 }, null, { signal: controller.signal })
    setTimeout(() => controller.abort(), 100)
    await h.rejectsWith(call, 'CANCELLED', McpmuxError)
    await server.close()
    await plain.close()
  } finally {
    await hub.close()
  }
})

test('mcpmux/ai-sdk: a missing `ai` is named; an injected one works', T, async () => {
  const { tools, toModelOutput } = await import('mcpmux/ai-sdk')
  const hub = await Hub.connect(h.demoConfig())
  try {
    await assert.rejects(tools(hub), (err) => {
      assert.match(err.message, /mcpmux\/ai-sdk needs the package 'ai'/)
      assert.match(err.message, /npm install ai@7/)
      return true
    })
    // A stand-in for `ai`: the tools are the definitions themselves.
    const ai = { jsonSchema: (schema) => ({ schema }), dynamicTool: (definition) => definition }
    const progress = []
    const set = await tools(hub, { ai, watch: false, onProgress: (p) => progress.push(p) })
    assert.ok('mcp_demo_echo' in set)
    assert.equal(set.mcp_demo_echo.inputSchema.schema.required[0], 'text')
    const outputs = []
    for await (const o of set.mcp_demo_slow.execute({ seconds: 0.2, steps: 2 }, { toolCallId: 't' })) outputs.push(o)
    assert.ok(outputs.length >= 2 && outputs[0].type === 'progress' && outputs[0].total === 2, JSON.stringify(outputs))
    assert.equal(progress.length, outputs.length - 1)
    const final = outputs.at(-1)
    assert.deepEqual(set.mcp_demo_slow.toModelOutput({ output: final }).type, 'text')
    const failed = []
    for await (const o of set.mcp_demo_fail.execute({ message: 'bad' }, { toolCallId: 'f' })) failed.push(o)
    assert.deepEqual(toModelOutput(failed.at(-1)), { type: 'error-text', value: 'bad' })
    const image = { content: [{ type: 'text', text: 'see' }, { type: 'image', data: 'iVBOR', mimeType: 'image/png' }] }
    assert.deepEqual(toModelOutput(image), {
      type: 'content',
      value: [
        { type: 'text', text: 'see' },
        { type: 'file', data: { type: 'data', data: 'iVBOR' }, mediaType: 'image/png' },
      ],
    })
  } finally {
    await hub.close()
  }
})

test('one listener per hub, however many ToolSets and servers follow it', T, async () => {
  const { tools } = await import('mcpmux/ai-sdk')
  const ai = { jsonSchema: (schema) => ({ schema }), dynamicTool: (definition) => definition }
  const hub = await Hub.connect(h.demoConfig())
  try {
    const sets = []
    for (let i = 0; i < 20; i++) sets.push(await tools(hub, { ai }))
    for (let i = 0; i < 20; i++) new HubMCPServer(hub)
    assert.equal(hub.listenerCount('event'), 1)
    await hub.callTool('mcp_demo_grow')
    await h.waitFor(() => sets.every((set) => 'mcp_demo_extra_1' in set), 10_000, 'every ToolSet has extra_1')
  } finally {
    await hub.close()
  }
})

test('the adapters refuse an unknown option, naming the nearest', T, async () => {
  const { tools } = await import('mcpmux/ai-sdk')
  const hub = await Hub.connect(h.demoConfig())
  try {
    const refused = (key, near) => (e) => {
      assert.ok(e instanceof McpmuxError && e.code === 'INVALID_INPUT', String(e && e.stack))
      assert.ok(e.message.includes(`unknown option '${key}' (did you mean '${near}'?`), e.message)
      return true
    }
    assert.throws(() => new HubMCPServer(hub, { cacheToolList: true }), refused('cacheToolList', 'cacheToolsList'))
    const ai = { jsonSchema: (schema) => ({ schema }), dynamicTool: (definition) => definition }
    await assert.rejects(tools(hub, { ai, frameOuput: true }), refused('frameOuput', 'frameOutput'))
    // Every known option (and an unknown one left undefined) still goes.
    const server = new HubMCPServer(hub, { name: 'n', policy: undefined, cacheToolsList: true, frameOutput: false, onProgress: () => {}, toolFilter: undefined, nope: undefined })
    assert.equal(server.name, 'n')
    const set = await tools(hub, { ai, policy: null, frameOutput: false, onProgress: () => {}, watch: false, nope: undefined })
    assert.ok('mcp_demo_echo' in set)
  } finally {
    await hub.close()
  }
})
