// Types of `mcpmux/openai-agents` (openai-agents.js / .mjs). They name no
// type of `@openai/agents`; HubMCPServer is assignable to its `MCPServer`.
import type { Hub, Policy, CallToolResult, Progress, Listed } from './index.js'

/** Options of {@link HubMCPServer}. */
export interface HubMCPServerOptions {
  /** The server's name in the SDK (traces, tool filters, its tool cache). Default `mcpmux`. */
  name?: string
  /** Calls go through this policy (from `hub.policy()`), and only the tools it offers are listed. */
  policy?: Policy
  /** Let the SDK cache the tool list (invalidated on each `tools_changed`). Default false. */
  cacheToolsList?: boolean
  /** Frame text output as untrusted data (default: true with a policy; never without one). */
  frameOutput?: boolean
  /** Called for each progress notification of a call. */
  onProgress?: (progress: Progress, call: { toolName: string }) => void
  /** The SDK's `toolFilter` (static or callable). */
  toolFilter?: any
}

/** A tool in the SDK's `MCPTool` shape. */
export interface HubMCPTool {
  name: string
  description: string
  title?: string
  annotations?: Record<string, unknown>
  outputSchema?: Record<string, unknown>
  inputSchema: {
    type: 'object'
    properties: Record<string, any>
    required: string[]
    additionalProperties: boolean
    [key: string]: unknown
  }
}

/** The content of a result, with its metadata attached (not enumerable). */
export type HubCallToolResultContent = Array<{ type: string; [key: string]: unknown }> & {
  _meta?: Record<string, unknown>
  structuredContent?: Record<string, unknown>
  isError?: boolean
}

/** A hub as an `MCPServer` of the OpenAI Agents SDK, for `new Agent({ mcpServers: [...] })`. */
export declare class HubMCPServer {
  constructor(hub: Hub, options?: HubMCPServerOptions)
  cacheToolsList: boolean
  toolFilter?: any
  errorFunction: (args: { context: unknown; error: unknown }) => string
  readonly name: string
  /** Does nothing: the hub is connected already. */
  connect(): Promise<void>
  /** Stops following the hub's events; the hub stays open. */
  close(): Promise<void>
  listTools(): Promise<HubMCPTool[]>
  callTool(
    toolName: string,
    args: Record<string, unknown> | null,
    meta?: Record<string, unknown> | null,
    options?: { signal?: AbortSignal },
  ): Promise<HubCallToolResultContent>
  callToolResult(
    toolName: string,
    args: Record<string, unknown> | null,
    meta?: Record<string, unknown> | null,
    options?: { signal?: AbortSignal },
  ): Promise<CallToolResult & { content: Array<{ type: string; [key: string]: unknown }> }>
  invalidateToolsCache(): Promise<void>
  listResources(): Promise<{ resources: Listed[] }>
  listResourceTemplates(): Promise<{ resourceTemplates: Listed[] }>
  readResource(uri: string): Promise<{ contents: Array<{ uri: string; [key: string]: unknown }>; [key: string]: unknown }>
}
