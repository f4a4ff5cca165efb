// The hub's tools in the Vercel AI SDK (7): one line, `await tools(hub, { policy })`.
//
//   cargo build -p mcpmux-demo-server
//   npm install ./bindings/node ai@7       (in your project; Node 22 or newer;
//                                           here: npm install in examples/node/frameworks)
//   node ai_sdk.mjs
//
// The model is the AI SDK's mock model (no network, no key), which asks for
// the demo server's tools and then answers. With AI_GATEWAY_API_KEY set, a
// real model goes through the AI Gateway (MCPMUX_EXAMPLE_MODEL, default
// openai/gpt-4.1-mini); with OPENAI_API_KEY, through @ai-sdk/openai
// (npm install @ai-sdk/openai).
import { generateText, isStepCount } from 'ai'
import { Hub } from 'mcpmux'
import { tools } from 'mcpmux/ai-sdk'

const demo = process.env.MCPMUX_DEMO_SERVER ?? new URL('../../../target/debug/mcpmux-demo-server', import.meta.url).pathname
// allow_all offers every tool but the destructive ones (crash).
const hub = await Hub.connect({ mcpServers: { demo: { command: demo, allow_all: true } } })
try {
  const policy = hub.policy({ maxToolCalls: 10, onAudit: (e) => console.log(`audit: ${e.tool} ${e.status}`) })
  const result = await generateText({
    model: await pickModel(),
    tools: await tools(hub, { policy }),
    prompt: 'Add 19 and 23 with the tools, echo "hello from the AI SDK", and try the fail tool.',
    stopWhen: isStepCount(5),
  })
  for (const step of result.steps) {
    for (const r of step.toolResults) {
      const text = r.output.content.map((b) => unframe(b.text ?? `[${b.type}]`)).join(' ')
      console.log(`${r.toolName}${r.output.isError ? ' (error)' : ''}: ${text}`)
    }
  }
  console.log('model:', result.text)
} finally {
  await hub.close()
}

/** The tool's own text inside the policy's untrusted-data markers. */
function unframe(text) {
  const m = /<untrusted-data-(\w+)>\n([\s\S]*)\n<\/untrusted-data-\1>$/.exec(text)
  return m ? m[2] : text
}

async function pickModel() {
  if (process.env.AI_GATEWAY_API_KEY) return process.env.MCPMUX_EXAMPLE_MODEL ?? 'openai/gpt-4.1-mini'
  if (process.env.OPENAI_API_KEY) {
    const { openai } = await import('@ai-sdk/openai')
    return openai(process.env.MCPMUX_EXAMPLE_MODEL ?? 'gpt-4.1-mini')
  }
  // A scripted model: tool calls first, then an answer that quotes what it got.
  const { MockLanguageModelV4 } = await import('ai/test')
  const usage = {
    inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 },
    outputTokens: { total: 0, text: 0, reasoning: 0 },
  }
  const call = (toolCallId, toolName, input) => ({ type: 'tool-call', toolCallId, toolName, input: JSON.stringify(input) })
  let turn = 0
  return new MockLanguageModelV4({
    doGenerate: async ({ prompt }) => {
      if (turn++ === 0) {
        return {
          content: [
            call('1', 'mcp_demo_add', { a: 19, b: 23 }),
            call('2', 'mcp_demo_echo', { text: 'hello from the AI SDK' }),
            call('3', 'mcp_demo_fail', { message: 'the fail tool failed, as it always does' }),
          ],
          finishReason: { unified: 'tool-calls', raw: undefined },
          usage,
          warnings: [],
        }
      }
      const results = prompt.filter((m) => m.role === 'tool').flatMap((m) => m.content)
      const kinds = results.map((r) => `${r.toolName}: ${r.output.type}`).join(', ')
      return {
        content: [{ type: 'text', text: `I got ${results.length} tool results (${kinds}).` }],
        finishReason: { unified: 'stop', raw: undefined },
        usage,
        warnings: [],
      }
    },
  })
}
