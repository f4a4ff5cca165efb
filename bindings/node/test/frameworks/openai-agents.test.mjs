// mcpmux/openai-agents against the real OpenAI Agents SDK (@openai/agents,
// pinned in package.json here) with a fake `Model`: whole agent runs against
// the demo server, no network and no API key.
import test from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { createRequire } from 'node:module'

import { Agent, run, Usage, setTracingDisabled } from '@openai/agents'
import { Hub } from 'mcpmux'
import { HubMCPServer } from 'mcpmux/openai-agents'

const require = createRequire(import.meta.url)
const h = require('../helpers.js')

setTracingDisabled(true)
const T = { timeout: 60_000 }
const config = (extra = {}) => ({ mcpServers: { demo: { command: h.DEMO, allow_all: true, confirm_read_only: ['grow'] }, ...extra } })

const call = (callId, name, args) => ({ type: 'function_call', callId, name, arguments: JSON.stringify(args), status: 'completed' })
const say = (text) => ({
  type: 'message',
  role: 'assistant',
  status: 'completed',
  content: [{ type: 'output_text', text }],
})

/** The text of a function call's output item. */
function outputText(item) {
  const o = item.output
  if (typeof o === 'string') return o
  const parts = Array.isArray(o) ? o : [o]
  return parts.map((p) => (p && typeof p.text === 'string' ? p.text : JSON.stringify(p))).join('\n')
}

/**
 * A fake Model: on its turn i it asks for the tool calls of `turns[i]`,
 * then answers 'all done'. `seen.tools[i]` are the tool names it was given on
 * turn i, `seen.results` the function call outputs it got, by call id.
 */
function scriptedModel(...turns) {
  const seen = { tools: [], results: {} }
  let turn = 0
  const model = {
    async getResponse(request) {
      seen.tools.push((request.tools ?? []).map((t) => t.name))
      const input = Array.isArray(request.input) ? request.input : []
      for (const item of input) if (item.type === 'function_call_result') seen.results[item.callId] = outputText(item)
      const calls = turns[turn++]
      return { usage: new Usage(), output: calls ? calls : [say('all done')], responseId: `r${turn}` }
    },
    async *getStreamedResponse() {
      throw new Error('not used')
    },
  }
  return { model, seen }
}

const agentWith = (model, server) =>
  new Agent({ name: 'tester', instructions: 'Use the tools.', model, mcpServers: [server] })

test('Agent run: a whole turn through a policy (result, isError, refusals, audit)', T, async () => {
  const SECRET = 'AKIAIOSFODNN7EXAMPLE'
  const hub = await Hub.connect(config())
  try {
    const policy = hub.policy({ maxToolCalls: 4 })
    // extra_1 (added by grow) is offered, then dropped by a refresh: the
    // policy refuses it from then on (TOOL_NOT_ALLOWED, the server is not
    // asked). cacheToolsList keeps the stale list, so the model asks for it.
    await hub.callTool('mcp_demo_grow')
    await h.waitFor(async () => (await policy.offered()).some((t) => t.name === 'mcp_demo_extra_1'), 10_000, 'extra_1')
    const server = new HubMCPServer(hub, { policy, cacheToolsList: true, name: 'hub-with-policy' })
    const listed = (await server.listTools()).map((t) => t.name)
    assert.ok(listed.includes('mcp_demo_extra_1') && !listed.includes('mcp_demo_crash'), listed.join())
    server.close() // stop following tools_changed: keep the cached list
    await policy.refresh('demo')

    const { model, seen } = scriptedModel(
      [
        call('c1', 'mcp_demo_echo', { text: `hello ${SECRET}` }),
        call('c2', 'mcp_demo_fail', { message: 'the tool failed' }),
        call('c3', 'mcp_demo_extra_1', { text: 'gone' }),
      ],
      [call('c4', 'mcp_demo_add', { a: 1, b: 2 }), call('c5', 'mcp_demo_echo', { text: 'one too many' })],
    )
    const result = await run(agentWith(model, server), 'go', { maxTurns: 5 })
    assert.equal(result.finalOutput, 'all done')
    assert.ok(seen.tools[0].includes('mcp_demo_echo'), 'the model was offered the hub names')
    assert.ok(!seen.tools[0].includes('mcp_demo_crash'), 'a destructive tool is not offered')

    assert.match(seen.results.c1, /hello \[REDACTED:aws_access_key_id\]/)
    assert.match(seen.results.c1, /<untrusted-data-[0-9a-f]{16}>/, 'framed as untrusted data')
    assert.match(seen.results.c2, /the tool failed/, 'the text of an isError result reaches the model')
    assert.match(seen.results.c3, /^TOOL_NOT_ALLOWED: /)
    const limited = [seen.results.c4, seen.results.c5]
    assert.equal(limited.filter((t) => /^LIMIT_EXCEEDED: /.test(t)).length, 1, limited.join(' | '))
    assert.deepEqual(
      policy.auditEvents().map((e) => e.status).sort(),
      ['error', 'limit_exceeded', 'not_allowed', 'ok', 'ok'],
    )
  } finally {
    await hub.close()
  }
})

