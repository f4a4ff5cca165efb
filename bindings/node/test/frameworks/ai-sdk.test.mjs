// mcpmux/ai-sdk against the real AI SDK 7 (`ai`, pinned in package.json
// here) and its mock language model from `ai/test`: whole generateText and
// streamText turns against the demo server, no network. Runs under Node 22
// (ci.sh). mcpmux is installed here as a symlink (file:../..), and `ai` only
// here: the adapter must find it from the host's project.
import test from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { createRequire } from 'node:module'

import { generateText, streamText, isStepCount } from 'ai'
import { MockLanguageModelV4, convertArrayToReadableStream } from 'ai/test'
import { Hub } from 'mcpmux'
import { tools } from 'mcpmux/ai-sdk'

const require = createRequire(import.meta.url)
const h = require('../helpers.js')

const T = { timeout: 60_000 }
const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
}
const stop = { unified: 'stop', raw: 'stop' }
const toolCalls = { unified: 'tool-calls', raw: 'tool_calls' }

/** A config: the demo server with every tool allowed but the destructive ones (crash). */
const config = (extra = {}) => ({ mcpServers: { demo: { command: h.DEMO, allow_all: true, confirm_read_only: ['grow'] }, ...extra } })

/** The tool results of a prompt (what the model gets on its next turn), by tool call id. */
function toolResults(prompt) {
  const out = {}
  for (const message of prompt) {
    if (message.role !== 'tool') continue
    for (const part of message.content) if (part.type === 'tool-result') out[part.toolCallId] = part
  }
  return out
}

const call = (toolCallId, toolName, input) => ({ type: 'tool-call', toolCallId, toolName, input: JSON.stringify(input) })

/**
 * A model that asks for the tool calls of `turns[i]` on its turn i, records
 * the tool results it was given on each later turn (`seen.results`, by call
 * id), and answers with text after the last.
 */
function scriptedModel(...turns) {
  const seen = { tools: [], results: {} }
  const model = new MockLanguageModelV4({
    doGenerate: async (options) => {
      seen.tools.push((options.tools ?? []).map((t) => t.name))
      Object.assign(seen.results, toolResults(options.prompt))
      const turn = model.doGenerateCalls.length - 1
      if (turn < turns.length) return { content: turns[turn], finishReason: toolCalls, usage, warnings: [] }
      return { content: [{ type: 'text', text: 'all done' }], finishReason: stop, usage, warnings: [] }
    },
  })
  return { model, seen }
}
const twoTurnModel = (calls) => scriptedModel(calls)

test('generateText: a whole turn through a policy (result, isError, refusal, audit)', T, async () => {
  const hub = await Hub.connect(config())
  try {
    const policy = hub.policy({ maxToolCalls: 10 })
    const toolset = await tools(hub, { policy })
    const names = Object.keys(toolset)
    assert.ok(names.includes('mcp_demo_echo') && names.includes('mcp_demo_fail'), names.join())
    assert.ok(!names.includes('mcp_demo_crash'), 'a destructive tool is not offered')

    const { model, seen } = twoTurnModel([
      call('c1', 'mcp_demo_echo', { text: 'hello from the model' }),
      call('c2', 'mcp_demo_fail', { message: 'the tool failed' }),
      call('c3', 'mcp_demo_crash', {}),
    ])
    const result = await generateText({ model, tools: toolset, prompt: 'go', stopWhen: isStepCount(5) })

    assert.equal(result.text, 'all done')
    assert.equal(result.finishReason, 'stop')
    assert.equal(result.steps.length, 2)
    assert.ok(seen.tools[0].includes('mcp_demo_echo'), 'the model was offered the hub names')

    const echo = seen.results.c1
    assert.equal(echo.toolName, 'mcp_demo_echo')
    assert.equal(echo.output.type, 'text')
    assert.match(echo.output.value, /hello from the model/)
    assert.match(echo.output.value, /<untrusted-data-[0-9a-f]{16}>/, 'framed as untrusted data')

    const fail = seen.results.c2
    assert.deepEqual(fail.output.type, 'error-text')
    assert.match(fail.output.value, /the tool failed/)

    // The destructive tool is not in the ToolSet: the SDK answers the model with an error result.
    const crash = seen.results.c3
    assert.equal(crash.output.type, 'error-text')
    assert.match(crash.output.value, /mcp_demo_crash/)

    // The calls went through the policy (the server never saw crash).
    assert.deepEqual(
      policy.auditEvents().map((e) => [e.tool, e.status]).sort(),
      [
        ['echo', 'ok'],
        ['fail', 'error'],
      ],
    )
    assert.equal((await hub.callTool('mcp_demo_echo', { text: 'still up' })).content[0].text, 'still up')
    // The app sees the MCP results themselves.
    const outputs = Object.fromEntries(result.steps[0].toolResults.map((r) => [r.toolCallId, r.output]))
    assert.equal(outputs.c2.isError, true)
  } finally {
    await hub.close()
  }
})

