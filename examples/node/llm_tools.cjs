// CommonJS, and the usual LLM loop: hand the hub's tools to a model in its
// API's format, then run the tool calls the model asks for.
//
//   node llm_tools.cjs
const { Hub } = require('mcpmux')

const demo = process.env.MCPMUX_DEMO_SERVER || require('node:path').resolve(__dirname, '../../target/debug/mcpmux-demo-server')

async function main() {
  const hub = await Hub.connect({ mcpServers: { demo: { command: demo } } })
  try {
    // Ready to pass as `tools` to the Anthropic Messages API
    // (also 'openai', 'openai-responses' and 'mcp').
    const tools = await hub.toolsFor('anthropic')
    console.log('tools for the model:', tools.map((t) => t.name).join(', '))

    // What a model's reply might ask for (normally from the API response).
    const toolUses = [
      { id: 'toolu_1', name: 'mcp_demo_add', input: { a: 19, b: 23 } },
      { id: 'toolu_2', name: 'mcp_demo_echo', input: { text: 'run in parallel' } },
    ]
    // Run them concurrently; each becomes a tool_result block for the next turn.
    const results = await Promise.all(
      toolUses.map(async (use) => {
        const r = await hub.callTool(use.name, use.input)
        return { type: 'tool_result', tool_use_id: use.id, content: r.content, is_error: r.isError === true }
      }),
    )
    console.log(JSON.stringify(results, null, 2))
  } finally {
    await hub.close()
  }
}

main().catch((e) => {
  console.error(e)
  process.exitCode = 1
})
