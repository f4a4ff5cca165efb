// The hub as an MCP server of the OpenAI Agents SDK: one line,
// `new HubMCPServer(hub, { policy })` in `new Agent({ mcpServers: [...] })`.
//
//   cargo build -p mcpmux-demo-server
//   npm install ./bindings/node @openai/agents zod      (in your project;
//                                        here: npm install in examples/node/frameworks)
//   node openai_agents.mjs
//
// The model is a fake `Model` (no network, no key) that asks for the demo
// server's tools and then answers. With OPENAI_API_KEY set, the agent uses
// a real OpenAI model (MCPMUX_EXAMPLE_MODEL, default gpt-4.1-mini).
import { Agent, run, setTracingDisabled, Usage } from '@openai/agents'
import { Hub } from 'mcpmux'
import { HubMCPServer } from 'mcpmux/openai-agents'

const demo = process.env.MCPMUX_DEMO_SERVER ?? new URL('../../../target/debug/mcpmux-demo-server', import.meta.url).pathname
// allow_all offers every tool but the destructive ones (crash).
const hub = await Hub.connect({ mcpServers: { demo: { command: demo, allow_all: true } } })
try {
  const policy = hub.policy({ maxToolCalls: 10, onAudit: (e) => console.log(`audit: ${e.tool} ${e.status}`) })
  const realModel = Boolean(process.env.OPENAI_API_KEY)
  if (!realModel) setTracingDisabled(true)
  const agent = new Agent({
    name: 'Assistant',
    instructions: 'Use the tools to answer.',
    model: realModel ? (process.env.MCPMUX_EXAMPLE_MODEL ?? 'gpt-4.1-mini') : fakeModel(),
    mcpServers: [new HubMCPServer(hub, { policy })],
  })
  const result = await run(agent, 'Add 19 and 23 with the tools, echo "hello from the Agents SDK", and try the fail tool.')
  for (const item of result.newItems) {
    if (item.type === 'tool_call_output_item') {
      const parts = Array.isArray(item.rawItem.output) ? item.rawItem.output : [item.rawItem.output]
      console.log(`${item.rawItem.name}: ${parts.map((p) => unframe(typeof p === 'string' ? p : (p.text ?? ''))).join(' ')}`)
    }
  }
  console.log('model:', result.finalOutput)
} finally {
  await hub.close()
}

/** The tool's own text inside the policy's untrusted-data markers. */
function unframe(text) {
  const m = /<untrusted-data-(\w+)>\n([\s\S]*)\n<\/untrusted-data-\1>$/.exec(text)
  return m ? m[2] : text
}

/** A scripted Model: tool calls first, then an answer that quotes what it got. */
function fakeModel() {
  const call = (callId, name, args) => ({ type: 'function_call', callId, name, arguments: JSON.stringify(args), status: 'completed' })
  let turn = 0
  return {
    async getResponse(request) {
      if (turn++ === 0) {
        return {
          usage: new Usage(),
          output: [
            call('1', 'mcp_demo_add', { a: 19, b: 23 }),
            call('2', 'mcp_demo_echo', { text: 'hello from the Agents SDK' }),
            call('3', 'mcp_demo_fail', { message: 'the fail tool failed, as it always does' }),
          ],
        }
      }
      const results = request.input.filter((i) => i.type === 'function_call_result')
      const text = `I got ${results.length} tool results (${results.map((r) => r.name).join(', ')}).`
      return {
        usage: new Usage(),
        output: [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] }],
      }
    },
    async *getStreamedResponse() {
      throw new Error('this fake model does not stream')
    },
  }
}
