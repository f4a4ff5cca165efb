'use strict'
// The events extension (`io.modelcontextprotocol/events`) from Node, against
// tests/servers/events_server.py: listing event types, polling from a
// cursor, a stream whose occurrences arrive on the hub's 'event' emitter,
// webhook subscriptions, and bad or unknown options refused. The work is
// core's (core/tests/events_extension.rs); these check the translation.

const test = require('node:test')
const assert = require('node:assert/strict')

const h = require('./helpers.js')
const { Hub, EventStream, McpmuxError } = require('mcpmux')

const T = { timeout: 60_000 }
const SECRET = 'whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0'

const events = (env) => h.fault('events_server.py', env)
const text = (r) => r.content[0].text
const emit = async (hub, name, n) => text(await hub.callTool('mcp_ev_emit', { name, data: { n } }))
const serverState = async (hub) => JSON.parse(text(await hub.callTool('mcp_ev_state', {})))
const code = (c) => (e) => e instanceof McpmuxError && e.code === c

/** The next 'event' of `hub` that `pick` accepts, within 20 s. */
function nextEvent(hub, pick) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      hub.off('event', on)
      reject(new Error('no such event within 20 s'))
    }, 20_000)
    function on(event) {
      if (!pick(event)) return
      clearTimeout(timer)
      hub.off('event', on)
      resolve(event)
    }
    hub.on('event', on)
  })
}

async function until(predicate, what) {
  const deadline = Date.now() + 20_000
  while (!(await predicate())) {
    assert.ok(Date.now() < deadline, what)
    await new Promise((r) => setTimeout(r, 20))
  }
}

test('lists event types only of servers offering the extension', T, async () => {
  const hub = await Hub.connect({
    mcpServers: {
      ev: events({ CAPABILITY: 'extension' }),
      top: events({ CAPABILITY: 'top' }),
      none: events({ CAPABILITY: 'none' }),
    },
  })
  try {
    const seen = (await hub.listEvents()).map((e) => `${e.server} ${e.name}`).sort()
    assert.deepEqual(seen, ['ev build.finished', 'ev ticket.created', 'top build.finished', 'top ticket.created'])
    assert.equal((await hub.listEvents('top')).length, 2)
    assert.equal((await hub.listEvents({ server: 'ev' })).length, 2)
    await assert.rejects(hub.listEvents('none'), (e) => code('INVALID_INPUT')(e) && /io\.modelcontextprotocol\/events/.test(e.message))
    await assert.rejects(hub.pollEvents('none', 'ticket.created'), code('INVALID_INPUT'))
  } finally {
    await hub.close()
  }
})

test('polls from a cursor', T, async () => {
  const hub = await Hub.connect({ mcpServers: { ev: events({ KEEP: '4' }) } })
  try {
    const first = await hub.pollEvents('ev', 'ticket.created')
    assert.deepEqual(first.events, [])
    assert.equal(first.truncated, false)
    assert.equal(first.has_more, false)
    assert.equal(first.next_poll_ms, 1000)
    const start = first.cursor
    assert.equal(typeof start, 'string')
    for (let n = 0; n < 3; n++) await emit(hub, 'ticket.created', n)
    await emit(hub, 'build.finished', 9)
    const page = await hub.pollEvents('ev', 'ticket.created', { cursor: start, maxEvents: 2 })
    assert.deepEqual(
      page.events.map((e) => e.data),
      [{ n: 0 }, { n: 1 }],
    )
    assert.equal(page.has_more, true)
    assert.equal(page.events[0].name, 'ticket.created')
    assert.equal(typeof page.events[0].event_id, 'string')
    const rest = await hub.pollEvents('ev', 'ticket.created', { cursor: page.cursor, arguments: {} })
    assert.deepEqual(
      rest.events.map((e) => e.data),
      [{ n: 2 }],
    )
    for (let n = 3; n < 8; n++) await emit(hub, 'ticket.created', n)
    const late = await hub.pollEvents('ev', 'ticket.created', { cursor: start })
    assert.equal(late.truncated, true)
    assert.equal(late.events.length, 4)
    await assert.rejects(hub.pollEvents('ev', 'no.such'), (e) => code('SERVER_ERROR')(e) && e.rpcCode === -32023)
  } finally {
    await hub.close()
  }
})

