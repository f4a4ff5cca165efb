// The adapters' types against the frameworks' own (tsc --strict, run by
// types.test.mjs): a ToolSet for generateText / streamText, a HubMCPServer
// for new Agent({ mcpServers }).
import { generateText, streamText, type ToolSet } from 'ai'
import { MockLanguageModelV4 } from 'ai/test'
import { Agent, type MCPServer } from '@openai/agents'
import { Hub } from 'mcpmux'
import { tools, type ToolsOptions } from 'mcpmux/ai-sdk'
import { HubMCPServer } from 'mcpmux/openai-agents'

export async function usage(): Promise<void> {
  const hub = await Hub.connect({ mcpServers: {} })
  const policy = hub.policy({ maxToolCalls: 3 })
  const options: ToolsOptions = { policy, onProgress: (p, call) => console.log(call.toolName, p.progress, p.total) }
  const set: ToolSet = await tools(hub, options)
  const model = new MockLanguageModelV4()
  await generateText({ model, tools: await tools(hub, { policy }), prompt: 'x', abortSignal: AbortSignal.timeout(1000) })
  streamText({ model, tools: set, prompt: 'x' })

  const server = new HubMCPServer(hub, { policy, cacheToolsList: true, name: 'hub', onProgress: (p) => p.progress })
  const asServer: MCPServer = server
  new Agent({ name: 'a', instructions: 'i', mcpServers: [server, asServer] })
  // @ts-expect-error the hub comes first
  new HubMCPServer({ policy })
  await hub.close()
}
