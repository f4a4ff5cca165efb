'use strict'
// index.d.ts: test/types/usage.ts (the API as documented, plus misuse marked
// @ts-expect-error) compiles with `tsc --strict`.

const test = require('node:test')
const assert = require('node:assert/strict')
const { spawnSync } = require('node:child_process')
const path = require('node:path')

const PKG_DIR = path.resolve(__dirname, '..')

test('index.d.ts types the public API (tsc --strict)', { timeout: 120_000 }, () => {
  const tsc = require.resolve('typescript/bin/tsc', { paths: [PKG_DIR] })
  const r = spawnSync(process.execPath, [tsc, '-p', path.join(__dirname, 'types', 'tsconfig.json'), '--pretty', 'false'], {
    encoding: 'utf8',
  })
  assert.equal(r.status, 0, `tsc failed:\n${r.stdout}${r.stderr}`)
})
