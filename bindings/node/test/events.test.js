'use strict'
// Hub events (hub.on('event'), hub.events(), the onEvent connect option) and
// the rest of the MCP client surface (ping, setLogLevel, complete,
// subscribe/unsubscribe) against server-everything over stdio. No sleeps:
// every event is awaited; the only timers catch hangs.

const test = require('node:test')
const assert = require('node:assert/strict')
const { spawnSync } = require('node:child_process')
const path = require('node:path')

const { Hub, McpmuxError } = require('mcpmux')
const h = require('./helpers.js')

const T = { timeout: 120_000 }
/** Only catches hangs: each event comes far sooner. */
const HANG_MS = 60_000
const PROMPT = { type: 'ref/prompt', name: 'completable-prompt' }
const TEMPLATE = { type: 'ref/resource', uri: 'demo://resource/dynamic/text/{resourceId}' }
const BROKEN = { command: '/nonexistent/mcpmux-no-such-server' }

/** `promise`, or a rejection naming `what` if it hangs. */
function bounded(promise, what) {
  let timer
  const hang = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing within ${HANG_MS} ms`)), HANG_MS)
  })
  return Promise.race([promise, hang]).finally(() => clearTimeout(timer))
}

/** The next event of `events` that `pick` accepts (others are skipped). */
function nextMatching(events, what, pick) {
  return bounded(
    (async () => {
      for (;;) {
        const { value, done } = await events.next()
        if (done) throw new Error(`${what}: the events ended first`)
        if (pick(value)) return value
      }
    })(),
    what,
  )
}

/** Resolves with the first event `pick` accepts among `hub`'s 'event's. */
function whenEmitted(hub, what, pick) {
  return bounded(
    new Promise((resolve) => {
      const listener = (event) => {
        if (pick(event)) {
          hub.off('event', listener)
          resolve(event)
        }
      }
      hub.on('event', listener)
    }),
    what,
  )
}

test("onEvent gets each server's first state", T, async () => {
  const states = new Map()
  let resolveBoth
  const both = new Promise((resolve) => (resolveBoth = resolve))
  const hub = await Hub.connect(
    { mcpServers: { everything: h.everything(), broken: BROKEN } },
    {
      onEvent(event) {
        if (event.type === 'server_state') states.set(event.server, event)
        if (states.size === 2) resolveBoth()
      },
    },
  )
  try {
    await bounded(both, 'server_state of both servers')
    assert.equal(states.get('everything').state, 'connected')
    assert.equal(states.get('everything').error, undefined)
    assert.equal(states.get('broken').state, 'failed')
    assert.equal(states.get('broken').code, 'CONNECT_FAILED')
    assert.match(states.get('broken').error, /mcpmux-no-such-server/)
  } finally {
    await hub.close()
  }
  await assert.rejects(Hub.connect({ mcpServers: {} }, { onEvent: 42 }), (e) => e instanceof McpmuxError && e.code === 'INVALID_INPUT')
})

test('events(): a log, a state, tools_changed at close, then the end', T, async () => {
  const hub = await Hub.connect({ mcpServers: { everything: h.everything() } })
  const events = hub.events()
  try {
    await hub.callTool('mcp_everything_toggle-simulated-logging')
    const log = await nextMatching(events, 'log', (e) => e.type === 'log')
    assert.equal(log.server, 'everything')
    assert.equal(typeof log.level, 'string')
    assert.match(JSON.stringify(log.data), /message/)

    await hub.refresh('everything')
    const state = await nextMatching(events, 'server_state', (e) => e.type === 'server_state')
    assert.deepEqual([state.server, state.state], ['everything', 'connected'])

    const before = (await hub.listTools()).length
    assert.ok(before > 0)
  } finally {
    await hub.close()
  }
  const gone = await nextMatching(events, 'tools_changed', (e) => e.type === 'tools_changed')
  assert.equal(gone.server, 'everything')
  assert.deepEqual(gone.added, [])
  assert.ok(gone.removed.length > 0, JSON.stringify(gone))
  // The iteration ends with the hub.
  await bounded(
    (async () => {
      for await (const _ of events);
    })(),
    'the end of the events',
  )
  assert.deepEqual(await events.next(), { value: undefined, done: true })
  assert.throws(() => hub.events(), (e) => e instanceof McpmuxError && e.code === 'TRANSPORT_CLOSED')
})

test('ping, setLogLevel and complete', T, async () => {
  const hub = await Hub.connect({ mcpServers: { everything: h.everything() } })
  try {
    const rtt = await hub.ping('everything')
    assert.equal(typeof rtt, 'number')
    assert.ok(rtt > 0 && rtt < HANG_MS / 1000, String(rtt))
    await assert.rejects(hub.ping('nope'), (e) => e instanceof McpmuxError && e.code === 'UNKNOWN_SERVER')

    await hub.setLogLevel('everything', 'error')
    await assert.rejects(hub.setLogLevel('everything', 'loud'), (e) => {
      return e instanceof McpmuxError && e.code === 'INVALID_INPUT' && /loud/.test(e.message)
    })

    let c = await hub.complete(PROMPT, { name: 'department', value: 'E' })
    assert.deepEqual(c.values, ['Engineering'])
    c = await hub.complete(PROMPT, { name: 'name', value: '' }, { arguments: { department: 'Sales' } })
    assert.deepEqual(c.values, ['David', 'Eve', 'Frank'])
    c = await hub.complete(TEMPLATE, { name: 'resourceId', value: '7' }, null, 'everything')
    assert.deepEqual(c.values, ['7'])
    await assert.rejects(hub.complete({ type: 'ref/prompt', name: 'no-such-prompt' }, { name: 'x', value: '' }), (e) => {
      return e instanceof McpmuxError && e.code === 'INVALID_INPUT' && /no-such-prompt/.test(e.message)
    })
    await assert.rejects(hub.complete('completable-prompt', { name: 'x', value: '' }), (e) => e.code === 'INVALID_INPUT')
  } finally {
    await hub.close()
  }
})

test("a subscribed resource's updates arrive as 'event's", T, async () => {
  const hub = await Hub.connect({ mcpServers: { everything: h.everything() } })
  try {
    const uri = (await hub.listResources())[0].uri
    const updated = whenEmitted(hub, 'resource_updated', (e) => e.type === 'resource_updated')
    await hub.subscribe(uri)
    await hub.callTool('mcp_everything_toggle-subscriber-updates')
    assert.deepEqual(await updated, { type: 'resource_updated', server: 'everything', uri })
    assert.equal(hub.listenerCount('event'), 0)
    await hub.unsubscribe(uri, 'everything')
  } finally {
    await hub.close()
  }
})

test('an event listener does not keep the process alive, before or after close()', T, () => {
  const script = `
    const { Hub } = require(${JSON.stringify(path.resolve(__dirname, '..'))})
    Hub.connect(${JSON.stringify({ mcpServers: { everything: h.everything() } })}, {
      onEvent: () => {},
    }).then(async (hub) => {
      hub.on('event', () => {})
      await hub.ping('everything')
      if (process.argv[1] === 'close') await hub.close()
      console.log('done')
    })
  `
  for (const mode of ['close', 'open']) {
    const r = spawnSync(process.execPath, ['-e', script, mode], { encoding: 'utf8', timeout: HANG_MS })
    assert.equal(r.error, undefined, `${mode}: the process did not exit (${r.error})`)
    assert.equal(r.status, 0, `${mode}: ${r.stderr}`)
    assert.match(r.stdout, /done/, mode)
  }
})
