'use strict'
// OAuth from Node: `authorize` (an option of Hub.connect) is the person in
// the loop. Against tests/servers/net/oauth_server.py (an authorization
// server and a protected MCP endpoint): the function gets the
// authorization URL, follows the server's immediate approval as a browser
// would, and returns the redirect; without one the server fails with
// AUTH_REQUIRED, and a function that throws gives AUTH_FAILED.

const test = require('node:test')
const assert = require('node:assert/strict')
const http = require('node:http')
const path = require('node:path')
const { spawn } = require('node:child_process')
const readline = require('node:readline')

const { Hub } = require('mcpmux')
const h = require('./helpers.js')

const T = { timeout: 60_000 }
const ROOT = path.resolve(__dirname, '..', '..', '..')

async function oauthServer(t) {
  const child = spawn(h.PYTHON, [path.join(ROOT, 'tests/servers/net/oauth_server.py')], {
    stdio: ['ignore', 'pipe', 'ignore'],
  })
  t.after(() => child.kill('SIGKILL'))
  const line = await new Promise((resolve, reject) => {
    readline.createInterface({ input: child.stdout }).once('line', resolve)
    child.once('exit', () => reject(new Error('oauth_server.py exited')))
  })
  assert.match(line, /^READY \d+$/)
  return `http://127.0.0.1:${line.split(' ')[1]}`
}

function redirectOf(url) {
  return new Promise((resolve, reject) => {
    http.get(url, (res) => {
      res.resume()
      if (res.statusCode !== 302) reject(new Error(`status ${res.statusCode}`))
      else resolve(res.headers.location)
    }).on('error', reject)
  })
}

const config = (base) => ({ mcpServers: { secure: { url: `${base}/mcp`, auth: { type: 'oauth' } } } })

test('authorize function: the hub authorizes and calls the protected tool', T, async (t) => {
  process.env.XDG_CONFIG_HOME = h.tempDir()
  const base = await oauthServer(t)
  const calls = []
  const hub = await Hub.connect(config(base), {
    authorize: async (url, redirectUri, server) => {
      calls.push(server)
      return redirectOf(url)
    },
  })
  try {
    const [status] = await hub.servers()
    assert.equal(status.state, 'connected', JSON.stringify(status))
    const result = await hub.callTool('mcp_secure_echo', { x: 1 })
    assert.equal(result.content[0].text, '{"x":1}')
    assert.deepEqual(calls, ['secure'])
  } finally {
    await hub.close()
  }
})

test('no authorize function: AUTH_REQUIRED; one that throws: AUTH_FAILED', T, async (t) => {
  process.env.XDG_CONFIG_HOME = h.tempDir()
  const base = await oauthServer(t)
  let hub = await Hub.connect(config(base))
  let [status] = await hub.servers()
  assert.equal(status.error_code, 'AUTH_REQUIRED', JSON.stringify(status))
  await hub.close()
  hub = await Hub.connect(config(base), {
    authorize: () => {
      throw new Error('the user closed the browser')
    },
  })
  ;[status] = await hub.servers()
  assert.equal(status.error_code, 'AUTH_FAILED', JSON.stringify(status))
  await hub.close()
  await assert.rejects(Hub.connect(config(base), { authorize: 'yes' }), (e) => e.code === 'INVALID_INPUT')
})
