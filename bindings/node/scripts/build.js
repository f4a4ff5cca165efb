#!/usr/bin/env node
'use strict'
// Builds the native addon of the `mcpmux` package and puts it where the
// generated loader (native.js) looks for it: mcpmux.<platform>.node in the
// package directory.
//
// This is the package's `install` script, so `npm install ./bindings/node`
// (from any project) builds the addon on a machine with Rust and Node >= 20.
// It needs no npm package: it runs `cargo build -p mcpmux-node` in this
// repository's workspace (target dir: $CARGO_TARGET_DIR, else the
// workspace's `target/`) and copies the library (atomically: a running
// process keeps the file it loaded).
//
//   node scripts/build.js [--debug | --release] [--locked]
//   node scripts/build.js --generate [--debug | --release]
//   node scripts/build.js --check
//
// Profile: --debug / --release, else debug for --check, else
// $MCPMUX_NODE_PROFILE (debug | release), else release. --locked (or
// MCPMUX_NODE_LOCKED=1) passes --locked to cargo.
//
// --generate runs the napi-rs CLI (a devDependency: `npm install` here
// first) to rebuild and regenerate the committed loader and types,
// native.js and native.d.ts. --check does the same into a temporary
// directory and fails when the committed files differ (CI drift check).

const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const PKG_DIR = path.resolve(__dirname, '..')
const CRATE = 'mcpmux-node'
const LIB_NAME = 'mcpmux_node'
const BINARY_NAME = 'mcpmux'
const GENERATED = ['native.js', 'native.d.ts']

function fail(message) {
  process.stderr.write(`mcpmux: ${message}\n`)
  process.exit(1)
}

function parseArgs(argv) {
  const opts = { profile: undefined, mode: 'build', locked: process.env.MCPMUX_NODE_LOCKED === '1' }
  for (const arg of argv) {
    if (arg === '--debug') opts.profile = 'debug'
    else if (arg === '--release') opts.profile = 'release'
    else if (arg === '--locked') opts.locked = true
    else if (arg === '--generate') opts.mode = 'generate'
    else if (arg === '--check') opts.mode = 'check'
    else fail(`unknown option '${arg}' (use --debug, --release, --locked, --generate or --check)`)
  }
  if (opts.profile === undefined && opts.mode === 'check') opts.profile = 'debug'
  if (opts.profile === undefined) {
    const env = process.env.MCPMUX_NODE_PROFILE
    if (env !== undefined && env !== '' && env !== 'debug' && env !== 'release') {
      fail(`MCPMUX_NODE_PROFILE must be 'debug' or 'release', got '${env}'`)
    }
    opts.profile = env || 'release'
  }
  return opts
}

/** The cargo executable: $CARGO, cargo on PATH, or ~/.cargo/bin/cargo. */
function findCargo() {
  const candidates = [process.env.CARGO, 'cargo', path.join(os.homedir(), '.cargo', 'bin', 'cargo')]
  for (const c of candidates) {
    if (!c) continue
    const r = spawnSync(c, ['--version'], { stdio: 'ignore' })
    if (!r.error && r.status === 0) return c
  }
  fail('building the native addon needs Rust (cargo was not found on PATH nor in ~/.cargo/bin); install it from https://rustup.rs and run npm install again')
}

function isMusl() {
  try {
    return fs.readFileSync('/usr/bin/ldd', 'utf8').includes('musl')
  } catch {
    const report = process.report && process.report.getReport ? process.report.getReport() : null
    return !(report && report.header && report.header.glibcVersionRuntime)
  }
}

/** The platform part of the file name the napi-rs loader requires. */
function platformSuffix() {
  const { platform, arch } = process
  if (platform === 'linux') {
    const musl = isMusl()
    if (arch === 'arm') return `linux-arm-${musl ? 'musleabihf' : 'gnueabihf'}`
    return `linux-${arch}-${musl ? 'musl' : 'gnu'}`
  }
  if (platform === 'win32') return `win32-${arch}-msvc`
  if (platform === 'android' && arch === 'arm') return 'android-arm-eabi'
  return `${platform}-${arch}`
}

function cargoBuild(opts) {
  const cargo = findCargo()
  const args = [
    'build',
    '-p',
    CRATE,
    '--manifest-path',
    path.join(PKG_DIR, 'Cargo.toml'),
    '--message-format=json-render-diagnostics',
  ]
  if (opts.profile === 'release') args.push('--release')
  if (opts.locked) args.push('--locked')
  process.stderr.write(`mcpmux: building the native addon (cargo ${args.join(' ')})\n`)
  const r = spawnSync(cargo, args, {
    cwd: PKG_DIR,
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 256 * 1024 * 1024,
    encoding: 'utf8',
  })
  if (r.error) fail(`cannot run cargo: ${r.error.message}`)
  if (r.status !== 0) fail(`cargo build failed (exit status ${r.status})`)
  let artifact
  for (const line of r.stdout.split('\n')) {
    if (!line.startsWith('{')) continue
    let msg
    try {
      msg = JSON.parse(line)
    } catch {
      continue
    }
    if (msg.reason !== 'compiler-artifact' || !msg.target || msg.target.name !== LIB_NAME) continue
    const lib = msg.filenames.find((f) => /\.(so|dylib|dll)$/.test(f))
    if (lib) artifact = lib
  }
  if (!artifact) fail(`cargo did not report the ${LIB_NAME} library`)
  const dest = path.join(PKG_DIR, `${BINARY_NAME}.${platformSuffix()}.node`)
  const tmp = `${dest}.tmp-${process.pid}`
  fs.copyFileSync(artifact, tmp)
  fs.renameSync(tmp, dest)
  process.stderr.write(`mcpmux: ${path.relative(process.cwd(), dest) || dest} (${opts.profile})\n`)
}

function napiCli() {
  const bin = path.join(PKG_DIR, 'node_modules', '@napi-rs', 'cli', 'dist', 'cli.js')
  if (!fs.existsSync(bin)) fail('the napi-rs CLI is missing: run `npm install` in bindings/node first')
  return bin
}

function napiBuild(opts, outputDir) {
  const args = [napiCli(), 'build', '--platform', '--js', 'native.js', '--dts', 'native.d.ts']
  if (opts.profile === 'release') args.push('--release')
  if (outputDir) args.push('--output-dir', outputDir)
  const r = spawnSync(process.execPath, args, { cwd: PKG_DIR, stdio: 'inherit' })
  if (r.error) fail(`cannot run the napi-rs CLI: ${r.error.message}`)
  if (r.status !== 0) fail(`napi build failed (exit status ${r.status})`)
}

function check(opts) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcpmux-napi-'))
  try {
    napiBuild(opts, dir)
    const stale = GENERATED.filter(
      (f) => fs.readFileSync(path.join(dir, f), 'utf8') !== fs.readFileSync(path.join(PKG_DIR, f), 'utf8'),
    )
    if (stale.length > 0) {
      fail(`${stale.join(', ')} differ from what napi-rs generates: run \`npm run napi:generate\` in bindings/node and commit the result`)
    }
    process.stderr.write(`mcpmux: ${GENERATED.join(', ')} are up to date\n`)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

const opts = parseArgs(process.argv.slice(2))
if (opts.mode === 'generate') napiBuild(opts)
else if (opts.mode === 'check') check(opts)
else cargoBuild(opts)