test('a stream delivers occurrences on the hub events and keeps the cursor', T, async () => {
  const hub = await Hub.connect({ mcpServers: { ev: events({ HEARTBEAT_MS: '100' }) } })
  try {
    await emit(hub, 'ticket.created', 0)
    const active = nextEvent(hub, (e) => e.type === 'event_stream' && e.state === 'active')
    const replayed = nextEvent(hub, (e) => e.type === 'event')
    const stream = await hub.streamEvents('ev', 'ticket.created', { cursor: 'pos-0' })
    assert.ok(stream instanceof EventStream)
    assert.equal(typeof stream.id, 'number')
    assert.equal((await active).subscription, stream.id)
    const first = await replayed
    assert.deepEqual(first.data, { n: 0 })
    assert.equal(first.event_id, 'evt-1')
    const pushed = nextEvent(hub, (e) => e.type === 'event')
    await emit(hub, 'build.finished', 1)
    await emit(hub, 'ticket.created', 2)
    const e = await pushed
    assert.equal(e.server, 'ev')
    assert.equal(e.subscription, stream.id)
    assert.equal(e.name, 'ticket.created')
    assert.deepEqual(e.data, { n: 2 })
    assert.equal(e.cursor, 'pos-3')
    await emit(hub, 'build.finished', 3)
    await until(() => stream.cursor === 'pos-4', 'heartbeats move the cursor')
    stream.stop()
    stream.stop()
    await until(async () => {
      const s = await serverState(hub)
      return s.streams.length === 0 && s.cancelled.length === 1
    }, 'the stream was not cancelled')
    // A stream the server ends is told as ended.
    const again = await hub.streamEvents('ev', 'build.finished')
    const ended = nextEvent(hub, (e) => e.type === 'event_stream' && e.state === 'ended')
    await until(async () => (await serverState(hub)).streams.length === 1, 'no open stream')
    await hub.callTool('mcp_ev_end_streams', {})
    assert.equal((await ended).subscription, again.id)
    again.stop()
  } finally {
    await hub.close()
  }
})

test("a stream's error and termination carry the server's code and data", T, async () => {
  const hub = await Hub.connect({ mcpServers: { ev: events({}) } })
  try {
    const active = nextEvent(hub, (e) => e.type === 'event_stream' && e.state === 'active')
    const stream = await hub.streamEvents('ev', 'ticket.created')
    await active
    const error = nextEvent(hub, (e) => e.type === 'event_stream' && e.state === 'error')
    await hub.callTool('mcp_ev_fail_streams', {
      kind: 'error', code: -32025, message: 'Forbidden', data: { reason: 'revoked' },
    })
    const e = await error
    assert.equal(e.subscription, stream.id)
    assert.equal(e.error_code, -32025)
    assert.deepEqual(e.error_data, { reason: 'revoked' })
    const ended = nextEvent(hub, (e) => e.type === 'event_stream' && e.state === 'terminated')
    await hub.callTool('mcp_ev_fail_streams', { kind: 'terminated', code: -32023, message: 'gone' })
    const t = await ended
    assert.equal(t.error_code, -32023)
    assert.equal(t.error_data, undefined)
    stream.stop()
  } finally {
    await hub.close()
  }
})

test('webhook subscriptions', T, async () => {
  const hub = await Hub.connect({ mcpServers: { ev: events() } })
  try {
    await assert.rejects(hub.subscribeEvents('ev', 'build.finished', 'http://example.com/hook', SECRET), code('INVALID_INPUT'))
    await assert.rejects(
      hub.subscribeEvents('ev', 'build.finished', 'https://example.com/hook', 'not-a-secret-at-all'),
      (e) => code('INVALID_INPUT')(e) && !e.message.includes('not-a-secret-at-all'),
    )
    assert.equal((await serverState(hub)).secrets_seen, 0)
    const sub = await hub.subscribeEvents('ev', 'build.finished', 'https://example.com/hook', SECRET, {
      arguments: { repo: 'x' },
      ttlMs: 60_000,
    })
    assert.match(sub.id, /^sub_/)
    assert.equal(sub.truncated, false)
    assert.equal(typeof sub.refresh_before, 'string')
    const state = await serverState(hub)
    assert.equal(state.subscriptions[0].url, 'https://example.com/hook')
    assert.equal(state.subscriptions[0].ttlMs, 60000)
    await assert.rejects(
      hub.subscribeEvents('ev', 'ticket.created', 'https://example.com/hook', SECRET),
      (e) => code('SERVER_ERROR')(e) && e.rpcCode === -32026,
    )
    await hub.unsubscribeEvents('ev', 'build.finished', 'https://example.com/hook', { arguments: { repo: 'x' } })
    assert.deepEqual((await serverState(hub)).subscriptions, [])
  } finally {
    await hub.close()
  }
})

