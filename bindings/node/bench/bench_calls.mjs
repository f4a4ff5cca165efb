// Benchmark (not a test): tools/call from Node through mcpmux, next to the
// official TypeScript SDK (`Client` + `StdioClientTransport`) and to the raw
// pipe floors, all against the same server in the same run, interleaved.
//
// The server is the bundled demo server in release mode
// (<target>/release/mcpmux-demo-server, tool `echo`, or $MCPMUX_DEMO_SERVER),
// built when missing; the addon is rebuilt in release mode first (`node
// scripts/build.js --release`, a no-op when up to date) unless
// MCPMUX_BENCH_NO_BUILD=1. The floors come from
// <target>/release/mcpmux-bench-floor (benches/echo-server; built when
// missing): a blocking raw client, and a spinning one that busy-polls the
// pipe.
//
// Every figure interleaves: ROUNDS rounds (10, quick 3, or
// $MCPMUX_BENCH_ROUNDS), each running every side for a block of about 1 s
// (0.25 s quick) in rotating order, with all connections open throughout,
// so that a machine whose speed moves affects every side alike. Each row is
// the median of the per-round ratios and their range (min-max):
//   1. sequential latency (await in a loop) vs the blocking floor (target
//      <= 1.0x; the overhead above it in µs) and vs the spinning floor;
//   2. sequential calls/s vs the SDK (information);
//   3. 16 in flight (16 loops on one connection) vs the SDK (target >= 2.5x).
// It exits 0 whatever the figures (non-zero only when something fails).
//
//   node bench/bench_calls.mjs            # from bindings/node (npm run bench)
//   MCPMUX_BENCH_QUICK=1 node bench/bench_calls.mjs
//
// MCPMUX_BENCH_ROWS=FILE appends the rows to FILE in the tab-separated
// format of benches/run.sh (core/benches/stdio/report.rs documents it);
// MCPMUX_BENCH_LABEL names the server there.
import { spawn, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import readline from 'node:readline'
import { fileURLToPath } from 'node:url'
import { createRequire } from 'node:module'

const HERE = path.dirname(fileURLToPath(import.meta.url))
const PKG_DIR = path.resolve(HERE, '..')
const ROOT = path.resolve(PKG_DIR, '..', '..')
const TARGET = process.env.CARGO_TARGET_DIR || path.join(ROOT, 'target')
const QUICK = process.env.MCPMUX_BENCH_QUICK === '1'
const ROUNDS = Number(process.env.MCPMUX_BENCH_ROUNDS) || (QUICK ? 3 : 10)
const BLOCK_MS = QUICK ? 250 : 1000
const IN_FLIGHT = 16
const TEXT = 'hello from the mcpmux benchmark'

function sh(cmd, args, cwd) {
  const r = spawnSync(cmd, args, { cwd, stdio: 'inherit' })
  if (r.error || r.status !== 0) {
    throw new Error(`${cmd} ${args.join(' ')} failed: ${r.error ? r.error.message : `exit ${r.status}`}`)
  }
}

const server = process.env.MCPMUX_DEMO_SERVER || path.join(TARGET, 'release', 'mcpmux-demo-server')
if (!fs.existsSync(server)) {
  console.error(`building ${server}`)
  sh('cargo', ['build', '--release', '-p', 'mcpmux-demo-server'], ROOT)
}
const floorBin = process.env.MCPMUX_BENCH_FLOOR || path.join(TARGET, 'release', 'mcpmux-bench-floor')
if (!fs.existsSync(floorBin)) {
  console.error(`building ${floorBin}`)
  sh('cargo', ['build', '--release', '--manifest-path', path.join(ROOT, 'benches/echo-server/Cargo.toml')], ROOT)
}
if (process.env.MCPMUX_BENCH_NO_BUILD !== '1') {
  sh(process.execPath, [path.join(PKG_DIR, 'scripts', 'build.js'), '--release'], PKG_DIR)
}

const require = createRequire(import.meta.url)
const { Hub } = require(PKG_DIR)
const { Client } = require(require.resolve('@modelcontextprotocol/sdk/client/index.js', { paths: [PKG_DIR] }))
const { StdioClientTransport } = require(
  require.resolve('@modelcontextprotocol/sdk/client/stdio.js', { paths: [PKG_DIR] }),
)

function check(result) {
  if (!result || !result.content || result.content[0].text !== TEXT) {
    throw new Error(`unexpected result: ${JSON.stringify(result)}`)
  }
}

const now = () => Number(process.hrtime.bigint()) / 1e9

/** Sequential calls for about BLOCK_MS: calls/s. */
async function sequential(call) {
  const start = now()
  const deadline = start + BLOCK_MS / 1e3
  let n = 0
  do {
    check(await call())
    n++
  } while (now() < deadline)
  return n / (now() - start)
}

/** IN_FLIGHT loops calling for about BLOCK_MS: calls/s. */
async function inFlight(call) {
  const start = now()
  const deadline = start + BLOCK_MS / 1e3
  let n = 0
  const worker = async () => {
    do {
      check(await call())
      n++
    } while (now() < deadline)
  }
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker))
  return n / (now() - start)
}

