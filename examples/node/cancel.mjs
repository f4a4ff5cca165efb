// Timeouts, progress and cancellation with an AbortSignal.
//
//   node cancel.mjs
import { Hub, McpmuxError } from 'mcpmux'

const demo = process.env.MCPMUX_DEMO_SERVER ?? new URL('../../target/debug/mcpmux-demo-server', import.meta.url).pathname
const hub = await Hub.connect({ mcpServers: { demo: { command: demo } } })

try {
  // Progress notifications arrive on this thread while the call runs.
  const done = await hub.callTool(
    'mcp_demo_slow',
    { seconds: 0.6, steps: 3 },
    { onProgress: (p) => console.log(`progress ${p.progress}/${p.total}`) },
  )
  console.log('slow ->', done.content[0].text)

  // An AbortSignal cancels the call: the server is told
  // (notifications/cancelled) and the promise rejects at once with CANCELLED.
  const controller = new AbortController()
  setTimeout(() => controller.abort(new Error('the user pressed stop')), 200)
  try {
    await hub.callTool('mcp_demo_slow', { seconds: 30 }, { signal: controller.signal })
  } catch (e) {
    if (!(e instanceof McpmuxError) || e.code !== 'CANCELLED') throw e
    console.log(`aborted -> ${e.code} (cause: ${e.cause.message})`)
  }

  // AbortSignal.timeout works too; timeoutMs is mcpmux's own per-call timeout
  // (reset by progress), which rejects with TIMEOUT.
  try {
    await hub.callTool('mcp_demo_slow', { seconds: 30, steps: 0 }, { timeoutMs: 300 })
  } catch (e) {
    if (!(e instanceof McpmuxError) || e.code !== 'TIMEOUT') throw e
    console.log(`timeoutMs -> ${e.code}: ${e.message}`)
  }
} finally {
  await hub.close()
}
