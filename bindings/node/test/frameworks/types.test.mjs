// ai-sdk.d.ts and openai-agents.d.ts against the frameworks' own types:
// types/usage.ts compiles with `tsc --strict` (the TypeScript of mcpmux's devDependencies).
import test from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const here = path.dirname(fileURLToPath(import.meta.url))
const require = createRequire(import.meta.url)

test('the adapters type-check against ai and @openai/agents (tsc --strict)', { timeout: 120_000 }, () => {
  const tsc = require.resolve('typescript/bin/tsc', { paths: [path.resolve(here, '..', '..')] })
  const r = spawnSync(process.execPath, [tsc, '-p', path.join(here, 'types', 'tsconfig.json'), '--pretty', 'false'], {
    encoding: 'utf8',
  })
  assert.equal(r.status, 0, `tsc failed:\n${r.stdout}${r.stderr}`)
})