test('generateText: refusals by the policy reach the model as error results', T, async () => {
  const SECRET = 'AKIAIOSFODNN7EXAMPLE'
  const hub = await Hub.connect(config())
  try {
    const policy = hub.policy({ maxToolCalls: 2 })
    // extra_1 (which grow adds) is offered, then the server restarts without
    // it: the policy refuses it from then on (TOOL_NOT_ALLOWED, the server is
    // not asked). watch: false keeps it in the ToolSet, so the model asks.
    await hub.callTool('mcp_demo_grow')
    await h.waitFor(async () => (await policy.offered()).some((t) => t.name === 'mcp_demo_extra_1'), 10_000, 'extra_1')
    const toolset = await tools(hub, { policy, watch: false })
    assert.ok('mcp_demo_extra_1' in toolset)
    await policy.refresh('demo')
    const { model, seen } = scriptedModel(
      [call('x1', 'mcp_demo_extra_1', { text: 'gone' })],
      [call('e1', 'mcp_demo_echo', { text: `key ${SECRET}` })],
      [call('e2', 'mcp_demo_echo', { text: 'one too many' })],
    )
    const result = await generateText({ model, tools: toolset, prompt: 'go', stopWhen: isStepCount(6) })
    assert.equal(result.text, 'all done')
    assert.equal(result.steps.length, 4)
    assert.equal(seen.results.x1.output.type, 'error-text', JSON.stringify(seen.results.x1))
    assert.match(seen.results.x1.output.value, /^TOOL_NOT_ALLOWED: /)
    assert.equal(seen.results.e1.output.type, 'text')
    assert.match(seen.results.e1.output.value, /key \[REDACTED:aws_access_key_id\]/)
    assert.ok(!seen.results.e1.output.value.includes(SECRET))
    assert.equal(seen.results.e2.output.type, 'error-text')
    assert.match(seen.results.e2.output.value, /^LIMIT_EXCEEDED: /)
    assert.deepEqual(policy.auditEvents().map((e) => e.status), ['not_allowed', 'ok', 'limit_exceeded'])
  } finally {
    await hub.close()
  }
})

test('generateText without a policy: plain hub results, structured content', T, async () => {
  const hub = await Hub.connect(config())
  try {
    const { model, seen } = twoTurnModel([call('a', 'mcp_demo_add', { a: 2, b: 40 }), call('b', 'mcp_demo_echo', { text: 'plain' })])
    const result = await generateText({ model, tools: await tools(hub), prompt: 'add', stopWhen: isStepCount(3) })
    assert.equal(result.text, 'all done')
    assert.match(seen.results.a.output.value, /42/)
    assert.deepEqual(seen.results.b.output, { type: 'text', value: 'plain' })
  } finally {
    await hub.close()
  }
})

