'use strict'
// The session contract from Node: every field core's session verbs accept
// (read from core itself, native.sessionSchemas(), generated from its
// parameter types) is a property of the parameter type of the matching
// `Sessions` method in index.d.ts (the drift test, read with the TypeScript
// compiler), and the session limits passed to begin() reach the session.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')

const h = require('./helpers.js')
const native = require('../native.js')
const { Sessions, McpmuxError } = require('mcpmux')

const PKG_DIR = path.resolve(__dirname, '..')
const PLAN = '---\nUSER_REQUEST: limits\n---\n## PLAN\n1. Write hello.js\n'

function coreFields() {
  const schemas = JSON.parse(native.sessionSchemas())
  const fields = Object.fromEntries(Object.entries(schemas).map(([verb, s]) => [verb, Object.keys(s.properties)]))
  assert.deepEqual(Object.keys(fields).sort(), ['begin', 'end', 'reply', 'wait'])
  assert.ok(fields.begin.includes('max_turns'), JSON.stringify(fields))
  return fields
}

/** The property names of the first parameter's type of each method of `declare class Sessions` in index.d.ts. */
function typedFields() {
  const ts = require(require.resolve('typescript', { paths: [PKG_DIR] }))
  const file = path.join(PKG_DIR, 'index.d.ts')
  const src = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true)
  const interfaces = new Map()
  let sessions
  src.forEachChild((node) => {
    if (ts.isInterfaceDeclaration(node)) interfaces.set(node.name.text, node)
    if (ts.isClassDeclaration(node) && node.name && node.name.text === 'Sessions') sessions = node
  })
  assert.ok(sessions, 'index.d.ts declares class Sessions')
  const names = (members) => members.filter((m) => m.name).map((m) => m.name.getText(src))
  const out = {}
  for (const m of sessions.members) {
    if (!ts.isMethodDeclaration(m) || m.parameters.length === 0) continue
    const type = m.parameters[0].type
    if (ts.isTypeLiteralNode(type)) out[m.name.getText(src)] = names(type.members)
    else if (ts.isTypeReferenceNode(type)) {
      const decl = interfaces.get(type.typeName.getText(src))
      assert.ok(decl, `interface ${type.typeName.getText(src)} is in index.d.ts`)
      out[m.name.getText(src)] = names(decl.members)
    }
  }
  return out
}

test('index.d.ts types every field core accepts', () => {
  const core = coreFields()
  const typed = typedFields()
  const missing = []
  for (const [verb, fields] of Object.entries(core)) {
    const have = typed[verb] || []
    for (const f of fields) if (!have.includes(f)) missing.push(`Sessions.${verb}({${f}})`)
  }
  assert.deepEqual(missing, [], `core accepts these, index.d.ts does not: ${missing.join(', ')}`)
})

test('begin takes the session limits and they reach the session', { timeout: 120_000 }, async () => {
  const work = h.tempDir()
  const requests = []
  // Never answers with a review: only max_turns ends the round.
  const host = (request) => {
    requests.push(request)
    return { text: 'again', tool_calls: [{ id: `c${requests.length}`, name: 'nope', arguments: {} }] }
  }
  const sessions = new Sessions({ config: { session: { max_turns: 6 } }, host })
  const begun = await sessions.begin({
    skill: 'review-plan',
    reviewer: 'host',
    input: PLAN,
    working_dir: work,
    max_turns: 1,
    max_tool_calls: 0,
    call_timeout_seconds: 7.5,
    max_output_bytes: 4096,
    scope: 'staging',
  })
  const deadline = Date.now() + 60_000
  let status
  do {
    status = await sessions.wait({ session_dir: begun.session_dir, max_wait_seconds: 2 })
  } while (status.status === 'running' && Date.now() < deadline)
  assert.equal(status.status, 'failed', JSON.stringify(status))
  assert.equal(status.failure_reason, 'max_turns')
  // One turn plus the last one that asks for the review (not the config's 6).
  assert.equal(requests.length, 2)
  const { settings } = JSON.parse(fs.readFileSync(path.join(begun.session_dir, 'session.json'), 'utf8'))
  assert.deepEqual(
    [settings.max_turns, settings.max_tool_calls, settings.call_timeout_seconds, settings.max_output_bytes, settings.scope],
    [1, 0, 7.5, 4096, 'staging'],
  )
  await sessions.end({ session_dir: begun.session_dir })
  await assert.rejects(
    sessions.begin({ skill: 'review-plan', input: PLAN, working_dir: work, colour: 1 }),
    (e) => e instanceof McpmuxError && e.code === 'INVALID_INPUT' && /colour/.test(e.message) && /max_output_bytes/.test(e.message),
  )
})
