'use strict'
// Connect, list and call against the demo server and server-everything;
// the JSON shapes match the mcpmux CLI's --json output.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { execFileSync } = require('node:child_process')
const { pathToFileURL } = require('node:url')

const mcpmux = require('mcpmux')
const { Hub, McpmuxError, ERROR_CODES } = mcpmux
const h = require('./helpers.js')

const T = { timeout: 60_000 }

test('the package exports Hub, McpmuxError, ERROR_CODES and version', () => {
  assert.equal(typeof Hub.connect, 'function')
  assert.ok(McpmuxError.prototype instanceof Error)
  assert.equal(typeof mcpmux.version, 'string')
  assert.deepEqual(
    [...ERROR_CODES],
    [
      'CONFIG_INVALID',
      'INVALID_INPUT',
      'UNKNOWN_SERVER',
      'UNKNOWN_TOOL',
      'TOOL_NOT_ALLOWED',
      'CONNECT_FAILED',
      'TRANSPORT_CLOSED',
      'TIMEOUT',
      'CANCELLED',
      'PROTOCOL_ERROR',
      'SERVER_ERROR',
      'LIMIT_EXCEEDED',
      'PROVIDER_ERROR',
      'UNKNOWN_SKILL',
      'REVIEWER_NOT_FOUND',
      'INVALID_SESSION',
      'ROUND_STILL_RUNNING',
      'INTERNAL',
      'AUTH_REQUIRED',
      'AUTH_FAILED',
      'CONFIG_UNTRUSTED',
      'OUTPUT_INVALID',
      'TOOL_CHANGED',
    ],
  )
  assert.throws(() => new Hub({}), TypeError)
})

test('demo server: connect, list, call', T, async () => {
  const hub = await Hub.connect(h.demoConfig())
  try {
    const servers = await hub.servers()
    assert.equal(servers.length, 1)
    assert.equal(servers[0].name, 'demo')
    assert.equal(servers[0].state, 'connected')
    assert.equal(servers[0].server_info.name, 'mcpmux-demo-server')

    const tools = await hub.listTools()
    assert.deepEqual(
      tools.map((t) => t.name),
      ['mcp_demo_echo', 'mcp_demo_add', 'mcp_demo_slow', 'mcp_demo_fail', 'mcp_demo_crash', 'mcp_demo_big', 'mcp_demo_grow'],
    )
    const echo = tools[0]
    assert.equal(echo.server, 'demo')
    assert.equal(echo.tool, 'echo')
    assert.equal(echo.input_schema.type, 'object')
    assert.deepEqual(echo.annotations, { readOnlyHint: true })

    assert.deepEqual(await hub.callTool('mcp_demo_echo', { text: 'hello' }), {
      content: [{ type: 'text', text: 'hello' }],
    })
    const sum = await hub.callTool('mcp_demo_add', { a: 2, b: 40 })
    assert.deepEqual(sum.structuredContent, { sum: 42 })
    const failed = await hub.callTool('mcp_demo_fail', { message: 'nope' })
    assert.equal(failed.isError, true)
    assert.equal(failed.content[0].text, 'nope')
    const big = await hub.callTool('mcp_demo_big', { bytes: 1_000_000 })
    assert.equal(big.content[0].text.length, 1_000_000)
  } finally {
    await hub.close()
  }
})

test('servers() and listTools() are the objects of `mcpmux servers|tools --json`', T, async (t) => {
  if (!fs.existsSync(h.CLI)) {
    execFileSync('cargo', ['build', '-p', 'mcpmux-cli'], { cwd: h.ROOT, stdio: 'inherit' })
  }
  const dir = h.tempDir()
  const file = path.join(dir, 'mcpmux.json')
  fs.writeFileSync(file, JSON.stringify(h.demoConfig({ off: { command: h.DEMO, enabled: false } })))
  const cli = (cmd) => JSON.parse(execFileSync(h.CLI, ['--config', file, '--json', cmd], { encoding: 'utf8' }))
  const hub = await Hub.connect(file)
  try {
    assert.deepEqual(await hub.servers(), cli('servers'))
    assert.deepEqual(await hub.listTools(), cli('tools'))
  } finally {
    await hub.close()
  }
})

test('config: a TOML file path, a file URL, TOML text, JSON text, an object', T, async () => {
  const dir = h.tempDir()
  const toml = `[[mcp.servers]]\nname = "demo"\ncommand = ${JSON.stringify(h.DEMO)}\n`
  const json = JSON.stringify({ mcpServers: { demo: { command: h.DEMO } } })
  const tomlFile = path.join(dir, 'mcpmux.toml')
  fs.writeFileSync(tomlFile, toml)
  for (const config of [tomlFile, pathToFileURL(tomlFile), toml, json, JSON.parse(json)]) {
    const hub = await Hub.connect(config)
    try {
      const result = await hub.callTool('mcp_demo_echo', { text: String(config).slice(0, 20) })
      assert.equal(result.content[0].text, String(config).slice(0, 20))
    } finally {
      await hub.close()
    }
  }
})

