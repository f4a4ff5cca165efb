// Type definitions for the `mcpmux` package (the public API of index.js /
// index.mjs). The native addon's own generated types are in native.d.ts.

/** The stable error codes (docs/errors.md#codes), the same in every front end. */
export type ErrorCode =
  | 'CONFIG_INVALID'
  | 'INVALID_INPUT'
  | 'UNKNOWN_SERVER'
  | 'UNKNOWN_TOOL'
  | 'TOOL_NOT_ALLOWED'
  | 'CONNECT_FAILED'
  | 'TRANSPORT_CLOSED'
  | 'TIMEOUT'
  | 'CANCELLED'
  | 'PROTOCOL_ERROR'
  | 'SERVER_ERROR'
  | 'LIMIT_EXCEEDED'
  | 'PROVIDER_ERROR'
  | 'UNKNOWN_SKILL'
  | 'REVIEWER_NOT_FOUND'
  | 'INVALID_SESSION'
  | 'ROUND_STILL_RUNNING'
  | 'INTERNAL'
  | 'AUTH_REQUIRED'
  | 'AUTH_FAILED'
  | 'CONFIG_UNTRUSTED'
  | 'OUTPUT_INVALID'
  | 'TOOL_CHANGED'

/** Every error code, in the engine's order. */
export declare const ERROR_CODES: readonly ErrorCode[]

/** The version of the mcpmux engine inside the native addon. */
export declare const version: string

/**
 * An error from mcpmux. Every rejection of a {@link Hub} method is one.
 *
 * @example
 * try { await hub.callTool('mcp_fs_read', { path }) }
 * catch (e) { if (e instanceof McpmuxError && e.code === 'TIMEOUT') retry() }
 */
export declare class McpmuxError extends Error {
  constructor(code: ErrorCode, message: string, extra?: { rpcCode?: number; data?: unknown; cause?: unknown })
  readonly name: 'McpmuxError'
  /** What went wrong, as a stable code (docs/errors.md#codes). */
  readonly code: ErrorCode
  /** The JSON-RPC error code the server sent (`SERVER_ERROR` only). */
  readonly rpcCode?: number
  /** The `data` member of the server's JSON-RPC error, when it sent one. */
  readonly data?: unknown
}

/** One server entry of the JSON config shape (`.mcp.json`). */
export interface ServerEntry {
  /** `stdio` (default when `command` is set), `http`, `streamable-http`, `sse`, `websocket`, `ws`. */
  type?: string
  command?: string
  args?: string[]
  env?: Record<string, string>
  cwd?: string
  url?: string
  headers?: Record<string, string>
  enabled?: boolean
  /** Per-request timeout; progress notifications reset it. */
  timeout_seconds?: number
  max_total_timeout_seconds?: number
  max_message_bytes?: number
  protocol_version?: string
  [key: string]: unknown
}

/**
 * A config object: the JSON shape other MCP clients use
 * (`{ mcpServers: { name: entry } }`) or the TOML shape as an object
 * (`{ mcp: { servers: [{ name, ...entry }] } }`). `${VAR}` and
 * `${VAR:-default}` expand in every string.
 */
export type ConfigObject =
  | { mcpServers: Record<string, ServerEntry>; [key: string]: unknown }
  | { mcp: { servers: Array<ServerEntry & { name: string }>; [key: string]: unknown }; [key: string]: unknown }

/**
 * What {@link Hub.connect} accepts: a file path or `file:` URL (TOML, or
 * JSON for `.json`), TOML or JSON text, or a config object. A string naming
 * an existing file is that file; otherwise it is text when it starts with
 * `{`, has a line break or is valid TOML, and else a path (the engine's one
 * rule for every front end).
 */
export type Config = string | URL | ConfigObject

/** The health of one configured server (an object of `mcpmux servers --json`). */
export interface ServerStatus {
  name: string
  type: 'stdio' | 'http' | 'sse' | 'websocket'
  /** `idle`: `lazy = true` and not used yet (starts on first use). */
  state: 'connected' | 'failed' | 'restarting' | 'disabled' | 'idle' | 'starting'
  protocol_version: string | null
  server_info: { name: string; version: string; [key: string]: unknown } | null
  /** The capabilities the server declared, its `extensions` included; null until connected. */
  capabilities: { extensions?: Record<string, unknown>; [key: string]: unknown } | null
  tool_count: number
  /** Why it failed, when it did. */
  error: string | null
  error_code: ErrorCode | null
}

