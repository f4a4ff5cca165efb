// Drives `mcpmux gateway` over stdio or Streamable HTTP with the official MCP TypeScript SDK
// client's task API (2025-11-25 tasks, `client.experimental.tasks`): a tool
// run as a task to its result, a task whose server asks a question (the
// SDK's elicitation handler answers it), the client's task list. Prints one
// JSON summary line.
//
// usage: node gateway_ts_tasks_client.cjs PEERS_DIR stdio MCPMUX_BIN CONFIG
//        node gateway_ts_tasks_client.cjs PEERS_DIR http URL TOKEN
'use strict'
const path = require('node:path')
const { createRequire } = require('node:module')

const [peers, mode, a, b] = process.argv.slice(2)
const sdk = createRequire(path.join(peers, 'package.json'))
const { Client } = sdk('@modelcontextprotocol/sdk/client/index.js')
const { StdioClientTransport } = sdk('@modelcontextprotocol/sdk/client/stdio.js')
const { StreamableHTTPClientTransport } = sdk('@modelcontextprotocol/sdk/client/streamableHttp.js')
const { ElicitRequestSchema } = sdk('@modelcontextprotocol/sdk/types.js')

// Every message of one task-augmented call, as `type` plus what matters.
async function stream(client, name, args) {
  const seen = []
  for await (const m of client.experimental.tasks.callToolStream({ name, arguments: args }, undefined, {
    task: { ttl: 60000 },
  })) {
    if (m.type === 'taskCreated' || m.type === 'taskStatus') seen.push([m.type, m.task.taskId, m.task.status])
    else if (m.type === 'result') seen.push(['result', m.result.content[0].text, m.result._meta])
    else seen.push([m.type, String(m.error)])
  }
  return seen
}

async function main() {
  const transport =
    mode === 'stdio'
      ? new StdioClientTransport({ command: a, args: ['--config', b, 'gateway'], stderr: 'inherit' })
      : new StreamableHTTPClientTransport(new URL(a), {
          requestInit: { headers: { Authorization: `Bearer ${b}` } },
        })
  const client = new Client({ name: 'gateway-ts-tasks', version: '0.0.0' }, { capabilities: { elicitation: {} } })
  const asked = []
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push(req.params._meta ? req.params._meta['io.modelcontextprotocol/related-task'] : null)
    const choice = req.params.requestedSchema.properties.interpretation.oneOf[0].const
    return { action: 'accept', content: { interpretation: choice } }
  })
  await client.connect(transport)
  const summary = { tasks: client.getServerCapabilities().tasks || null }
  await client.listTools()
  summary.sum = await stream(client, 'mcp_tasks_slow_sum', { a: 2, b: 40, ms: 300 })
  summary.research = await stream(client, 'mcp_every_simulate-research-query', { topic: 'python', ambiguous: true })
  summary.asked = asked
  summary.listed = (await client.experimental.tasks.listTasks()).tasks.map((t) => [t.taskId, t.status])
  await client.close()
  console.log(JSON.stringify(summary))
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : e)
  process.exit(1)
})