test('bad arguments and unknown options are refused', T, async () => {
  const hub = await Hub.connect({ mcpServers: { ev: events() } })
  try {
    const bad = [
      hub.pollEvents('ev', 'ticket.created', { arguments: [1] }),
      hub.pollEvents('ev', 'ticket.created', { maxEvents: -1 }),
      hub.pollEvents('ev', 'ticket.created', { maxEvents: 1.5 }),
      hub.pollEvents('ev', 'ticket.created', { max_events: 3 }),
      hub.pollEvents('ev', 7),
      hub.streamEvents('ev', 'ticket.created', { cursor: 5 }),
      hub.streamEvents('ev', 'ticket.created', { heartbeatMs: 0 }),
      hub.streamEvents('ev', 'ticket.created', { heartbeat: 100 }),
      hub.subscribeEvents('ev', 'build.finished', 'https://x/h', SECRET, { ttlMs: -1 }),
      hub.subscribeEvents('ev', 'build.finished', 'https://x/h', SECRET, { ttl: 5 }),
      hub.unsubscribeEvents('ev', 'build.finished', 'https://x/h', { cursor: 'pos-0' }),
    ]
    for (const p of bad) await assert.rejects(p, code('INVALID_INPUT'))
    await assert.rejects(hub.pollEvents('ev', 'ticket.created', { max_events: 3 }), /unknown option 'max_events'/)
  } finally {
    await hub.close()
  }
  await assert.rejects(hub.listEvents(), code('TRANSPORT_CLOSED'))
  await assert.rejects(hub.streamEvents('ev', 'ticket.created'), code('TRANSPORT_CLOSED'))
})

test('maxAgeMs, noExpiry and heartbeatMs', T, async () => {
  const hub = await Hub.connect({
    mcpServers: { ev: events({ PRELOAD: '3', PRELOAD_AGE_MS: '600000', HEARTBEAT_MS: '0' }) },
  })
  try {
    await emit(hub, 'ticket.created', 7)
    const all = await hub.pollEvents('ev', 'ticket.created', { cursor: 'pos-0' })
    assert.equal(all.events.length, 4)
    assert.equal(all.truncated, false)
    const recent = await hub.pollEvents('ev', 'ticket.created', { cursor: 'pos-0', maxAgeMs: 60_000 })
    assert.deepEqual(
      recent.events.map((e) => e.data),
      [{ n: 7 }],
    )
    assert.equal(recent.truncated, true)
    await assert.rejects(hub.pollEvents('ev', 'ticket.created', { maxAgeMs: -5 }), code('INVALID_INPUT'))

    const sub = await hub.subscribeEvents('ev', 'build.finished', 'https://h.example.com/x', SECRET, { noExpiry: true })
    assert.equal(sub.refresh_before ?? null, null)
    assert.equal((await serverState(hub)).subscriptions[0].ttlMs, null)
    await assert.rejects(
      hub.subscribeEvents('ev', 'build.finished', 'https://h.example.com/x', SECRET, { noExpiry: true, ttlMs: 60_000 }),
      code('INVALID_INPUT'),
    )
    await assert.rejects(
      hub.subscribeEvents('ev', 'build.finished', 'https://h.example.com/x', SECRET, { noExpiry: 'yes' }),
      code('INVALID_INPUT'),
    )

    const active = nextEvent(hub, (e) => e.type === 'event_stream' && e.state === 'active')
    const first = nextEvent(hub, (e) => e.type === 'event')
    const again = nextEvent(hub, (e) => e.type === 'event_stream' && e.state === 'reconnecting')
    const stream = await hub.streamEvents('ev', 'ticket.created', { cursor: 'pos-0', maxAgeMs: 60_000, heartbeatMs: 200 })
    assert.equal((await active).truncated, true)
    assert.deepEqual((await first).data, { n: 7 })
    assert.equal((await again).subscription, stream.id)
    stream.stop()
  } finally {
    await hub.close()
  }
})