/** One tool as the hub offers it (an object of `mcpmux tools --json`). */
export interface HubTool {
  /** Hub-wide name, `mcp_{server}_{tool}`: pass it to {@link Hub.callTool}. */
  name: string
  server: string
  /** The server's own name for the tool. */
  tool: string
  title: string | null
  description: string | null
  input_schema: Record<string, unknown>
  output_schema: Record<string, unknown> | null
  annotations: Record<string, unknown> | null
  /** `execution` as the server sent it (e.g. `{ taskSupport: 'required' }`). */
  execution?: Record<string, unknown>
  /** `icons` as the server sent them. */
  icons?: unknown[]
  /** `_meta` as the server sent it. */
  _meta?: Record<string, unknown>
  /** MCP Apps: the `ui://` resource of the tool's app (read from `_meta`). */
  ui_resource_uri?: string
  /** MCP Apps: only its app may call it; never offered to a model. */
  app_only?: true
}

/** An MCP content block (`text`, `image`, `audio`, `resource_link`, `resource`). */
export interface ContentBlock {
  type: string
  text?: string
  [key: string]: unknown
}

/** The MCP `CallToolResult`, exactly as the server sent it. */
export interface CallToolResult {
  content: ContentBlock[]
  structuredContent?: Record<string, unknown>
  /** `true` when the tool itself failed (the call still resolves). */
  isError?: boolean
  _meta?: Record<string, unknown>
  [key: string]: unknown
}

/** A progress notification of a pending call. */
export interface Progress {
  progress: number
  total?: number
  message?: string
}

/**
 * The options of {@link Hub.callTool}: core's call-options contract
 * (`mcpmux_core::contract`, docs/call-options.md), durations in
 * milliseconds, each at most 1e12 (core's cap, the same in every front
 * end; else `INVALID_INPUT` naming the option), plus Node's `signal` and
 * `policy`.
 */
export interface CallOptions {
  /** Time allowed without a response or progress (default: the server's `timeout_seconds`). */
  timeoutMs?: number
  /** Upper bound of the whole call however much progress arrives (default: the server's `max_total_timeout_seconds`). */
  maxTotalTimeoutMs?: number
  /** How long the server keeps a task this call creates (default: the server chooses). */
  taskTtlMs?: number
  /** The call's W3C trace context (default: the active OpenTelemetry span, if any). */
  traceparent?: string
  /** The W3C tracestate that goes with `traceparent`. */
  tracestate?: string
  /**
   * What a result whose `structuredContent` does not satisfy the tool's
   * `outputSchema` becomes: `'error'` (`OUTPUT_INVALID`, the default),
   * `'warn'` (returned, with a `log` event of level `warning`) or `'off'`.
   */
  validateOutput?: 'error' | 'warn' | 'off'
  /**
   * Cancels the call: the server is sent `notifications/cancelled` and the
   * promise rejects at once with an {@link McpmuxError} `CANCELLED` whose
   * `cause` is the signal's reason.
   */
  signal?: AbortSignal
  /** Called on the JavaScript thread for each progress notification. */
  onProgress?: (progress: Progress) => void
  /**
   * Runs the call through this policy (from {@link Hub.policy}): a tool it
   * does not offer rejects with `TOOL_NOT_ALLOWED`, a call past
   * `maxToolCalls` with `LIMIT_EXCEEDED` (the server is not asked); the
   * result's text is redacted and capped; the call is audited.
   */
  policy?: Policy
  /**
   * Runs a tool whose `execution.taskSupport` is `optional` as an MCP task
   * (`required` ones always are): the call polls the task and resolves to
   * its result.
   */
  task?: boolean
}

/** What {@link Hub.callToolAsTask} resolves to: keep it to find the task again. */
export interface TaskHandle {
  server: string
  task_id: string
}

/** One MCP task as its server reports it ({@link Hub.task}). */
export interface TaskInfo {
  server: string
  task_id: string
  status: 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled'
  message?: string
  created_at?: string
  last_updated_at?: string
  ttl_ms?: number
  poll_interval_ms?: number
}

/** Options of {@link Hub.policy}; they go over the config's `[session]` table. */
export interface PolicyOptions {
  /** The session scope, matched against a server's `scopes`. */
  scope?: string
  /** Most calls allowed with this policy (refused ones count). */
  maxToolCalls?: number
  /** Time allowed for one call (progress cannot extend it); or `callTimeoutSeconds`. */
  callTimeoutMs?: number
  callTimeoutSeconds?: number
  /** Text of a result is cut to this many bytes (after redaction). */
  maxOutputBytes?: number
  /** Redaction rules added to the built-in ones; only a `secret` group is replaced when present. */
  redact?: Array<{ name: string; pattern: string }>
  /** Pin tool definitions: a tool that changed since it was approved, or a new one, is refused with `TOOL_CHANGED`. */
  pinTools?: boolean
  /** A file that gets one JSON line per call (created or appended to). */
  auditPath?: string | URL
  /** Called on the JavaScript thread shortly after each call made with the policy. */
  onAudit?: (event: AuditEvent) => void
}