test('a server that fails to start is marked failed; the others work', T, async () => {
  const hub = await Hub.connect(h.demoConfig({ broken: { command: '/nonexistent/mcp-server' } }))
  try {
    const servers = await hub.servers()
    const demo = servers.find((s) => s.name === 'demo')
    const broken = servers.find((s) => s.name === 'broken')
    assert.equal(demo.state, 'connected')
    assert.equal(broken.state, 'failed')
    assert.equal(broken.error_code, 'CONNECT_FAILED')
    assert.match(broken.error, /cannot start/)
    const e = await h.rejectsWith(hub.callTool('mcp_broken_x', {}), 'CONNECT_FAILED', McpmuxError)
    assert.match(e.message, /server 'broken' failed/)
    // The tool lists say which servers are missing from them.
    assert.match(hub.failedServersNote(), /broken \(CONNECT_FAILED\)/)
    const warnings = []
    const onWarning = (w) => warnings.push(w)
    process.on('warning', onWarning)
    try {
      await hub.listTools()
      await hub.toolsFor('mcp')
      await new Promise((resolve) => setImmediate(resolve))
    } finally {
      process.off('warning', onWarning)
    }
    const ours = warnings.filter((w) => w.name === 'McpmuxWarning')
    assert.equal(ours.length, 1, 'one warning per distinct note')
    assert.match(ours[0].message, /broken \(CONNECT_FAILED\)/)
  } finally {
    await hub.close()
  }
})

test('toolsFor renders anthropic, openai, openai-responses and mcp', T, async () => {
  const hub = await Hub.connect(h.demoConfig())
  try {
    const anthropic = await hub.toolsFor('anthropic')
    assert.equal(hub.failedServersNote(), null, 'no server failed')
    assert.equal(anthropic[0].name, 'mcp_demo_echo')
    assert.ok(anthropic[0].input_schema)
    const openai = await hub.toolsFor('openai')
    assert.equal(openai[0].type, 'function')
    assert.equal(openai[0].function.name, 'mcp_demo_echo')
    const responses = await hub.toolsFor('openai-responses')
    assert.equal(responses[0].name, 'mcp_demo_echo')
    const mcp = await hub.toolsFor('mcp')
    assert.ok(mcp[0].inputSchema)
    await h.rejectsWith(hub.toolsFor('bogus'), 'INVALID_INPUT', McpmuxError)
  } finally {
    await hub.close()
  }
})

test('resources, templates and prompts', T, async () => {
  const hub = await Hub.connect(h.demoConfig())
  try {
    const resources = await hub.listResources()
    assert.deepEqual(
      resources.map((r) => [r.uri, r.server]),
      [['demo://readme', 'demo']],
    )
    assert.equal((await hub.listResources({ server: 'demo' })).length, 1)
    const templates = await hub.listResourceTemplates()
    assert.equal(templates[0].uriTemplate, 'demo://item/{id}')
    const readme = await hub.readResource('demo://readme')
    assert.match(readme.contents[0].text, /mcpmux demo server/)
    const item = await hub.readResource('demo://item/7', { server: 'demo' })
    assert.equal(item.contents[0].uri, 'demo://item/7')
    const prompts = await hub.listPrompts()
    assert.deepEqual(
      prompts.map((p) => [p.name, p.server]),
      [['greet', 'demo']],
    )
    const prompt = await hub.getPrompt('greet', { name: 'Ada' })
    assert.match(JSON.stringify(prompt.messages), /Ada/)
    const again = await hub.getPrompt('greet', { name: 'Bob' }, { server: 'demo' })
    assert.match(JSON.stringify(again.messages), /Bob/)
  } finally {
    await hub.close()
  }
})

test('refresh reconnects a server and lists its tools again', T, async () => {
  const hub = await Hub.connect(h.demoConfig())
  try {
    await hub.callTool('mcp_demo_grow')
    await h.waitFor(async () => (await hub.listTools()).some((t) => t.name === 'mcp_demo_extra_1'), 5000, 'extra_1')
    await hub.refresh('demo')
    const names = (await hub.listTools()).map((t) => t.name)
    assert.ok(!names.includes('mcp_demo_extra_1'), 'a fresh server has no extra tool')
    assert.equal((await hub.callTool('mcp_demo_echo', { text: 'after refresh' })).content[0].text, 'after refresh')
    await h.rejectsWith(hub.refresh('nope'), 'UNKNOWN_SERVER', McpmuxError)
  } finally {
    await hub.close()
  }
})

