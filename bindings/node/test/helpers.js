'use strict'
// Shared paths and helpers for the mcpmux Node tests (node --test).
// The peers are real: the bundled demo server (target/<profile>/mcpmux-demo-server,
// built when missing), server-everything and the Python fault servers that
// tests/setup.sh installs into the checkout.

const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const PKG_DIR = path.resolve(__dirname, '..')
const ROOT = path.resolve(PKG_DIR, '..', '..')
const TARGET = process.env.CARGO_TARGET_DIR || path.join(ROOT, 'target')

function demoServer() {
  if (process.env.MCPMUX_DEMO_SERVER) return process.env.MCPMUX_DEMO_SERVER
  for (const profile of ['debug', 'release']) {
    const p = path.join(TARGET, profile, 'mcpmux-demo-server')
    if (fs.existsSync(p)) return p
  }
  const r = spawnSync('cargo', ['build', '-p', 'mcpmux-demo-server'], { cwd: ROOT, stdio: 'inherit' })
  if (r.status !== 0) throw new Error('cannot build mcpmux-demo-server')
  return path.join(TARGET, 'debug', 'mcpmux-demo-server')
}

const DEMO = demoServer()
const EVERYTHING = path.join(ROOT, 'tests', 'peers', 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js')
const PYTHON = path.join(ROOT, '.deps', 'venv', 'bin', 'python')
const FAULTS = path.join(ROOT, 'tests', 'servers')
/** The mcpmux CLI (for comparing --json output), when built. */
const CLI = path.join(TARGET, 'debug', 'mcpmux')

for (const [what, p] of [
  ['server-everything (run bash tests/setup.sh)', EVERYTHING],
  ['the Python venv (run bash tests/setup.sh)', PYTHON],
]) {
  if (!fs.existsSync(p)) throw new Error(`missing ${what}: ${p}`)
}

/** A config object with the demo server as `demo` (plus `extra` servers). */
function demoConfig(extra = {}) {
  return { mcpServers: { demo: { command: DEMO }, ...extra } }
}

/** A config entry for a Python fault server. */
function fault(script, env) {
  return { command: PYTHON, args: [path.join(FAULTS, script)], ...(env ? { env } : {}) }
}

/** A config entry for server-everything over stdio. */
function everything() {
  return { command: process.execPath, args: [EVERYTHING, 'stdio'] }
}

/** A fresh temporary directory, removed at process exit. */
function tempDir() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcpmux-node-test-'))
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** Whether process `pid` is alive (a zombie counts as gone). */
function alive(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z'
  } catch {
    return false
  }
}

/** Pids of the direct children of `pid` (Linux /proc). */
function childrenOf(pid) {
  const out = []
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      if (Number(fields[1]) === pid && fields[0] !== 'Z') out.push(Number(entry))
    } catch {
      // gone meanwhile
    }
  }
  return out
}

/** Polls `check` every 20 ms until it returns truthy or `ms` pass. */
async function waitFor(check, ms, what) {
  const deadline = Date.now() + ms
  for (;;) {
    const v = await check()
    if (v) return v
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

/** Asserts that `promise` rejects with an McpmuxError of `code`; returns it. */
async function rejectsWith(promise, code, McpmuxError) {
  let error
  try {
    await promise
  } catch (e) {
    error = e
  }
  if (!error) throw new Error(`expected an McpmuxError ${code}, but it resolved`)
  if (!(error instanceof McpmuxError)) throw new Error(`expected an McpmuxError ${code}, got ${error && error.stack}`)
  if (error.code !== code) throw new Error(`expected code ${code}, got ${error.code}: ${error.message}`)
  return error
}

/** Runs `fn(hub)` on a hub connected to `config`, closing it after. */
async function withHub(config, fn) {
  const { Hub } = require('mcpmux')
  const hub = await Hub.connect(config)
  try {
    await fn(hub)
  } finally {
    await hub.close()
  }
}

module.exports = {
  PKG_DIR,
  ROOT,
  DEMO,
  EVERYTHING,
  PYTHON,
  FAULTS,
  CLI,
  demoConfig,
  fault,
  everything,
  tempDir,
  alive,
  childrenOf,
  waitFor,
  rejectsWith,
  withHub,
}