/** One audited call (never its output or argument values). */
export interface AuditEvent {
  /** RFC 3339, UTC, milliseconds. */
  time: string
  /** The configured server; `null` when the name matched no tool. */
  server: string | null
  /** The server's own tool name (or the name asked for when unknown). */
  tool: string
  status: 'ok' | 'error' | 'not_allowed' | 'limit_exceeded' | 'timeout'
  /** Size of the server's result in bytes (0 when it was not asked). */
  bytes: number
  duration_ms: number
  /** Secrets replaced in the output. */
  redactions: number
  /** The output was cut at `max_output_bytes`. */
  truncated: boolean
  /** The error code of a refusal or failure. */
  code?: ErrorCode
}

/** One tool and the policy's decision (an entry of `mcpmux policy --json`). */
export interface ToolVerdict {
  name: string
  server: string
  tool: string
  offered: boolean
  refusal?: 'out_of_scope' | 'denied' | 'not_allowed' | 'destructive' | 'not_read_only' | 'unknown_tool' | 'tool_changed'
  /** The refusal in words, naming the config key that would change it. */
  reason?: string
}

/** What {@link Policy.report} gives: the JSON of `mcpmux policy --json`. */
export interface PolicyReport {
  scope: string | null
  servers: Array<{
    name: string
    state: 'connected' | 'failed' | 'restarting' | 'disabled' | 'idle' | 'starting'
    scopes: string[]
    in_scope: boolean
    /** Hub names of the tools offered. */
    offered: string[]
    refused: ToolVerdict[]
    /** Exact names in `allow_tools` the server does not offer. */
    missing: string[]
    /** Whether the server's tool definitions are pinned (`pin_tools`). */
    pinned?: boolean
    /** Each tool's pin status, when pinned. */
    pins?: PinEntry[] | null
  }>
}

/** A tool's pinned definition against what its server lists now. */
export interface PinEntry {
  server: string
  tool: string
  status: 'pinned' | 'changed' | 'new' | 'removed'
  /** What changed (`changed` only); quotes the server's text: for the operator. */
  changes?: {
    fields: string[]
    description?: { before: string; after: string }
    added?: string[]
    removed?: string[]
    changed?: string[]
    unknown?: boolean
  }
  pinned_at?: number
}

/** What {@link Policy.refresh} found (tool names are the server's own). */
export interface RefreshReport {
  server: string
  offered: string[]
  /** Offered before, not any more. */
  dropped: string[]
  added: string[]
  /** Exact names in `allow_tools` the server does not offer. */
  missing: string[]
}

/**
 * A tool-use policy for a hub's calls: allow lists, limits, redaction and
 * audit (the rules a review session's model runs under). Made by
 * {@link Hub.policy}; used as `hub.callTool(name, args, { policy })`.
 */
export declare class Policy {
  private constructor()
  /** Calls made with this policy so far, refused ones included. */
  readonly callsMade: number
  /** The tools this policy offers; later calls are limited to these. */
  offered(): Promise<HubTool[]>
  /** Every tool with the policy's decision. */
  verdicts(): Promise<ToolVerdict[]>
  /** The effective allow list per server (`mcpmux policy --json`). */
  report(): Promise<PolicyReport>
  /** The audit events of the calls made so far, oldest first. */
  auditEvents(): AuditEvent[]
  /** Reconnects `server`, lists its tools again and reports what changed for this policy. */
  refresh(server: string): Promise<RefreshReport>
  /** Each pinned tool's status, of `server` or of every pinned server. */
  pins(server?: string): Promise<PinEntry[]>
  /** Approves the definitions the servers list now (all of `server`'s when `tools` is empty). */
  approveTools(server?: string, tools?: string[]): Promise<Array<{ server: string; tool: string }>>
  /** Forgets pins: a server without pins is pinned again when next seen; a tool without one is new. */
  revokePins(server?: string, tools?: string[]): Promise<Array<{ server: string; tool: string }>>
}

export interface ServerOption {
  /** Only this server (by its configured name). */
  server?: string
}

/** A resource, resource template or prompt as the server lists it, plus `server`. */
export interface Listed {
  server: string
  name: string
  /** A `ui://` resource (MCP Apps): hub names of the tools whose app it is. */
  app_of?: string[]
  [key: string]: unknown
}

/**
 * Many MCP servers behind one tool list. Every method returns a Promise;
 * engine work runs on the addon's own threads, never on the event loop.
 * An open hub never keeps the process alive; its servers end with the
 * process, or when the hub is garbage collected. Call {@link Hub.close}
 * to stop them gracefully.
 */
