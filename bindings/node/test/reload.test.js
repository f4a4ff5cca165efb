'use strict'
// hub.reload(config): an unchanged server keeps its process, a removed one
// is closed, an added one is started (its tools appear), a changed one is
// started again; a malformed config rejects with CONFIG_INVALID. Server
// processes are found by a marker in their environment.

const test = require('node:test')
const assert = require('node:assert/strict')
const crypto = require('node:crypto')
const fs = require('node:fs')

const { Hub } = require('..')
const h = require('./helpers.js')

const T = { timeout: 60_000 }

/** Live (non-zombie) processes whose environment holds MCPMUX_TEST_MARKER=marker. */
function markedPids(marker) {
  const needle = `MCPMUX_TEST_MARKER=${marker}`
  const out = []
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    const pid = Number(name)
    try {
      if (!fs.readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(needle)) continue
      if (h.alive(pid)) out.push(pid)
    } catch {
      // gone meanwhile, or not ours
    }
  }
  return out
}

function marked(marker, extra = {}) {
  return { command: h.DEMO, env: { MCPMUX_TEST_MARKER: marker }, ...extra }
}

async function waitUntil(predicate) {
  // Only catches hangs: each condition holds within a second or two.
  for (let i = 0; i < 1500 && !predicate(); i++) await new Promise((r) => setTimeout(r, 20))
  return predicate()
}

test('reload keeps unchanged servers and replaces the rest', T, async () => {
  const m = () => `mcpmux-test-${crypto.randomUUID()}`
  const [keep, gone, change, added] = [m(), m(), m(), m()]
  const hub = await Hub.connect({
    mcpServers: {
      keep: marked(keep),
      gone: marked(gone),
      change: marked(change, { timeout_seconds: 30 }),
    },
  })
  try {
    const [keepPid] = markedPids(keep)
    const [gonePid] = markedPids(gone)
    const [changePid] = markedPids(change)
    assert.ok(keepPid && gonePid && changePid)
    await assert.rejects(hub.reload({ mcpServers: { x: { command: 1 } } }), (e) => e.code === 'CONFIG_INVALID')
    assert.deepEqual(markedPids(gone), [gonePid], 'a bad config changed something')

    await hub.reload({
      mcpServers: {
        keep: marked(keep),
        change: marked(change, { timeout_seconds: 31 }),
        added: marked(added),
      },
    })
    assert.deepEqual(markedPids(keep), [keepPid], 'the unchanged server was restarted')
    assert.ok(await waitUntil(() => markedPids(gone).length === 0), 'the removed server still runs')
    assert.ok(await waitUntil(() => !markedPids(change).includes(changePid)))
    assert.equal(markedPids(change).length, 1)
    assert.equal(markedPids(added).length, 1)
    const servers = await hub.servers()
    assert.deepEqual(servers.map((s) => s.name), ['keep', 'change', 'added'])
    const names = (await hub.listTools()).map((t) => t.name)
    assert.ok(names.includes('mcp_added_echo') && !names.includes('mcp_gone_echo'), names.join(','))
    const r = await hub.callTool('mcp_added_echo', { text: 'new' })
    assert.equal(r.content[0].text, 'new')

    // A lazy server added by a reload starts on its first call.
    const lazy = m()
    await hub.reload({ mcpServers: { keep: marked(keep), later: marked(lazy, { lazy: true }) } })
    assert.deepEqual((await hub.servers()).map((s) => s.state), ['connected', 'idle'])
    assert.deepEqual(markedPids(lazy), [])
    assert.equal((await hub.callTool('mcp_later_echo', { text: 'now' })).content[0].text, 'now')
    assert.equal(markedPids(lazy).length, 1)
  } finally {
    await hub.close()
  }
  await assert.rejects(hub.reload({ mcpServers: { keep: marked(keep) } }), (e) => e.code === 'TRANSPORT_CLOSED')
})