test('streamText: progress as preliminary results, then the result in the next turn', T, async () => {
  const hub = await Hub.connect(config())
  try {
    const progress = []
    const toolset = await tools(hub, { onProgress: (p, info) => progress.push([info.toolName, p.progress]) })
    let turn = 0
    let results = null
    const model = new MockLanguageModelV4({
      doStream: async (options) => {
        turn++
        const parts =
          turn === 1
            ? [
                { type: 'stream-start', warnings: [] },
                call('s1', 'mcp_demo_slow', { seconds: 0.3, steps: 3 }),
                { type: 'finish', finishReason: toolCalls, usage },
              ]
            : ((results = toolResults(options.prompt)),
              [
                { type: 'stream-start', warnings: [] },
                { type: 'text-start', id: 't' },
                { type: 'text-delta', id: 't', delta: 'slow one finished' },
                { type: 'text-end', id: 't' },
                { type: 'finish', finishReason: stop, usage },
              ])
        return { stream: convertArrayToReadableStream(parts) }
      },
    })
    const stream = streamText({ model, tools: toolset, prompt: 'wait', stopWhen: isStepCount(3) })
    const preliminary = []
    for await (const part of stream.fullStream) {
      if (part.type === 'tool-result' && part.preliminary) preliminary.push(part.output)
      if (part.type === 'error') throw part.error
    }
    assert.equal(await stream.text, 'slow one finished')
    const steps = preliminary.filter((o) => o.type === 'progress')
    assert.ok(steps.length >= 1, JSON.stringify(preliminary))
    assert.equal(steps[0].total, 3)
    assert.ok(progress.length >= 1 && progress[0][0] === 'mcp_demo_slow')
    assert.equal(results.s1.output.type, 'text')
  } finally {
    await hub.close()
  }
})

test("the call's abortSignal cancels the MCP call", T, async () => {
  const log = path.join(h.tempDir(), 'cancelled.log')
  const hub = await Hub.connect({ mcpServers: { hang: h.fault('hang.py', { HANG_CANCEL_LOG: log }) } })
  try {
    const toolset = await tools(hub)
    const model = new MockLanguageModelV4({
      doGenerate: async () => ({ content: [call('h1', 'mcp_hang_wait_forever', {})], finishReason: toolCalls, usage, warnings: [] }),
    })
    const controller = new AbortController()
    const run = generateText({ model, tools: toolset, prompt: 'hang', abortSignal: controller.signal, stopWhen: isStepCount(3) })
    setTimeout(() => controller.abort(new Error('stop')), 300)
    await assert.rejects(run)
    await h.waitFor(() => fs.existsSync(log) && fs.readFileSync(log, 'utf8').trim() !== '', 5000, 'notifications/cancelled')
  } finally {
    await hub.close()
  }
})

test('the ToolSet follows tools_changed; tools of a failed server are left out', T, async () => {
  const hub = await Hub.connect(config({ broken: { command: '/nonexistent/mcpmux-no-such-server' } }))
  try {
    const toolset = await tools(hub)
    assert.ok(Object.keys(toolset).every((n) => n.startsWith('mcp_demo_')), Object.keys(toolset).join())
    const { model } = twoTurnModel([call('g', 'mcp_demo_grow', {})])
    await generateText({ model, tools: toolset, prompt: 'grow', stopWhen: isStepCount(3) })
    await h.waitFor(() => 'mcp_demo_extra_1' in toolset, 10_000, 'mcp_demo_extra_1 in the ToolSet')
    // The next run offers it to the model, and it can be called.
    const next = twoTurnModel([call('x', 'mcp_demo_extra_1', { text: 'new tool' })])
    const result = await generateText({ model: next.model, tools: toolset, prompt: 'use it', stopWhen: isStepCount(3) })
    assert.ok(next.seen.tools[0].includes('mcp_demo_extra_1'))
    assert.equal(next.seen.results.x.output.value, 'new tool')
    assert.equal(result.text, 'all done')
  } finally {
    await hub.close()
  }
})

test("`ai` is found from the host's project, not from mcpmux's real path", T, async () => {
  const real = fs.realpathSync(path.dirname(require.resolve('mcpmux/package.json')))
  assert.ok(!fs.existsSync(path.join(real, 'node_modules', 'ai')), 'this test needs mcpmux without its own ai')
  const { resolveImport } = require(path.join(real, 'adapters.js'))
  assert.equal(resolveImport('ai', path.join(real, 'index.js')), null)
})