/** Options of {@link Hub.connect}. */
export interface ConnectOptions {
  /**
   * The person in the loop for servers with `auth.type = "oauth"`: opens
   * `url` (a browser) and resolves to the URL the authorization server
   * redirected to. Without it such a server fails with `AUTH_REQUIRED` when
   * it needs a new authorization.
   */
  authorize?: (url: string, redirectUri: string, server: string) => string | Promise<string>
  /**
   * Added as an `'event'` listener before the servers start, so it also
   * sees each server's first `server_state`. Called on the JavaScript thread.
   */
  onEvent?: (event: HubEvent) => void
  /**
   * How long `connect` waits for the servers to come up. Without it, until
   * every server is connected or has failed; with it, at most this many
   * milliseconds: servers not up by then show as `starting` and come up in
   * the background (a `tools_changed` event lists their tools).
   */
  startupTimeoutMs?: number
  /**
   * Answers a server's `elicitation/create` (params as the server sent
   * them): `{action: 'accept', content: {...}}`, `{action: 'decline'}` or
   * `{action: 'cancel'}`. Declares the `elicitation` capability.
   */
  onElicitation?: (params: Record<string, any>) => ElicitResult | Promise<ElicitResult>
  /**
   * Answers a server's `sampling/createMessage` with a `CreateMessageResult`.
   * Declares the `sampling` capability.
   */
  onSampling?: (params: Record<string, any>) => Record<string, any> | Promise<Record<string, any>>
  /**
   * Directories shared with servers (`roots/list`): paths, `file://` URIs
   * or file: URLs. Declares the `roots` capability (`listChanged`).
   */
  roots?: Array<string | URL>
  /**
   * Refuse to connect to loopback, private, link-local (169.254.169.254),
   * CGNAT, unique-local, multicast and unspecified addresses, judged on the
   * resolved address at connect time, for every connection (servers,
   * redirects, OAuth endpoints). Adds to the config's `[network]`
   * `deny_private`.
   */
  denyPrivate?: boolean
  /** Networks still reached with `denyPrivate` (`'10.1.2.0/24'`, or one address). */
  allowNetworks?: string[]
  /** Only https and wss URLs (http to loopback only without `denyPrivate`). */
  requireHttps?: boolean
}

/** What an `onElicitation` handler returns. */
export interface ElicitResult {
  action: 'accept' | 'decline' | 'cancel'
  content?: Record<string, unknown>
  [key: string]: unknown
}

/** One root shared with servers. */
export interface Root {
  uri: string
  name?: string
}

/** A server's connection state changed. */
export interface ServerStateEvent {
  type: 'server_state'
  server: string
  /** `removed`: a reload closed the server (its name left the config). */
  state: 'connected' | 'failed' | 'restarting' | 'disabled' | 'removed'
  /** Why, when `failed` or `restarting`. */
  error?: string
  /** The error's stable code, with `error`. */
  code?: ErrorCode
  /** Restart attempts since the server was last healthy (0 for the first start). */
  attempt: number
}

/** A server's tool list changed (hub names). */
export interface ToolsChangedEvent {
  type: 'tools_changed'
  server: string
  added: string[]
  removed: string[]
}

/**
 * A policy with pinned tool definitions quarantined a tool: it changed
 * since it was approved (`changes` names the fields) or is new (`["new"]`).
 */
export interface ToolQuarantinedEvent {
  type: 'tool_quarantined'
  server: string
  tool: string
  changes: string[]
}

/** A server's resource or prompt list changed. */
export interface ListChangedEvent {
  type: 'resources_changed' | 'prompts_changed' | 'events_changed'
  server: string
}

/** A subscribed resource changed (see {@link Hub.subscribe}). */
export interface ResourceUpdatedEvent {
  type: 'resource_updated'
  server: string
  uri: string
}

/** A server's log message (see {@link Hub.setLogLevel}). */
export interface LogEvent {
  type: 'log'
  server: string
  level: 'debug' | 'info' | 'notice' | 'warning' | 'error' | 'critical' | 'alert' | 'emergency'
  logger?: string
  data: unknown
}

/** A task's status changed. */
export interface TaskStatusEvent {
  type: 'task_status'
  server: string
  task_id: string
  status: 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled'
  message?: string
}

/**
 * An occurrence pushed on a stream of {@link Hub.streamEvents} (events
 * extension); `subscription` is the stream's {@link EventStream.id}.
 */
export interface EventOccurrenceEvent {
  type: 'event'
  server: string
  subscription: number
  name: string
  event_id: string
  timestamp?: string
  data: unknown
  /** The cursor to resume after this occurrence (absent: no replay). */
  cursor?: string
}

