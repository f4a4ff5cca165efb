// mcpmux/ai-sdk: a hub's tools as a ToolSet of the Vercel AI SDK (7), for
// generateText and streamText.
//
//   import { tools } from 'mcpmux/ai-sdk'
//   const result = await generateText({ model, tools: await tools(hub, { policy }), prompt })
//
// `ai` is taken from the host's project (resolved from the current
// directory, then from this package), so a symlinked mcpmux finds it too.
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const common = require('./adapters.js')

const ADAPTER = 'mcpmux/ai-sdk'

/**
 * The hub's tools (or those `policy` offers) as an AI SDK ToolSet, keyed by
 * the hub's names (`mcp_{server}_{tool}`).
 *
 * - Calls go through `policy` when given (allow lists, destructive
 *   refusal, limits, redaction, audit) and their text output is framed as
 *   untrusted data (`frameOutput: false` turns that off).
 * - A refused or failed call is a result, never a thrown error: the model
 *   gets it as an AI SDK error result (`error-text`), like a result the
 *   server marked `isError`.
 * - The call's `abortSignal` cancels the MCP call.
 * - Progress notifications are preliminary tool results
 *   (`{type: 'progress', progress, total?, message?}`, seen in
 *   streamText's stream) and go to `onProgress(progress, {toolName, toolCallId})`.
 * - The ToolSet follows the hub's `tools_changed` events: tools are added
 *   and removed in place, so the next step or call sees them
 *   (`watch: false` turns that off).
 *
 * @param {import('./index.js').Hub} hub
 * @param {{policy?: import('./index.js').Policy, frameOutput?: boolean, onProgress?: Function, watch?: boolean, ai?: object}} [options]
 * @returns {Promise<Record<string, object>>}
 */
export async function tools(hub, options = {}) {
  const { policy, frameOutput, onProgress, watch = true } = options ?? {}
  common.checkOptions(options, ['policy', 'frameOutput', 'onProgress', 'watch', 'ai'], ADAPTER)
  common.checkHub(hub, policy, ADAPTER)
  if (onProgress !== undefined && onProgress !== null && typeof onProgress !== 'function') {
    throw new TypeError(`${ADAPTER}: onProgress must be a function`)
  }
  const ai = options?.ai ?? (await common.importFromHost('ai', ADAPTER, 'ai@7'))
  if (typeof ai.jsonSchema !== 'function' || (typeof ai.dynamicTool !== 'function' && typeof ai.tool !== 'function')) {
    throw new Error(`${ADAPTER}: the 'ai' package found has no jsonSchema/dynamicTool: AI SDK 7 is needed`)
  }

  const make = (t) => {
    const name = t.name
    const definition = {
      description: common.describeTool(t),
      inputSchema: ai.jsonSchema(common.objectSchema(t.input_schema)),
      execute: (input, execOptions) => execute(name, input, execOptions ?? {}),
      toModelOutput: ({ output }) => toModelOutput(output),
    }
    return typeof ai.dynamicTool === 'function' ? ai.dynamicTool(definition) : ai.tool(definition)
  }

  async function* execute(name, input, { abortSignal, toolCallId }) {
    const queue = []
    let wake = null
    let done = false
    let result
    let error
    const progress = (p) => {
      if (onProgress) {
        try {
          onProgress(p, { toolName: name, toolCallId })
        } catch (err) {
          queueMicrotask(() => {
            throw err
          })
        }
      }
      queue.push(p)
      if (wake) wake()
    }
    common
      .callForModel(hub, name, input, { policy, signal: abortSignal, onProgress: progress, frameOutput })
      .then(
        (r) => {
          result = r
        },
        (e) => {
          error = e
        },
      )
      .finally(() => {
        done = true
        if (wake) wake()
      })
    for (;;) {
      while (queue.length > 0) yield { type: 'progress', ...queue.shift() }
      if (done) break
      await new Promise((resolve) => (wake = resolve))
      wake = null
    }
    if (error !== undefined) throw error
    yield result
  }

  const set = {}
  fill(set, await common.toolList(hub, policy))
  // The refresh holds the ToolSet only through its argument: a ToolSet the
  // host drops is collected, and its watch with it.
  if (watch) common.watchTools(hub, set, async (target) => fill(target, await common.toolList(hub, policy)))
  return set

  function fill(target, list) {
    const names = new Set(list.map((t) => t.name))
    for (const key of Object.keys(target)) if (!names.has(key)) delete target[key]
    for (const t of list) target[t.name] = make(t)
  }
}

/**
 * The AI SDK's model output for a tool's final result: an error result
 * (`error-text`) for `isError`, the text (with files for images and audio)
 * otherwise. Progress outputs (never final) are shown as text.
 */
export function toModelOutput(output) {
  if (!output || typeof output !== 'object' || !Array.isArray(output.content)) {
    return typeof output === 'string' ? { type: 'text', value: output } : { type: 'json', value: output ?? null }
  }
  const text = common.renderText(output)
  if (output.isError === true) return { type: 'error-text', value: text }
  const media = output.content.filter((b) => b && (b.type === 'image' || b.type === 'audio') && typeof b.data === 'string')
  if (media.length === 0) return { type: 'text', value: text }
  const value = []
  for (const b of output.content) {
    if (!b || typeof b !== 'object') continue
    if (media.includes(b)) value.push({ type: 'file', data: { type: 'data', data: b.data }, mediaType: b.mimeType || b.type })
    else {
      const t = common.renderText({ content: [b] })
      if (t) value.push({ type: 'text', text: t })
    }
  }
  return { type: 'content', value }
}

export default { tools }
