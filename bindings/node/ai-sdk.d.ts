// Types of `mcpmux/ai-sdk` (ai-sdk.mjs). They name no type of `ai`, so that
// a symlinked mcpmux type-checks without `ai` next to its real path; the
// ToolSet is assignable to the `tools` of generateText / streamText.
import type { Hub, Policy, CallToolResult, Progress } from './index.js'

/** Options of {@link tools}. */
export interface ToolsOptions {
  /** Calls go through this policy (from `hub.policy()`), and only the tools it offers are listed. */
  policy?: Policy
  /** Frame text output as untrusted data (default: true with a policy; never without one). */
  frameOutput?: boolean
  /** Called for each progress notification of a call. */
  onProgress?: (progress: Progress, call: { toolName: string; toolCallId: string }) => void
  /** Follow the hub's `tools_changed` events, updating the ToolSet in place (default true). */
  watch?: boolean
  /** The `ai` module to use instead of the one found from the current directory. */
  ai?: unknown
}

/** A preliminary tool result: one progress notification (seen in streamText's stream). */
export interface ProgressOutput extends Progress {
  type: 'progress'
}

/**
 * An AI SDK ToolSet of dynamic tools, keyed by the hub's tool names
 * (`mcp_{server}_{tool}`). A tool's final output is the MCP `CallToolResult`
 * (refusals and failures too, as `isError` results).
 */
export type McpmuxToolSet = Record<string, any>

/**
 * The hub's tools (or those `policy` offers) as a ToolSet for `generateText`
 * and `streamText` (AI SDK 7). Rejects with an Error naming `ai` when the
 * package is not installed in the host's project.
 */
export declare function tools(hub: Hub, options?: ToolsOptions): Promise<McpmuxToolSet>

/** The AI SDK model output of a tool's final result (`error-text` for `isError`). */
export declare function toModelOutput(output: CallToolResult | ProgressOutput | string):
  | { type: 'text'; value: string }
  | { type: 'error-text'; value: string }
  | { type: 'json'; value: unknown }
  | { type: 'content'; value: Array<Record<string, unknown>> }

declare const _default: { tools: typeof tools }
export default _default