/**
 * The state of a stream of {@link Hub.streamEvents} changed: `active` (the
 * server confirmed it; again with `truncated` after a gap), `error` (a
 * transient error, the stream stays open), `reconnecting` (no heartbeat in
 * time: sent again from its cursor), `terminated` (the server ended the
 * subscription), `ended` (the server closed the stream) or `failed`.
 */
export interface EventStreamEvent {
  type: 'event_stream'
  server: string
  subscription: number
  state: 'active' | 'error' | 'reconnecting' | 'terminated' | 'ended' | 'failed'
  cursor?: string
  truncated: boolean
  error?: string
  /** The server's JSON-RPC error code (`error`, `terminated`). */
  error_code?: number
  /** The server's error `data` (`error`, `terminated`; at most 4 KiB, redacted). */
  error_data?: unknown
}

/** This consumer fell behind: `count` older events were lost. */
export interface LaggedEvent {
  type: 'lagged'
  count: number
}

/** One event of a hub. */
export type HubEvent =
  | ServerStateEvent
  | ToolsChangedEvent
  | ToolQuarantinedEvent
  | ListChangedEvent
  | ResourceUpdatedEvent
  | LogEvent
  | TaskStatusEvent
  | EventOccurrenceEvent
  | EventStreamEvent
  | LaggedEvent

/** What to complete with {@link Hub.complete}. */
export type CompletionRef = { type: 'ref/prompt'; name: string } | { type: 'ref/resource'; uri: string }

/** The server's `completion` object. */
export interface CompletionResult {
  values: string[]
  total?: number
  hasMore?: boolean
  [key: string]: unknown
}

/**
 * Many MCP servers behind one tool list, and an EventEmitter of its events:
 * `hub.on('event', (event) => ...)` runs on the JavaScript thread; listening
 * never keeps the process alive, and delivery stops when the hub is closed.
 */
/** One occurrence of an event type, as {@link Hub.pollEvents} returns it. */
export interface EventOccurrence {
  event_id: string
  name: string
  timestamp?: string
  data: unknown
}

/** A page of {@link Hub.pollEvents}. */
export interface EventsPage {
  /** The occurrences, oldest first. */
  events: EventOccurrence[]
  /** The cursor to keep and poll from next (`null`: the event type has no replay). */
  cursor: string | null
  /** Occurrences were lost before these (a stale cursor); never an error. */
  truncated: boolean
  /** More are ready: poll again at once. */
  has_more: boolean
  /** When to poll next, in milliseconds (1000 to 3600000). */
  next_poll_ms: number
}

/** Options of {@link Hub.pollEvents}. */
export interface PollEventsOptions {
  /** The subscription's arguments (a plain object). */
  arguments?: Record<string, unknown> | null
  /** Where to start (absent: from now). */
  cursor?: string | null
  /** Most occurrences to return (capped at 1000). */
  maxEvents?: number | null
  /**
   * Replay nothing older than this many milliseconds, even from an older
   * cursor (`maxAgeMs`); the page says `truncated` when that left some out.
   */
  maxAgeMs?: number | null
}

/** Options of {@link Hub.streamEvents}. */
export interface StreamEventsOptions {
  arguments?: Record<string, unknown> | null
  cursor?: string | null
  /** As for {@link PollEventsOptions.maxAgeMs}. */
  maxAgeMs?: number | null
  /**
   * The server's heartbeat interval (default 30000): after twice it without
   * a message the stream is sent again from its cursor.
   */
  heartbeatMs?: number | null
}

/** Options of {@link Hub.subscribeEvents}. */
export interface SubscribeEventsOptions {
  arguments?: Record<string, unknown> | null
  cursor?: string | null
  /** How long the subscription is to last, in milliseconds. */
  ttlMs?: number | null
  /** A subscription that never expires (`ttlMs: null` on the wire); not with `ttlMs`. */
  noExpiry?: boolean
  /** As for {@link PollEventsOptions.maxAgeMs}. */
  maxAgeMs?: number | null
}

/** A webhook subscription as the server answered {@link Hub.subscribeEvents}. */
export interface WebhookSubscription {
  id: string
  /** Subscribe again before this (ISO 8601) to keep it. */
  refresh_before?: string
  cursor?: string
  truncated: boolean
  delivery_status?: Record<string, unknown>
}

/**
 * An open stream of an event type ({@link Hub.streamEvents}). Its
 * occurrences arrive on the hub's events as `event` objects.
 */
export declare class EventStream {
  private constructor()
  /** The stream's id: the `subscription` of its events. */
  readonly id: number
  /** The latest cursor: keep it to resume, also after a restart. */
  readonly cursor: string | null
  /** Ends the stream; calling it again does nothing. */
  stop(): void
}

export declare class Hub {
  private constructor()