test('server-everything: connect, list, call, progress', T, async () => {
  const hub = await Hub.connect({ mcpServers: { everything: h.everything() } })
  try {
    const [status] = await hub.servers()
    assert.equal(status.state, 'connected')
    assert.equal(status.server_info.name, 'mcp-servers/everything')
    const names = (await hub.listTools()).map((t) => t.name)
    for (const n of ['mcp_everything_echo', 'mcp_everything_get-sum', 'mcp_everything_trigger-long-running-operation']) {
      assert.ok(names.includes(n), `${n} in ${names}`)
    }
    assert.equal((await hub.callTool('mcp_everything_echo', { message: 'hi' })).content[0].text, 'Echo: hi')
    assert.equal(
      (await hub.callTool('mcp_everything_get-sum', { a: 2, b: 3 })).content[0].text,
      'The sum of 2 and 3 is 5.',
    )
    const progress = []
    const long = await hub.callTool(
      'mcp_everything_trigger-long-running-operation',
      { duration: 0.3, steps: 3 },
      { onProgress: (p) => progress.push(p) },
    )
    assert.ok(!long.isError)
    assert.equal(progress.length, 3)
    assert.deepEqual(
      progress.map((p) => [p.progress, p.total]),
      [
        [1, 3],
        [2, 3],
        [3, 3],
      ],
    )
    const resources = await hub.listResources()
    assert.ok(resources.length >= 7)
    const doc = await hub.readResource(resources[0].uri)
    assert.ok(doc.contents.length > 0)
  } finally {
    await hub.close()
  }
})

test('200 concurrent calls with Promise.all across two servers', T, async () => {
  const hub = await Hub.connect(h.demoConfig({ everything: h.everything() }))
  try {
    const calls = Array.from({ length: 200 }, (_, i) =>
      i % 2 === 0
        ? hub.callTool('mcp_demo_echo', { text: `call ${i}` })
        : hub.callTool('mcp_everything_echo', { message: `call ${i}` }),
    )
    const results = await Promise.all(calls)
    results.forEach((r, i) => {
      assert.equal(r.content[0].text, i % 2 === 0 ? `call ${i}` : `Echo: call ${i}`)
    })
  } finally {
    await hub.close()
  }
})

test('engine work does not block the event loop', T, async () => {
  const hub = await Hub.connect(h.demoConfig())
  try {
    // A call the server would answer after an hour, ended by a timer that
    // ticks 10 times while it is pending: a loop blocked by the call never
    // runs the timer, and the call never ends (the test's guard fails it).
    const controller = new AbortController()
    let settled = false
    const call = hub.callTool('mcp_demo_slow', { seconds: 3600, steps: 0 }, { signal: controller.signal, timeoutMs: 3_600_000 })
    const outcome = call.then(
      () => 'resolved',
      (err) => err.code,
    )
    call.finally(() => (settled = true)).catch(() => {})
    let ticks = 0
    await new Promise((resolve) => {
      const timer = setInterval(() => {
        ticks += 1
        if (ticks === 10) {
          clearInterval(timer)
          resolve()
        }
      }, 5)
    })
    assert.equal(settled, false, 'still pending after the ticks')
    controller.abort()
    assert.equal(await outcome, 'CANCELLED')
  } finally {
    await hub.close()
  }
})

test('many calls in flight, some aborted, one long one pending while the ids go round: each promise gets its own answer', T, async () => {
  const hub = await Hub.connect(h.demoConfig())
  try {
    // Pending for the whole test: its slot must stay findable however many
    // ids pass it (the pending table probes past it).
    const long = new AbortController()
    const slow = hub.callTool('mcp_demo_slow', { seconds: 30 }, { signal: long.signal })
    const slowOutcome = slow.then(
      () => 'resolved',
      (err) => err.code,
    )
    for (let wave = 0; wave < 20; wave++) {
      const calls = []
      for (let i = 0; i < 100; i++) {
        const text = `wave ${wave} call ${i}`
        if (i % 3 === 0) {
          const ac = new AbortController()
          const p = hub.callTool('mcp_demo_echo', { text }, { signal: ac.signal })
          ac.abort()
          calls.push(
            p.then(
              (r) => assert.equal(r.content[0].text, text),
              (err) => assert.equal(err.code, 'CANCELLED', String(err)),
            ),
          )
        } else {
          calls.push(hub.callTool('mcp_demo_echo', { text }).then((r) => assert.equal(r.content[0].text, text)))
        }
      }
      await Promise.all(calls)
    }
    long.abort()
    assert.equal(await slowOutcome, 'CANCELLED')
    // The engine is still answering.
    const r = await hub.callTool('mcp_demo_echo', { text: 'after' })
    assert.equal(r.content[0].text, 'after')
  } finally {
    await hub.close()
  }
})

test('a server that asks the client something during each call, one call after another: every ask is answered', T, async () => {
  // One call at a time: the JavaScript thread reads the server's output
  // itself while it waits (readNow), so the server's own requests (here a
  // ping) are read, and answered, from this thread too.
  const hub = await Hub.connect({ mcpServers: { asker: h.fault('asks_client.py') } })
  try {
    for (let i = 0; i < 200; i++) {
      const r = await hub.callTool('mcp_asker_ping_client', {})
      assert.equal(r.isError ?? false, false, JSON.stringify(r))
      assert.deepEqual(JSON.parse(r.content[0].text), { result: {} }, `call ${i}`)
    }
  } finally {
    await hub.close()
  }
})
