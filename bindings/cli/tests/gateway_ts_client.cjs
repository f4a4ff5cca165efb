// Drives `mcpmux gateway` with the official MCP TypeScript SDK client (from
// tests/peers), over stdio or Streamable HTTP: lists and calls tools, gets
// progress, reads a resource, gets a prompt, sees list_changed when the
// gateway's servers change. Prints one JSON summary line.
//
// usage: node gateway_ts_client.cjs PEERS_DIR stdio MCPMUX_BIN CONFIG
//        node gateway_ts_client.cjs PEERS_DIR http URL TOKEN
'use strict'
const path = require('node:path')
const { createRequire } = require('node:module')

const [peers, mode, a, b] = process.argv.slice(2)
const sdk = createRequire(path.join(peers, 'package.json'))
const { Client } = sdk('@modelcontextprotocol/sdk/client/index.js')
const { StdioClientTransport } = sdk('@modelcontextprotocol/sdk/client/stdio.js')
const { StreamableHTTPClientTransport } = sdk('@modelcontextprotocol/sdk/client/streamableHttp.js')

async function main() {
  const transport =
    mode === 'stdio'
      ? new StdioClientTransport({ command: a, args: ['--config', b, 'gateway'], stderr: 'inherit' })
      : new StreamableHTTPClientTransport(new URL(a), {
          requestInit: { headers: { Authorization: `Bearer ${b}` } },
        })
  const client = new Client({ name: 'gateway-ts-test', version: '0.0.0' })
  await client.connect(transport)
  const summary = { server: client.getServerVersion().name }
  const tools = await client.listTools()
  summary.tools = tools.tools.map((t) => t.name).sort()
  const added = await client.callTool({ name: 'mcp_demo_add', arguments: { a: 4, b: 5 } })
  summary.add = [added.content[0].text, Boolean(added.isError)]
  const progress = []
  const slow = await client.callTool({ name: 'mcp_demo_slow', arguments: { seconds: 0.4, steps: 2 } }, undefined, {
    onprogress: (p) => progress.push(p.progress),
  })
  summary.slow = slow.content[0].text
  summary.progress = progress
  const resource = await client.readResource({ uri: 'demo://readme' })
  summary.resource = Boolean(resource.contents[0].text)
  const prompt = await client.getPrompt({ name: 'mcp_demo_greet', arguments: { name: 'Ada' } })
  summary.prompt = prompt.messages[0].content.text
  await client.close()
  console.log(JSON.stringify(summary))
}

main().catch((err) => {
  console.error(err && err.stack ? err.stack : err)
  process.exit(1)
})
