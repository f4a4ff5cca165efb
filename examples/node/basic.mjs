// mcpmux from Node: connect the demo server, list its tools, call some.
//
//   cargo build -p mcpmux-demo-server
//   npm install ./bindings/node            (in your project; here: see README.md)
//   node basic.mjs [CONFIG]
//
// CONFIG is a TOML or JSON config file (default: the bundled demo server).
import { Hub, McpmuxError } from 'mcpmux'

const demo = process.env.MCPMUX_DEMO_SERVER ?? new URL('../../target/debug/mcpmux-demo-server', import.meta.url).pathname
const config = process.argv[2] ?? { mcpServers: { demo: { command: demo } } }

const hub = await Hub.connect(config)
try {
  for (const s of await hub.servers()) {
    console.log(`server ${s.name}: ${s.state}${s.error ? ` (${s.error_code}: ${s.error})` : ''}`)
  }
  for (const tool of await hub.listTools()) {
    console.log(`  ${tool.name.padEnd(20)} ${tool.description ?? ''}`)
  }

  // A result is the MCP CallToolResult, exactly as the server sent it.
  const echo = await hub.callTool('mcp_demo_echo', { text: 'hello from Node' })
  console.log('echo ->', echo.content[0].text)

  const sum = await hub.callTool('mcp_demo_add', { a: 2, b: 40 })
  console.log('add ->', sum.structuredContent)

  // A tool's own failure resolves with isError: true ...
  const failed = await hub.callTool('mcp_demo_fail', { message: 'this tool always fails' })
  console.log('fail -> isError:', failed.isError, '-', failed.content[0].text)

  // ... while mcpmux's failures reject with an McpmuxError and a stable code.
  try {
    await hub.callTool('mcp_demo_nope', {})
  } catch (e) {
    if (!(e instanceof McpmuxError)) throw e
    console.log(`nope -> ${e.code}: ${e.message}`)
  }
} finally {
  await hub.close()
}