test('Agent run without a policy; the tool list follows tools_changed; failed servers left out', T, async () => {
  const hub = await Hub.connect(config({ broken: { command: '/nonexistent/mcpmux-no-such-server' } }))
  try {
    const progress = []
    const server = new HubMCPServer(hub, { onProgress: (p, info) => progress.push([info.toolName, p.progress, p.total]) })
    const first = scriptedModel([call('g', 'mcp_demo_grow', {}), call('s', 'mcp_demo_slow', { seconds: 0.2, steps: 2 })])
    const result = await run(agentWith(first.model, server), 'grow', { maxTurns: 5 })
    assert.equal(result.finalOutput, 'all done')
    assert.ok(first.seen.tools[0].every((n) => n.startsWith('mcp_demo_')), first.seen.tools[0].join())
    assert.match(first.seen.results.g, /added extra_1/)
    assert.ok(progress.length >= 1 && progress[0][0] === 'mcp_demo_slow' && progress[0][2] === 2, JSON.stringify(progress))

    await h.waitFor(async () => (await server.listTools()).some((t) => t.name === 'mcp_demo_extra_1'), 10_000, 'extra_1')
    const second = scriptedModel([call('x', 'mcp_demo_extra_1', { text: 'new tool' })])
    const again = await run(agentWith(second.model, server), 'use it', { maxTurns: 5 })
    assert.equal(again.finalOutput, 'all done')
    assert.ok(second.seen.tools[0].includes('mcp_demo_extra_1'))
    assert.equal(second.seen.results.x, 'new tool')
  } finally {
    await hub.close()
  }
})

test('cacheToolsList: the SDK cache is invalidated on tools_changed', T, async () => {
  const hub = await Hub.connect(config())
  try {
    const server = new HubMCPServer(hub, { cacheToolsList: true, name: 'cached-hub' })
    const first = scriptedModel([call('g', 'mcp_demo_grow', {})])
    await run(agentWith(first.model, server), 'grow', { maxTurns: 5 })
    // The SDK lists the tools once per run (cached); a later turn or run has extra_1.
    const second = scriptedModel()
    await h.waitFor(
      async () => {
        second.seen.tools.length = 0
        await run(agentWith(second.model, server), 'look', { maxTurns: 2 })
        return second.seen.tools[0].includes('mcp_demo_extra_1')
      },
      10_000,
      'extra_1 after tools_changed',
    )
  } finally {
    await hub.close()
  }
})

test("the run's abort signal cancels the MCP call", T, async () => {
  const log = path.join(h.tempDir(), 'cancelled.log')
  const hub = await Hub.connect({ mcpServers: { hang: h.fault('hang.py', { HANG_CANCEL_LOG: log }) } })
  try {
    const { model } = scriptedModel([call('h', 'mcp_hang_wait_forever', {})])
    const controller = new AbortController()
    const running = run(agentWith(model, new HubMCPServer(hub)), 'hang', { maxTurns: 3, signal: controller.signal })
    setTimeout(() => controller.abort(new Error('stop')), 300)
    await assert.rejects(running)
    await h.waitFor(() => fs.existsSync(log) && fs.readFileSync(log, 'utf8').trim() !== '', 5000, 'notifications/cancelled')
  } finally {
    await hub.close()
  }
})