  // The EventEmitter methods (Hub extends node:events' EventEmitter; typed
  // here without @types/node).
  on(eventName: 'event', listener: (event: HubEvent) => void): this
  on(eventName: string | symbol, listener: (...args: any[]) => void): this
  once(eventName: 'event', listener: (event: HubEvent) => void): this
  once(eventName: string | symbol, listener: (...args: any[]) => void): this
  off(eventName: 'event', listener: (event: HubEvent) => void): this
  off(eventName: string | symbol, listener: (...args: any[]) => void): this
  addListener(eventName: 'event', listener: (event: HubEvent) => void): this
  addListener(eventName: string | symbol, listener: (...args: any[]) => void): this
  removeListener(eventName: 'event', listener: (event: HubEvent) => void): this
  removeListener(eventName: string | symbol, listener: (...args: any[]) => void): this
  removeAllListeners(eventName?: string | symbol): this
  emit(eventName: string | symbol, ...args: any[]): boolean
  listenerCount(eventName: string | symbol): number

  /**
   * Starts every enabled server at once. A server that fails to start is
   * marked failed (see {@link Hub.servers}) and the others work; only an
   * invalid config rejects (`CONFIG_INVALID`).
   */
  static connect(config: Config, options?: ConnectOptions): Promise<Hub>

  /** Whether {@link Hub.close} was called. */
  readonly closed: boolean

  /**
   * Replaces the roots shared with servers and tells every connected
   * server. Throws `INVALID_INPUT` on a hub connected without `roots`.
   */
  setRoots(roots: Array<string | URL>): void

  /** The roots shared with servers now. */
  readonly roots: Root[]

  /** The status of every configured server, in config order. */
  servers(): Promise<ServerStatus[]>

  /**
   * Every tool of every connected server. When servers failed, a process
   * warning (`McpmuxWarning`) names them (once per distinct note).
   */
  listTools(): Promise<HubTool[]>

  /**
   * One line naming the servers that failed (their tools are missing from
   * the lists), with their error codes; `null` when none did.
   */
  failedServersNote(): string | null

  /**
   * The tools matching `query`, best first, at most `limit` (default 10,
   * core's `SEARCH_DEFAULT_LIMIT`; 0 finds nothing, as in every front end):
   * BM25 over names, titles, descriptions and parameter names.
   */
  searchTools(query: string, limit?: number): Promise<HubTool[]>

  /** The tool list rendered for an LLM API. */
  toolsFor(format: 'anthropic' | 'openai' | 'openai-responses' | 'mcp'): Promise<Array<Record<string, unknown>>>

  /**
   * Calls a tool by its hub name. A tool's own failure resolves with
   * `isError: true`; transport and protocol failures reject with an
   * {@link McpmuxError} (`UNKNOWN_TOOL`, `TIMEOUT`, `CANCELLED`,
   * `TRANSPORT_CLOSED`, `PROTOCOL_ERROR`, `SERVER_ERROR`, ...).
   */
  callTool(name: string, args?: Record<string, unknown> | null, options?: CallOptions): Promise<CallToolResult>

  /** Every resource of every server (or of `options.server`). */
  listResources(options?: ServerOption): Promise<Listed[]>

  /** Every resource template of every server (or of `options.server`). */
  listResourceTemplates(options?: ServerOption): Promise<Listed[]>

  /** Reads a resource (the MCP `ReadResourceResult`). */
  readResource(uri: string, options?: ServerOption): Promise<{ contents: Array<Record<string, unknown>>; [key: string]: unknown }>

  /** Every prompt of every server (or of `options.server`). */
  listPrompts(options?: ServerOption): Promise<Listed[]>

  /** Gets a prompt (the MCP `GetPromptResult`). */
  getPrompt(
    name: string,
    args?: Record<string, string> | null,
    options?: ServerOption,
  ): Promise<{ messages: Array<Record<string, unknown>>; description?: string; [key: string]: unknown }>

  /**
   * Reconnects a server and lists its tools again. For what that changed in
   * a policy's allow list, use {@link Policy.refresh}.
   */
  refresh(server: string): Promise<void>

  /**
   * Applies a new configuration (anything {@link Hub.connect} accepts):
   * servers whose entry is unchanged stay connected (same process), removed
   * ones are closed, added ones started (unless `lazy`), changed ones
   * restarted. `server_state` and `tools_changed` events tell what
   * happened. A malformed config rejects with `CONFIG_INVALID`.
   */
  reload(config: Config): Promise<void>

  /**
   * The hub's events from now on, in order; ends once the hub is closed
   * (after the events closing sent). A consumer more than 1024 events
   * behind loses the oldest and gets `{type: 'lagged', count}`. Throws
   * `TRANSPORT_CLOSED` on a closed hub.
   */
  events(): AsyncIterableIterator<HubEvent>

