// Benchmark (not a test): tools/call throughput from Node through mcpmux,
// next to the official TypeScript SDK (`Client` + `StdioClientTransport`)
// measured in the same run against the same server.
//
// The server is the bundled demo server in release mode
// (<target>/release/mcpmux-demo-server, tool `echo`), built when missing;
// the addon is rebuilt in release mode first (`node scripts/build.js
// --release`, a no-op when up to date) unless MCPMUX_BENCH_NO_BUILD=1.
//
// Figures, from ROUNDS rounds (5, or $MCPMUX_BENCH_ROUNDS) that each measure
// the SDK and mcpmux back to back, in alternating order, so both see the same
// machine; printed: the best round of each, the ratio of the bests, and the
// median of the per-round ratios:
//   1. sequential: one call at a time (await in a loop);
//   2. 16 in flight: 16 loops calling concurrently on one connection.
// Targets: mcpmux >= 1.5x the SDK sequential, >= 2x with 16 in flight. The
// script prints PASS/MISS and exits 0 either way (non-zero only when
// something fails). Run it on an otherwise idle machine:
//
//   node bench/bench_calls.mjs            # from bindings/node (npm run bench)
//   MCPMUX_BENCH_QUICK=1 node bench/bench_calls.mjs   # 10x fewer calls
//
// MCPMUX_BENCH_FIGURES=FILE also writes the best calls/s of each client and
// figure to FILE, one `<client>.<figure> <calls/s>` line each (clients `sdk`
// and `mcpmux`, figures `sequential` and `in_flight`), for benches/run.sh.
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { createRequire } from 'node:module'

const HERE = path.dirname(fileURLToPath(import.meta.url))
const PKG_DIR = path.resolve(HERE, '..')
const ROOT = path.resolve(PKG_DIR, '..', '..')
const TARGET = process.env.CARGO_TARGET_DIR || path.join(ROOT, 'target')
const QUICK = process.env.MCPMUX_BENCH_QUICK === '1'
const SEQ_CALLS = QUICK ? 2_000 : 20_000
const PAR_CALLS = QUICK ? 8_000 : 80_000
const IN_FLIGHT = 16
const ROUNDS = Number(process.env.MCPMUX_BENCH_ROUNDS) || 5
const TEXT = 'hello from the mcpmux node benchmark'

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
if (process.env.MCPMUX_BENCH_NO_BUILD !== '1') {
  sh(process.execPath, [path.join(PKG_DIR, 'scripts', 'build.js'), '--release'], PKG_DIR)
}

const require = createRequire(import.meta.url)
const { Hub } = require(PKG_DIR)
const { Client } = require(require.resolve('@modelcontextprotocol/sdk/client/index.js', { paths: [PKG_DIR] }))
const { StdioClientTransport } = require(
  require.resolve('@modelcontextprotocol/sdk/client/stdio.js', { paths: [PKG_DIR] }),
)

/** One contender: connect() resolves to {call, close}. */
const contenders = {
  sdk: async () => {
    const client = new Client({ name: 'mcpmux-bench', version: '1.0.0' })
    await client.connect(new StdioClientTransport({ command: server, args: [], stderr: 'ignore' }))
    const args = { text: TEXT }
    return {
      call: () => client.callTool({ name: 'echo', arguments: args }),
      close: () => client.close(),
    }
  },
  mcpmux: async () => {
    const hub = await Hub.connect({ mcpServers: { demo: { command: server } } })
    const args = { text: TEXT }
    return {
      call: () => hub.callTool('mcp_demo_echo', args),
      close: () => hub.close(),
    }
  },
}

function check(result) {
  if (!result || !result.content || result.content[0].text !== TEXT) {
    throw new Error(`unexpected result: ${JSON.stringify(result)}`)
  }
}

async function sequential(c, n) {
  for (let i = 0; i < n; i++) check(await c.call())
}

async function parallel(c, n, width) {
  let left = n
  const worker = async () => {
    while (left > 0) {
      left--
      check(await c.call())
    }
  }
  await Promise.all(Array.from({ length: width }, worker))
}

async function measure(name, kind) {
  const c = await contenders[name]()
  const run = kind === 'seq' ? (n) => sequential(c, n) : (n) => parallel(c, n, IN_FLIGHT)
  const n = kind === 'seq' ? SEQ_CALLS : PAR_CALLS
  await run(Math.ceil(n / 10)) // warm-up
  const cpu0 = process.cpuUsage()
  const t0 = process.hrtime.bigint()
  await run(n)
  const secs = Number(process.hrtime.bigint() - t0) / 1e9
  const cpu = process.cpuUsage(cpu0)
  await c.close()
  return { rate: n / secs, cpuUsPerCall: (cpu.user + cpu.system) / n }
}

async function figure(kind) {
  const best = { sdk: null, mcpmux: null }
  const ratios = []
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? ['sdk', 'mcpmux'] : ['mcpmux', 'sdk']
    const r = {}
    for (const name of order) {
      r[name] = await measure(name, kind)
      if (!best[name] || r[name].rate > best[name].rate) best[name] = r[name]
    }
    ratios.push(r.mcpmux.rate / r.sdk.rate)
  }
  ratios.sort((a, b) => a - b)
  return { ...best, median: ratios[Math.floor(ratios.length / 2)] }
}

function fmt(n) {
  return Math.round(n).toLocaleString('en-US')
}

const rows = [
  ['sequential', 'seq', 1.5, 'sequential'],
  [`${IN_FLIGHT} in flight`, 'par', 2, 'in_flight'],
]
const figures = []
console.log(`mcpmux node benchmark: tools/call echo against ${path.relative(process.cwd(), server) || server}`)
console.log(`node ${process.version}, ${QUICK ? 'quick' : 'full'} run, ${ROUNDS} rounds alternating SDK and mcpmux`)
console.log('calls/s: best round of each; ratio: of the bests (median of the per-round ratios in parentheses)')
console.log('')
console.log('figure          SDK calls/s  mcpmux calls/s  ratio (median)  target  result   (process CPU µs/call: SDK, mcpmux)')
for (const [label, kind, target, key] of rows) {
  const best = await figure(kind)
  figures.push(`sdk.${key} ${best.sdk.rate.toFixed(1)}`, `mcpmux.${key} ${best.mcpmux.rate.toFixed(1)}`)
  const ratio = best.mcpmux.rate / best.sdk.rate
  console.log(
    `${label.padEnd(15)} ${fmt(best.sdk.rate).padStart(11)}  ${fmt(best.mcpmux.rate).padStart(14)}  ${ratio
      .toFixed(2)
      .padStart(5)} (${best.median.toFixed(2)})  ${`>=${target}x`.padStart(6)}  ${(ratio >= target ? 'PASS' : 'MISS').padEnd(
      6,
    )}   (${best.sdk.cpuUsPerCall.toFixed(1)}, ${best.mcpmux.cpuUsPerCall.toFixed(1)})`,
  )
}
if (process.env.MCPMUX_BENCH_FIGURES) {
  fs.writeFileSync(process.env.MCPMUX_BENCH_FIGURES, figures.join('\n') + '\n')
}