/** The raw floors: `mode` is blocking or spin; resolves to calls/s. */
function startFloor() {
  const child = spawn(floorBin, [server], { stdio: ['pipe', 'pipe', 'inherit'] })
  const lines = readline.createInterface({ input: child.stdout })
  const waiting = []
  lines.on('line', (line) => waiting.shift()?.resolve(line))
  child.on('exit', (code) => {
    for (const w of waiting.splice(0)) w.reject(new Error(`mcpmux-bench-floor exited (${code})`))
  })
  return {
    run: (mode) =>
      new Promise((resolve, reject) => {
        waiting.push({ resolve, reject })
        child.stdin.write(`${mode} ${BLOCK_MS / 1e3}\n`)
      }).then((line) => {
        const [calls, ns] = line.split(' ').map(Number)
        return calls / (ns / 1e9)
      }),
    close: () => new Promise((resolve) => {
      child.on('exit', resolve)
      child.stdin.end()
    }),
  }
}

const sdk = new Client({ name: 'mcpmux-bench', version: '1.0.0' })
await sdk.connect(new StdioClientTransport({ command: server, args: [], stderr: 'ignore' }))
const hub = await Hub.connect({ mcpServers: { demo: { command: server } } })
const args = { text: TEXT }
const sdkCall = () => sdk.callTool({ name: 'echo', arguments: args })
const hubCall = () => hub.callTool('mcp_demo_echo', args)
const floor = startFloor()

const sides = {
  floor: () => floor.run('blocking'),
  spin: () => floor.run('spin'),
  sdkSeq: () => sequential(sdkCall),
  hubSeq: () => sequential(hubCall),
  sdkPar: () => inFlight(sdkCall),
  hubPar: () => inFlight(hubCall),
}

console.log(`mcpmux node benchmark: tools/call echo against ${path.relative(process.cwd(), server) || server}`)
console.log(`node ${process.version}; ${ROUNDS} interleaved rounds of ~${BLOCK_MS} ms per side`)
// Warm-up: a short block of each.
for (const f of [sdkCall, hubCall]) for (let i = 0; i < 500; i++) check(await f())
const rates = Object.fromEntries(Object.keys(sides).map((k) => [k, []]))
const groups = [['floor', 'spin', 'sdkSeq', 'hubSeq'], ['sdkPar', 'hubPar']]
for (let round = 0; round < ROUNDS; round++) {
  for (const group of groups) {
    for (let i = 0; i < group.length; i++) {
      const name = group[(round + i) % group.length]
      rates[name].push(await sides[name]())
    }
  }
  console.log(
    `round ${round + 1}: ` +
      Object.entries(rates)
        .map(([k, v]) => `${k} ${Math.round(v[round])}`)
        .join('  ') +
      ' calls/s',
  )
}
await floor.close()
await hub.close()
await sdk.close()

function spread(values) {
  const v = [...values].sort((a, b) => a - b)
  const n = v.length
  const median = n % 2 ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2
  return [median, v[0], v[n - 1]]
}
const us = (r) => r.map((x) => 1e6 / x)
const rows = []
function row(figure, ours, ref, kind, target, latency) {
  const ratios = ours.map((x, i) => x / ref[i])
  const [m, lo, hi] = spread(ratios)
  const overhead = latency ? spread(ours.map((x, i) => x - ref[i]))[0] : null
  const held = target === '-' ? 'info' : (target.startsWith('<=') ? m <= Number(target.slice(2)) : m >= Number(target.slice(2))) ? 'PASS' : 'MISS'
  rows.push({ figure, ours: spread(ours)[0], ref: spread(ref)[0], kind, m, lo, hi, target, overhead, held })
}
row('Node Hub: sequential latency, mean (µs)', us(rates.hubSeq), us(rates.floor), 'blocking floor', '<=1', true)
row('Node Hub: sequential latency, mean (µs)', us(rates.hubSeq), us(rates.spin), 'spinning floor', '-', true)
row('Node Hub: calls/s, sequential', rates.hubSeq, rates.sdkSeq, 'TypeScript SDK', '-', false)
row(`Node Hub: calls/s, ${IN_FLIGHT} in flight`, rates.hubPar, rates.sdkPar, 'TypeScript SDK', '>=2.5', false)

console.log('')
console.log('figure                                       mcpmux   reference  (reference is)     median          range      +µs  target  result')
for (const r of rows) {
  console.log(
    `${r.figure.padEnd(42)} ${r.ours.toFixed(2).padStart(10)}  ${r.ref.toFixed(2).padStart(10)}  ${r.kind.padEnd(16)} ${r.m
      .toFixed(2)
      .padStart(7)}x  ${`${r.lo.toFixed(2)}-${r.hi.toFixed(2)}x`.padStart(12)}  ${(r.overhead === null ? '-' : r.overhead.toFixed(2)).padStart(6)}  ${r.target.padEnd(6)}  ${r.held}`,
  )
}
if (process.env.MCPMUX_BENCH_ROWS) {
  const label = process.env.MCPMUX_BENCH_LABEL || path.basename(server)
  fs.appendFileSync(
    process.env.MCPMUX_BENCH_ROWS,
    rows
      .map((r) =>
        [r.figure, label, r.ours.toFixed(3), r.ref.toFixed(3), r.kind, r.m.toFixed(4), r.lo.toFixed(4), r.hi.toFixed(4), 'x', r.target,
          r.overhead === null ? '-' : r.overhead.toFixed(3), ROUNDS].join('\t') + '\n',
      )
      .join(''),
  )
}
