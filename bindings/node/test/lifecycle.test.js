'use strict'
// Process lifetime: an open hub never keeps Node running, and its servers
// never outlive the process; a hub that becomes garbage kills its servers;
// a pending call does keep the process alive until it settles.

const test = require('node:test')
const assert = require('node:assert/strict')
const { spawn } = require('node:child_process')

const h = require('./helpers.js')

const T = { timeout: 60_000 }

/** Only turns a child that never exits into a failure: each exits far sooner. */
const HANG_MS = 30_000

/**
 * Runs `body` in a child Node process that has `mcpmux` (as `Hub`), the
 * helpers (as `h`) and `serverPids()` (the pids of its own server
 * processes). Resolves to {code, signal, stdout, stderr, hung} where hung
 * says the child did not exit on its own and was killed after HANG_MS.
 */
function child(body, { args = [] } = {}) {
  const script = `
    const { Hub } = require(${JSON.stringify(h.PKG_DIR)})
    const h = require(${JSON.stringify(require.resolve('./helpers.js'))})
    const serverPids = () => h.childrenOf(process.pid)
    ;(async () => { ${body} })().catch((e) => { console.error(e); process.exitCode = 99 })
  `
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [...args, '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    let hung = false
    p.stdout.on('data', (d) => (stdout += d))
    p.stderr.on('data', (d) => (stderr += d))
    const killer = setTimeout(() => {
      hung = true
      p.kill('SIGKILL')
    }, HANG_MS)
    p.on('close', (code, signal) => {
      clearTimeout(killer)
      resolve({ code, signal, stdout, stderr, hung })
    })
  })
}

async function allGone(pids) {
  await h.waitFor(() => pids.every((pid) => !h.alive(pid)), 5000, `servers ${pids} to be gone`)
}

test('a process with an open hub exits on its own, and its servers with it', T, async () => {
  const r = await child(`
    const hub = await Hub.connect(h.demoConfig({ everything: h.everything(), hang: h.fault('hang.py') }))
    const result = await hub.callTool('mcp_demo_echo', { text: 'hi' })
    if (result.content[0].text !== 'hi') throw new Error('bad result')
    console.log(JSON.stringify(serverPids()))
    // no close(): the script just ends
  `)
  // Exited by itself (not killed as hung) although hang.py never exits on
  // its own while its stdin is open: the hub held no handle of the loop.
  assert.equal(r.hung, false, 'the open hub kept the process alive')
  assert.equal(r.signal, null, r.stderr)
  assert.equal(r.code, 0, r.stderr)
  const pids = JSON.parse(r.stdout)
  assert.equal(pids.length, 3, `three server processes: ${r.stdout}`)
  await allGone(pids)
})

test('process.exit with calls in flight leaves no server behind', T, async () => {
  const r = await child(`
    const hub = await Hub.connect({ mcpServers: { hang: h.fault('hang.py'), demo: { command: h.DEMO } } })
    hub.callTool('mcp_hang_wait_forever', {})
    hub.callTool('mcp_demo_slow', { seconds: 60 })
    await new Promise((r) => setTimeout(r, 200))
    console.log(JSON.stringify(serverPids()))
    process.exit(0)
  `)
  assert.equal(r.code, 0, r.stderr)
  const pids = JSON.parse(r.stdout)
  assert.equal(pids.length, 2)
  await allGone(pids)
})

test('a closed hub does not keep the process alive', T, async () => {
  const r = await child(`
    const hub = await Hub.connect(h.demoConfig())
    const pids = serverPids()
    await hub.close()
    if (pids.some(h.alive)) throw new Error('close() returned with the server still running')
    console.log(JSON.stringify(pids))
  `)
  assert.equal(r.hung, false, 'the closed hub kept the process alive')
  assert.equal(r.code, 0, r.stderr)
  assert.equal(JSON.parse(r.stdout).length, 1)
})

test('a pending call keeps the process alive until it settles', T, async () => {
  // Nothing but the pending call is left for the loop to wait on; the
  // child prints the server's answer ("done ...", sent only when the slow
  // call ran to its end) and then exits by itself.
  const r = await child(`
    const hub = await Hub.connect(h.demoConfig())
    console.log('connected')
    const result = await hub.callTool('mcp_demo_slow', { seconds: 1, steps: 0 })
    console.log('settled', result.isError === true, result.content[0].text)
  `)
  assert.equal(r.hung, false)
  assert.equal(r.code, 0, r.stderr)
  assert.match(r.stdout, /^connected\nsettled false done/)
})

test('a hub that becomes garbage kills its servers', T, async () => {
  const r = await child(
    `
    let hub = await Hub.connect(h.demoConfig())
    await hub.callTool('mcp_demo_echo', { text: 'x' })
    const pids = serverPids()
    hub = null
    for (let i = 0; i < 50 && pids.some(h.alive); i++) {
      global.gc()
      await new Promise((r) => setTimeout(r, 50))
    }
    console.log(JSON.stringify({ pids, alive: pids.filter(h.alive) }))
  `,
    { args: ['--expose-gc'] },
  )
  assert.equal(r.code, 0, r.stderr)
  const { pids, alive } = JSON.parse(r.stdout)
  assert.equal(pids.length, 1)
  assert.deepEqual(alive, [], 'killed while the process still runs')
})
