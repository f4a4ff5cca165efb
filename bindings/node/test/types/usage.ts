// Compiled (not run) by test/types.test.js with `tsc --noEmit --strict`:
// index.d.ts describes the API as the tests use it, and rejects misuse.
import { Hub, EventStream, McpmuxError, ERROR_CODES, Policy, Sessions, version } from 'mcpmux'
import type { HubEvent, CompletionResult, AuditEvent, CallToolResult, RefreshReport, ToolVerdict, CompletionRequest, ErrorCode, HubTool, Progress, ServerStatus, TaskHandle, TaskInfo, WaitResult } from 'mcpmux'

export async function usage(): Promise<void> {
  const hub: Hub = await Hub.connect({ mcpServers: { demo: { command: 'mcpmux-demo-server', timeout_seconds: 30 } } })
  await Hub.connect('mcpmux.toml')
  await Hub.connect(new URL('file:///etc/mcpmux.toml'))
  await Hub.connect({ mcp: { servers: [{ name: 'demo', command: 'x' }] } })

  const servers: ServerStatus[] = await hub.servers()
  const state: 'connected' | 'failed' | 'restarting' | 'disabled' | 'idle' | 'starting' = servers[0].state
  const tools: HubTool[] = await hub.listTools()
  const app: string | undefined = tools[0].ui_resource_uri
  const appOnly: boolean = tools[0].app_only === true
  const anthropic = await hub.toolsFor('anthropic')
  const controller = new AbortController()
  const result: CallToolResult = await hub.callTool(tools[0].name, { text: 'hi' }, {
    timeoutMs: 1000,
    signal: controller.signal,
    onProgress: (p: Progress) => console.log(p.progress, p.total, p.message),
  })
  const text: string | undefined = result.content[0].text
  const failed: boolean | undefined = result.isError
  await hub.callTool('mcp_demo_crash')
  await hub.callTool('mcp_demo_slow', { seconds: 1 }, { maxTotalTimeoutMs: 5000, taskTtlMs: 60_000, traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' })
  // @ts-expect-error durations are numbers of milliseconds
  await hub.callTool('mcp_demo_slow', {}, { maxTotalTimeoutMs: '5s' })
  await hub.callTool('mcp_demo_add', { a: 1, b: 2 }, { validateOutput: 'warn' })
  // @ts-expect-error validateOutput is 'error', 'warn' or 'off'
  await hub.callTool('mcp_demo_add', { a: 1, b: 2 }, { validateOutput: 'loud' })
  await hub.listResources({ server: 'demo' })
  await hub.listResourceTemplates()
  const read = await hub.readResource('demo://readme', { server: 'demo' })
  console.log(read.contents.length)
  const prompt = await hub.getPrompt('greet', { name: 'Ada' })
  console.log(prompt.messages.length)
  await hub.refresh('demo')
  await hub.reload({ mcpServers: { demo: { command: 'demo', lazy: true } } })
  hub.on('event', (e: HubEvent) => {
    if (e.type === 'log') console.log(e.level, e.data)
    else if (e.type === 'server_state') console.log(e.state, e.code, e.attempt)
  })
  await Hub.connect('mcpmux.toml', { onEvent: (e: HubEvent) => console.log(e.type) })
  for await (const e of hub.events()) if (e.type === 'resource_updated') console.log(e.uri)
  const rtt: number = await hub.ping('demo')
  const handle: TaskHandle = await hub.callToolAsTask('mcp_demo_research', { topic: 't' }, { timeoutMs: 1000 })
  const info: TaskInfo = await hub.task(handle.server, handle.task_id)
  if (info.status === 'input_required') console.log(info.message)
  const done: CallToolResult = await hub.taskResult(handle.server, handle.task_id, { timeoutMs: 60_000 })
  const tasks: TaskInfo[] = await hub.listTasks('demo')
  await hub.cancelTask('demo', tasks[0].task_id)
  await hub.callTool('mcp_demo_research', { topic: 't' }, { task: true })
  console.log(done.isError)
  await hub.setLogLevel('demo', 'warning')
  const completion: CompletionResult = await hub.complete({ type: 'ref/prompt', name: 'p' }, { name: 'a', value: '' }, { arguments: { b: 'x' } }, 'demo')
  await hub.subscribe('demo://readme')
  await hub.unsubscribe('demo://readme', { server: 'demo' })
  // The events extension.
  const kinds = await hub.listEvents({ server: 'ev' })
  const kindName: string = kinds[0].name
  const page = await hub.pollEvents('ev', kindName, { arguments: { queue: 'a' }, maxEvents: 10 })
  const after: string | null = page.cursor
  const waitMs: number = page.next_poll_ms
  const stream: EventStream = await hub.streamEvents('ev', kindName, { cursor: after ?? undefined })
  const streamId: number = stream.id
  const resume: string | null = stream.cursor
  stream.stop()
  hub.on('event', (e) => {
    if (e.type === 'event' && e.subscription === streamId) console.log(e.event_id, e.data, e.cursor)
    if (e.type === 'event_stream') console.log(e.state, e.truncated, e.error)
  })
  const sub = await hub.subscribeEvents('ev', 'build.finished', 'https://example.com/h', 'whsec_x', { ttlMs: 60_000 })
  const subId: string = sub.id
  await hub.unsubscribeEvents('ev', 'build.finished', 'https://example.com/h', { arguments: {} })
  // @ts-expect-error: an unknown option
  await hub.pollEvents('ev', kindName, { max_events: 3 })
  void [waitMs, resume, subId]
  console.log(rtt, completion.values.length)
  // @ts-expect-error not a log level
  await hub.setLogLevel('demo', 'loud')
  const policy: Policy = hub.policy({
    maxToolCalls: 5,
    callTimeoutMs: 2000,
    maxOutputBytes: 1000,
    auditPath: 'audit.jsonl',
    onAudit: (e: AuditEvent) => console.log(e.status, e.duration_ms),
  })
  await hub.callTool('mcp_demo_echo', { text: 'hi' }, { policy })
  const verdicts: ToolVerdict[] = await policy.verdicts()
  const offered: HubTool[] = await policy.offered()
  const report: RefreshReport = await policy.refresh('demo')
  const events: AuditEvent[] = policy.auditEvents()
  console.log(verdicts.length, offered.length, report.dropped, events.length, policy.callsMade, (await policy.report()).scope)
  // @ts-expect-error a policy is made by hub.policy()
  new Policy()
  await hub.close()
  const closed: boolean = hub.closed

  try {
    await hub.callTool('x')
  } catch (e) {
    if (e instanceof McpmuxError) {
      const code: ErrorCode = e.code
      const rpc: number | undefined = e.rpcCode
      console.log(code, rpc, e.message, e.data)
    }
  }
  const codes: readonly ErrorCode[] = ERROR_CODES
  const v: string = version
  console.log(state, anthropic, text, failed, closed, codes, v)

  // @ts-expect-error the tool name is a string
  await hub.callTool(42)
  // @ts-expect-error unknown option
  await hub.callTool('x', {}, { timeout: 5 })
  // @ts-expect-error unknown format
  await hub.toolsFor('gemini')
  // @ts-expect-error a Hub comes from Hub.connect
  new Hub()
  // @ts-expect-error not an error code
  const bad: ErrorCode = 'OOPS'
  console.log(bad)

  const sessions = new Sessions({
    config: 'mcpmux.toml',
    host: async (request: CompletionRequest) => ({ text: `${request.messages.length} messages`, tool_calls: [] }),
  })
  new Sessions({ host: () => 'plain text answer' })
  const begun = await sessions.begin({ skill: 'review-plan', input: '## PLAN\nx', working_dir: '.', reviewer: 'host' })
  let status: WaitResult = await sessions.wait({ session_dir: begun.session_dir, max_wait_seconds: 5 })
  while (status.status === 'running') status = await sessions.wait({ session_dir: begun.session_dir })
  const verdict: string | null | undefined = status.review?.verdict
  const replied = await sessions.reply({ session_dir: begun.session_dir, input: 'RESPONSE: done' })
  const ended = await sessions.end({ session_dir: begun.session_dir, outcome: 'consensus' })
  console.log(verdict, status.next, status.next_reason, replied.round, ended.finalized)
  // camelCase aliases of the engine's JSON keys (derived from core's schema at run time).
  await sessions.wait({ sessionDir: 'x', maxWaitSeconds: 1 })
  // @ts-expect-error not a parameter in either spelling
  await sessions.wait({ session_dir: 'x', maxWait: 1 })
  // @ts-expect-error not an outcome
  await sessions.end({ session_dir: 'x', outcome: 'maybe' })
}