  /** Pings a server; resolves to the round-trip time in seconds. */
  /** Starts a tool as an MCP task without waiting; resolves to its handle. */
  callToolAsTask(name: string, args?: Record<string, unknown> | null, options?: { timeoutMs?: number; taskTtlMs?: number }): Promise<TaskHandle>
  /** The status of a task (`tasks/get`). */
  task(server: string, taskId: string): Promise<TaskInfo>
  /** Waits for a task to end; its result (a cancelled task rejects with `CANCELLED`). */
  taskResult(server: string, taskId: string, options?: { timeoutMs?: number }): Promise<CallToolResult>
  /** Cancels a task (`tasks/cancel`); the task as the server now reports it. */
  cancelTask(server: string, taskId: string): Promise<TaskInfo>
  /** The tasks a server keeps for this hub (`tasks/list`). */
  listTasks(server: string): Promise<TaskInfo[]>
  ping(server: string): Promise<number>

  /**
   * Asks a server for log messages at `level` or above; they arrive as
   * `log` events. Another level rejects with `INVALID_INPUT`.
   */
  setLogLevel(server: string, level: LogEvent['level']): Promise<void>

  /**
   * Completes a prompt argument or a resource-template variable
   * (`completion/complete`); resolves to the server's `completion`.
   */
  complete(
    ref: CompletionRef,
    argument: { name: string; value: string },
    context?: { arguments?: Record<string, string> } | null,
    server?: string | ServerOption | null,
  ): Promise<CompletionResult>

  /** Subscribes to changes of a resource; they arrive as `resource_updated` events. */
  subscribe(uri: string, server?: string | ServerOption | null): Promise<void>

  /** Ends a subscription made with {@link Hub.subscribe}. */
  unsubscribe(uri: string, server?: string | ServerOption | null): Promise<void>

  /**
   * The event types of every server offering the events extension, or of
   * `server`, each with a `server` member. A named server without the
   * extension rejects with `INVALID_INPUT`.
   */
  listEvents(server?: string | ServerOption | null): Promise<Array<Record<string, unknown> & { server: string; name: string }>>

  /** Polls an event type from a cursor (`events/poll`). */
  pollEvents(server: string, name: string, options?: PollEventsOptions): Promise<EventsPage>

  /** Opens a stream of an event type; its occurrences arrive as `event` events. */
  streamEvents(server: string, name: string, options?: StreamEventsOptions): Promise<EventStream>

  /** Subscribes a webhook to an event type (`https`, or `http` to a loopback address). */
  subscribeEvents(
    server: string,
    name: string,
    url: string,
    secret: string,
    options?: SubscribeEventsOptions,
  ): Promise<WebhookSubscription>

  /** Ends a webhook subscription made with {@link Hub.subscribeEvents}. */
  unsubscribeEvents(
    server: string,
    name: string,
    url: string,
    options?: { arguments?: Record<string, unknown> | null },
  ): Promise<void>

  /**
   * A tool-use policy for this hub's calls (see {@link Policy}). Throws an
   * {@link McpmuxError} (`INVALID_INPUT`) naming a bad option.
   */
  policy(options?: PolicyOptions): Policy

  /**
   * Closes every server (stdin, then SIGTERM, then SIGKILL) and waits until
   * they are gone. Later calls reject with `TRANSPORT_CLOSED`.
   */
  close(): Promise<void>
}

// ---------------------------------------------------------------------------
// Review sessions (docs/sessions.md#review-sessions)

/** A message of a host reviewer's conversation. */
export interface SessionMessage {
  role: 'user' | 'assistant'
  text?: string
  tool_calls?: Array<{ id: string; name: string; arguments: Record<string, unknown> }>
  /** Results of the previous assistant message's tool calls, in order. */
  tool_results?: Array<{ call_id: string; content: string; is_error: boolean }>
}

/** What a host reviewer is asked: the next assistant message of the conversation. */
export interface CompletionRequest {
  model: string | null
  effort: string | null
  system: string
  messages: SessionMessage[]
  /** The tools the reviewer may call (hub tools through the policy, and `submit_review`). */
  tools: Array<{ name: string; description: string; input_schema: Record<string, unknown> }>
  max_tokens: number
}

/** A host reviewer's answer: text and optional tool calls (`arguments` an object or JSON text), or just the text. */
export type Completion =
  | { text?: string; tool_calls?: Array<{ id: string; name: string; arguments?: Record<string, unknown> | string }> }
  | string

/** The `host` reviewer: called on the JavaScript thread for each model turn. A throw or rejection fails the round. */
export type HostReviewer = (request: CompletionRequest) => Completion | Promise<Completion>

