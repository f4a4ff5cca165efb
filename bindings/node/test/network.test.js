'use strict'
// The network policy through Node: Hub.connect(config, { denyPrivate,
// allowNetworks, requireHttps }) and the config's `network` table, against a
// hostile server on loopback (tests/servers/net/faults.py). A refused server
// is `failed` like an unreachable one, naming the server, the host and the
// address; the demo server in the same hub keeps working.

const test = require('node:test')
const assert = require('node:assert/strict')
const { spawn } = require('node:child_process')
const path = require('node:path')
const readline = require('node:readline')

const { Hub, McpmuxError } = require('..')
const { DEMO, PYTHON, FAULTS } = require('./helpers')

const REFUSED = 'refused by the [network] policy'

/** A correct minimal Streamable HTTP server on 127.0.0.1: { port, stop }. */
async function hostile() {
  const child = spawn(PYTHON, [path.join(FAULTS, 'net', 'faults.py'), '--fault', '500', '--on', 'call'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  })
  const lines = readline.createInterface({ input: child.stdout })
  const [line] = await new Promise((resolve) => lines.once('line', (l) => resolve([l])))
  assert.match(line, /^READY \d+$/)
  return { port: Number(line.split(' ')[1]), stop: () => child.kill() }
}

function config(port, host = '127.0.0.1', network) {
  const c = {
    mcp: { restart: 'never' },
    mcpServers: { demo: { command: DEMO }, local: { type: 'http', url: `http://${host}:${port}/mcp` } },
  }
  if (network !== undefined) c.network = network
  return c
}

async function status(hub, name) {
  return (await hub.servers()).find((s) => s.name === name)
}

async function assertRefused(hub, connectingTo) {
  assert.equal((await status(hub, 'demo')).state, 'connected')
  const s = await status(hub, 'local')
  assert.equal(s.state, 'failed', JSON.stringify(s))
  assert.equal(s.error_code, 'CONNECT_FAILED')
  assert.ok(s.error.includes("server 'local'"), s.error)
  assert.ok(s.error.includes(`connecting to ${connectingTo}`), s.error)
  assert.ok(s.error.includes('loopback') && s.error.includes(REFUSED), s.error)
}

test('denyPrivate refuses loopback and a name resolving there; allowNetworks let it through', async () => {
  const server = await hostile()
  try {
    let hub = await Hub.connect(config(server.port), { denyPrivate: true })
    await assertRefused(hub, '127.0.0.1 is refused')
    await hub.close()
    hub = await Hub.connect(config(server.port, 'localhost'), { denyPrivate: true })
    await assertRefused(hub, 'localhost (it resolves to ')
    await hub.close()
    hub = await Hub.connect(config(server.port, 'localhost'), { denyPrivate: true, allowNetworks: ['127.0.0.0/8'] })
    assert.equal((await status(hub, 'local')).state, 'connected')
    await hub.close()
  } finally {
    server.stop()
  }
})

test('the config network table, and requireHttps', async () => {
  const server = await hostile()
  try {
    let hub = await Hub.connect(config(server.port, '127.0.0.1', { deny_private: true }))
    await assertRefused(hub, '127.0.0.1 is refused')
    await hub.close()
    hub = await Hub.connect(config(server.port, '127.0.0.1', { allow_networks: ['127.0.0.0/8'] }), {
      denyPrivate: true,
      requireHttps: true,
    })
    const s = await status(hub, 'local')
    assert.equal(s.state, 'failed')
    assert.ok(s.error.includes('require_https'), s.error)
    await hub.close()
  } finally {
    server.stop()
  }
})

test('bad network options are INVALID_INPUT', async () => {
  const c = { mcpServers: { demo: { command: DEMO } } }
  const invalid = async (options, re) => {
    await assert.rejects(Hub.connect(c, options), (e) => {
      assert.ok(e instanceof McpmuxError, String(e))
      assert.equal(e.code, 'INVALID_INPUT')
      assert.match(e.message, re)
      return true
    })
  }
  await invalid({ denyPrivate: true, allowNetworks: ['10.1.2.0/33'] }, /options\.allowNetworks\[0\] '10\.1\.2\.0\/33'/)
  await invalid({ allowNetworks: '10.0.0.0/8' }, /options\.allowNetworks/)
  await invalid({ denyPrivate: 'yes' }, /options\.denyPrivate/)
  await invalid({ denyPrivat: true }, /denyPrivate/)
  await assert.rejects(Hub.connect({ ...c, network: { deny_privat: true } }), /did you mean 'deny_private'/)
})
