// A review session with a host reviewer written in JavaScript.
//
//   cargo build -p mcpmux-demo-server
//   npm install ./bindings/node            (in your project; here: see README.md)
//   node session.mjs
//
// The "model" is a small async function (swap in a call to your own LLM):
// it first calls the demo server's echo tool, then answers with a fenced
// JSON verdict. The session lives on disk under <working_dir>/.mcpmux/sessions/.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { Sessions } from 'mcpmux'

const demo = process.env.MCPMUX_DEMO_SERVER ?? new URL('../../target/debug/mcpmux-demo-server', import.meta.url).pathname
const config = { mcpServers: { demo: { command: demo, allow_tools: ['echo'] } }, session: { max_turns: 4 } }

// One model turn: gets {system, messages, tools, ...}, answers {text, tool_calls?} or a string.
async function reviewer(request) {
  const last = request.messages.at(-1)
  if (!last.tool_results) {
    return { text: 'Let me look something up first.', tool_calls: [{ id: '1', name: 'mcp_demo_echo', arguments: { text: 'the plan looks small' } }] }
  }
  const review = { verdict: 'APPROVE', blocks: [] }
  return `The tool said: ${last.tool_results[0].content}\n\n\`\`\`json\n${JSON.stringify(review)}\n\`\`\`\n`
}

const plan = `---
USER_REQUEST: Print a greeting
---
## PLAN
1. Add hello.js that prints "hello".
2. Add a test.
`

const work = mkdtempSync(join(tmpdir(), 'mcpmux-session-'))
try {
  const sessions = new Sessions({ config, host: reviewer })
  const { session_dir } = await sessions.begin({ skill: 'review-plan', reviewer: 'host', input: plan, working_dir: work })
  console.log('began', session_dir)
  let status
  do status = await sessions.wait({ session_dir, max_wait_seconds: 10 })
  while (status.status === 'running')
  console.log(`round ${status.round} ${status.status}, verdict: ${status.review?.verdict}`)
  console.log(`next: ${status.next} (${status.next_reason})`)
  const ended = await sessions.end({ session_dir })
  console.log('ended; finalized:', ended.finalized)
  if (status.review?.verdict !== 'APPROVE') throw new Error(`expected APPROVE: ${JSON.stringify(status)}`)
} finally {
  rmSync(work, { recursive: true, force: true })
}
