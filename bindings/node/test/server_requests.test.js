'use strict'
// Requests servers send to the host, answered from JavaScript: elicitation,
// sampling and roots, against server-everything (which offers its
// trigger-elicitation-request, trigger-sampling-request and get-roots-list
// tools only to a client declaring that capability) and the asks_client.py
// fault server (which sends any request and reports the client's declared
// capabilities).

const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { pathToFileURL } = require('node:url')

const h = require('./helpers.js')
const { Hub, McpmuxError } = require('mcpmux')

const T = { timeout: 60_000 }
const text = (result) => result.content.map((c) => c.text || '').join('\n')
const names = async (hub) => new Set((await hub.listTools()).map((t) => t.name))

async function ask(hub, method, params = {}, opts) {
  const r = await hub.callTool('mcp_asker_ask', { method, params }, opts)
  return JSON.parse(r.content[0].text)
}

async function declared(hub) {
  return JSON.parse((await hub.callTool('mcp_asker_client_capabilities')).content[0].text)
}

test('without handlers nothing is declared and the triggers are not offered', T, async () => {
  const hub = await Hub.connect({ mcpServers: { every: h.everything(), asker: h.fault('asks_client.py') } })
  try {
    const tools = await names(hub)
    for (const t of ['trigger-elicitation-request', 'trigger-sampling-request', 'get-roots-list']) {
      assert.ok(!tools.has(`mcp_every_${t}`), t)
    }
    assert.deepEqual(await declared(hub), {})
  } finally {
    await hub.close()
  }
})

test('an elicitation reaches the handler, which may return a promise', T, async () => {
  const seen = []
  const hub = await Hub.connect(
    { mcpServers: { every: h.everything() } },
    {
      onElicitation: async (params) => {
        seen.push(params)
        await new Promise((resolve) => setTimeout(resolve, 5))
        return { action: 'accept', content: { name: 'Ada Lovelace', check: true } }
      },
    },
  )
  try {
    const out = text(await hub.callTool('mcp_every_trigger-elicitation-request'))
    assert.match(out, /User provided the requested information/)
    assert.match(out, /- Name: Ada Lovelace/)
    assert.match(seen[0].message, /^Please provide inputs/)
    assert.ok(seen[0].requestedSchema.properties.name)
  } finally {
    await hub.close()
  }
})

test('a sampling request is answered with the handler’s CreateMessageResult', T, async () => {
  const hub = await Hub.connect(
    { mcpServers: { every: h.everything() } },
    {
      onSampling: (params) => ({
        role: 'assistant',
        model: 'test-model',
        stopReason: 'endTurn',
        content: { type: 'text', text: `echo: ${params.messages[0].content.text} / ${params.maxTokens}` },
      }),
    },
  )
  try {
    const out = text(await hub.callTool('mcp_every_trigger-sampling-request', { prompt: 'hello', maxTokens: 9 }))
    assert.match(out, /test-model/)
    assert.match(out, /hello \/ 9/)
  } finally {
    await hub.close()
  }
})

test('only the given handlers are declared; a throwing one answers with an error', T, async () => {
  const hub = await Hub.connect(
    { mcpServers: { asker: h.fault('asks_client.py') } },
    {
      onElicitation: () => {
        throw new Error('the person is away')
      },
      onSampling: () => 'not an object',
    },
  )
  try {
    assert.deepEqual(await declared(hub), { elicitation: {}, sampling: {} })
    const thrown = await ask(hub, 'elicitation/create', { message: '?' })
    assert.equal(thrown.error.code, -32603)
    assert.match(thrown.error.message, /the person is away/)
    const bad = await ask(hub, 'sampling/createMessage', { messages: [], maxTokens: 1 })
    assert.match(bad.error.message, /not an object/)
  } finally {
    await hub.close()
  }
})

test('a handler that never settles is bounded by the server’s timeout', T, async () => {
  const hub = await Hub.connect(
    { mcpServers: { asker: { ...h.fault('asks_client.py'), timeout_seconds: 1 } } },
    { onElicitation: () => new Promise(() => {}) },
  )
  try {
    const answer = await ask(hub, 'elicitation/create', { message: '?' }, { timeoutMs: 30_000 })
    assert.match(answer.error.message, /did not answer elicitation\/create/)
  } finally {
    await hub.close()
  }
})

test('roots reach server-everything and setRoots tells it', T, async () => {
  const dir = h.tempDir()
  const first = path.join(dir, 'first')
  const hub = await Hub.connect({ mcpServers: { every: h.everything() } }, { roots: [first] })
  try {
    assert.deepEqual(hub.roots, [{ uri: pathToFileURL(first).href, name: 'first' }])
    assert.match(text(await hub.callTool('mcp_every_get-roots-list')), new RegExp(pathToFileURL(first).href))
    hub.setRoots([new URL('file:///srv/second'), '/srv/third'])
    let out = ''
    await h.waitFor(async () => {
      out = text(await hub.callTool('mcp_every_get-roots-list'))
      return out.includes('second')
    }, 10_000, 'server-everything to ask for the roots again')
    assert.match(out, /file:\/\/\/srv\/second/)
    assert.match(out, /file:\/\/\/srv\/third/)
    assert.doesNotMatch(out, /first/)
    assert.throws(() => hub.setRoots(['https://example.com/']), (e) => e instanceof McpmuxError && e.code === 'INVALID_INPUT')
    assert.equal(hub.roots.length, 2)
  } finally {
    await hub.close()
  }
})

test('bad arguments are INVALID_INPUT', T, async () => {
  const invalid = (re) => (e) => e instanceof McpmuxError && e.code === 'INVALID_INPUT' && re.test(e.message)
  await assert.rejects(Hub.connect(h.demoConfig(), { onElicitation: 5 }), invalid(/onElicitation/))
  await assert.rejects(Hub.connect(h.demoConfig(), { roots: '/one/string' }), invalid(/roots/))
  await assert.rejects(Hub.connect(h.demoConfig(), { roots: ['https://example.com/'] }), invalid(/file:\/\//))
  const hub = await Hub.connect(h.demoConfig())
  try {
    assert.throws(() => hub.setRoots(['/a']), invalid(/connected without roots/))
  } finally {
    await hub.close()
  }
})