export interface SessionsOptions {
  /** Servers whose tools the reviewer may call, and the `[session]` table (the same shapes as {@link Hub.connect}). */
  config?: Config
  /** The `host` reviewer (used by sessions begun with `reviewer: 'host'`). */
  host?: HostReviewer
}

export interface BeginParams {
  /** `review-plan`, `review-impl`, `review-think`, `review-pr`, or a custom template. */
  skill: string
  /** `working-tree` or `branch` (`review-impl` only). */
  mode?: string
  /** Markdown: optional `NAME: value` front matter and `## NAME` sections. */
  input: string
  working_dir?: string
  model?: string
  effort?: string
  timeout_seconds?: number
  /** `anthropic`, `openai`, `command` or `host` (default: the config's `[session] reviewer`). */
  reviewer?: string
  /** Agent-loop turns per round (default: the config's `[session] max_turns`, else 10). */
  max_turns?: number
  /** Most tool calls per round; 0 allows none (default: the config's `[session]`, else no limit). */
  max_tool_calls?: number
  /** Seconds allowed per tool call (default: the config's `[session]`). */
  call_timeout_seconds?: number
  /** Largest tool output shown to the reviewer, in bytes (default: the config's `[session]`). */
  max_output_bytes?: number
  /** The session's scope, matched against a server's `scopes` (default: the config's `[session] scope`). */
  scope?: string
  /** camelCase aliases of the snake_case fields above (derived from core's schema; setting both is `INVALID_INPUT`). */
  workingDir?: string
  timeoutSeconds?: number
  maxTurns?: number
  maxToolCalls?: number
  callTimeoutSeconds?: number
  maxOutputBytes?: number
}

export interface BeginResult {
  session_dir: string
  round: number
  status: 'running'
  /** Peer skills only. */
  analysis_prompt?: string
  [key: string]: unknown
}

export interface ReviewBlock {
  title: string
  severity?: string
  file?: string
  line?: number
  body: string
  [key: string]: unknown
}

export interface WaitResult {
  status: 'running' | 'completed' | 'failed' | 'stalled' | 'timeout'
  round: number
  elapsed_seconds: number
  thread_id: string | null
  review: { verdict: string | null; blocks: ReviewBlock[] } | null
  /** What happened since the last `wait`. */
  activities: Array<Record<string, unknown>>
  next: 'running' | 'respond' | 'cross_check' | 'done' | 'ask_user' | 'stopped'
  next_reason: string
  error?: string
  failure_reason?: string
  timeout_reason?: string
  recoverable?: boolean
  progress_observed?: boolean
  [key: string]: unknown
}

export interface ReplyResult {
  status: 'started'
  session_dir: string
  round: number
  thread_id: string | null
  [key: string]: unknown
}

export interface EndResult {
  status: 'ended'
  session_dir: string
  finalized: boolean
  verdict?: string | null
  error?: string | null
  [key: string]: unknown
}

/**
 * Review sessions: begin / wait / reply / end, kept on disk under
 * `<working_dir>/.mcpmux/sessions/`. Parameters and results use the
 * engine's JSON keys (`working_dir`, `session_dir`, `max_wait_seconds`,
 * `next_reason`, ...). Errors are {@link McpmuxError}s (`UNKNOWN_SKILL`,
 * `INVALID_INPUT`, `REVIEWER_NOT_FOUND`, `INVALID_SESSION`,
 * `ROUND_STILL_RUNNING`, `CONFIG_INVALID`).
 *
 * @example
 * const sessions = new Sessions({ config: 'mcpmux.toml', host: async (req) => callMyModel(req) })
 * const { session_dir } = await sessions.begin({ skill: 'review-plan', reviewer: 'host', input, working_dir: '.' })
 * let r; do { r = await sessions.wait({ session_dir }) } while (r.status === 'running')
 */
export declare class Sessions {
  /** Throws {@link McpmuxError} `CONFIG_INVALID` for a bad config, `INVALID_INPUT` for a bad option. */
  constructor(options?: SessionsOptions)
  /** Begins a session and its round 1 (running in the background). */
  begin(params: BeginParams): Promise<BeginResult>
  /** Waits up to `max_wait_seconds` (default 50) for the current round. */
  wait(params: { session_dir?: string; max_wait_seconds?: number; sessionDir?: string; maxWaitSeconds?: number }): Promise<WaitResult>
  /** Starts the next round on the same thread (`ROUND_STILL_RUNNING` while one runs). */
  reply(params: { session_dir?: string; input: string; model?: string; effort?: string; sessionDir?: string }): Promise<ReplyResult>
  /** Finalizes the session (`outcome` for peer skills) and stops a running round. */
  end(params: { session_dir?: string; outcome?: 'consensus' | 'stalemate'; sessionDir?: string }): Promise<EndResult>
}
