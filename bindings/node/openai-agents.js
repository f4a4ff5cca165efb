'use strict'
// mcpmux/openai-agents: a hub as an MCP server of the OpenAI Agents SDK
// (@openai/agents).
//
//   const { HubMCPServer } = require('mcpmux/openai-agents')   // or import
//   const agent = new Agent({ name, instructions, mcpServers: [new HubMCPServer(hub, { policy })] })
//
// HubMCPServer implements the SDK's MCPServer interface and needs nothing
// from the SDK at run time, except its tool cache when `cacheToolsList` is
// set (then @openai/agents-core is taken from the host's project).

const common = require('./adapters.js')

const ADAPTER = 'mcpmux/openai-agents'

/** The content array of a result, with `isError`, `structuredContent` and `_meta` attached as the SDK's own servers do. */
function contentOf(result) {
  const content = Array.isArray(result.content) && result.content.length > 0
    ? result.content.slice()
    : [{ type: 'text', text: common.renderText(result) }]
  for (const key of ['_meta', 'structuredContent', 'isError']) {
    if (result[key] !== undefined) {
      Object.defineProperty(content, key, { value: result[key], enumerable: false, configurable: true })
    }
  }
  return content
}

/**
 * A hub as an `MCPServer` for `new Agent({ mcpServers: [...] })`.
 *
 * - Tool names are the hub's (`mcp_{server}_{tool}`); tools of a failed
 *   server are left out, and with `policy` only the tools it offers.
 * - Calls go through `policy` (allow lists, destructive refusal, limits,
 *   redaction, audit), with text output framed as untrusted data
 *   (`frameOutput: false` turns that off).
 * - A refused or failed call resolves to an `isError` result whose text
 *   (`TOOL_NOT_ALLOWED: ...`) the model reads; it never throws into the
 *   SDK, whose default error handler would hide the text. Results the
 *   server marked `isError` reach the model as they are.
 * - The run's abort signal cancels the MCP call.
 * - Progress notifications go to `onProgress(progress, {toolName})` (the
 *   SDK has no place for them).
 * - The tool list follows `tools_changed`: the SDK lists tools again on each
 *   turn; with `cacheToolsList: true` the SDK's cache is invalidated on each
 *   `tools_changed`.
 * - `connect()` does nothing (the hub is connected) and `close()` stops
 *   watching the hub; the hub stays open (close it yourself).
 */
class HubMCPServer {
  /**
   * @param {import('./index.js').Hub} hub
   * @param {{name?: string, policy?: import('./index.js').Policy, cacheToolsList?: boolean, frameOutput?: boolean, onProgress?: Function, toolFilter?: unknown}} [options]
   */
  constructor(hub, options = {}) {
    const opts = options ?? {}
    common.checkOptions(opts, ['name', 'policy', 'cacheToolsList', 'frameOutput', 'onProgress', 'toolFilter'], ADAPTER)
    common.checkHub(hub, opts.policy, ADAPTER)
    if (opts.onProgress !== undefined && opts.onProgress !== null && typeof opts.onProgress !== 'function') {
      throw new TypeError(`${ADAPTER}: onProgress must be a function`)
    }
    /** @private */
    this._hub = hub
    /** @private */
    this._policy = opts.policy ?? undefined
    /** @private */
    this._name = opts.name ?? 'mcpmux'
    /** @private */
    this._frameOutput = opts.frameOutput
    /** @private */
    this._onProgress = opts.onProgress ?? undefined
    /** @private */
    this._cached = undefined
    this.cacheToolsList = opts.cacheToolsList === true
    if (opts.toolFilter !== undefined) this.toolFilter = opts.toolFilter
    /**
     * Anything a call throws other than a cancellation becomes an error
     * result already; this keeps the text of whatever else goes wrong.
     */
    this.errorFunction = ({ error }) => `Error: ${error && error.message ? error.message : String(error)}`
    /** @private */
    this._watch = common.watchTools(hub, this, (server) => server.invalidateToolsCache())
  }

  /** The server's name in the SDK (traces, tool filters): `mcpmux` unless given. */
  get name() {
    return this._name
  }

  /** Nothing to do: the hub is connected already. */
  async connect() {}

  /** Stops following the hub's events. The hub stays open. */
  async close() {
    this._watch.stop()
  }

  /** The tools, in the SDK's `MCPTool` shape, under the hub's names. */
  async listTools() {
    if (this.cacheToolsList && this._cached) return this._cached
    const list = await common.toolList(this._hub, this._policy)
    const tools = list.map((t) => {
      const inputSchema = common.objectSchema(t.input_schema)
      if (inputSchema.required === undefined) inputSchema.required = []
      // The SDK's MCPTool has it; absent, the SDK treats the schema as non-strict either way.
      if (typeof inputSchema.additionalProperties !== 'boolean') inputSchema.additionalProperties = false
      const tool = { name: t.name, description: common.describeTool(t), inputSchema }
      if (t.title) tool.title = t.title
      if (t.annotations) tool.annotations = t.annotations
      if (t.output_schema) tool.outputSchema = t.output_schema
      return tool
    })
    if (this.cacheToolsList) this._cached = tools
    return tools
  }

  /**
   * The full MCP `CallToolResult` of a call (refusals and failures as
   * `isError` results; a cancellation rejects).
   */
  async callToolResult(toolName, args, _meta, options) {
    const onProgress = this._onProgress
    return common.callForModel(this._hub, toolName, args ?? {}, {
      policy: this._policy,
      signal: options && options.signal,
      onProgress: onProgress ? (p) => onProgress(p, { toolName }) : undefined,
      frameOutput: this._frameOutput,
    })
  }

  /** The content of a call's result, with `isError` (and `structuredContent`, `_meta`) attached. */
  async callTool(toolName, args, meta, options) {
    return contentOf(await this.callToolResult(toolName, args, meta, options))
  }

  /** Forgets the cached tool list, here and in the SDK's cache. */
  async invalidateToolsCache() {
    this._cached = undefined
    if (!this.cacheToolsList) return
    const core = await common.importFromHost('@openai/agents-core', ADAPTER, '@openai/agents').catch(() => null)
    if (core && typeof core.invalidateServerToolsCache === 'function') await core.invalidateServerToolsCache(this._name)
  }

  /** `{resources}`: every resource of the hub. */
  async listResources() {
    return { resources: await this._hub.listResources() }
  }

  /** `{resourceTemplates}`: every resource template of the hub. */
  async listResourceTemplates() {
    return { resourceTemplates: await this._hub.listResourceTemplates() }
  }

  /** The MCP `ReadResourceResult` of `uri`. */
  async readResource(uri) {
    return this._hub.readResource(uri)
  }
}

module.exports = { HubMCPServer }
