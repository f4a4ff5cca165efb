'use strict'
// MCP Apps (`io.modelcontextprotocol/ui`) from Node, against
// tests/servers/apps_server.py (written from the ext-apps text): a tool's UI
// resource and visibility as the engine read them (`ui_resource_uri`,
// `app_only`), an app-only tool never offered to a model (LLM formats, a
// policy's offered list) but callable, each `ui://` resource naming the
// tools whose app it is (`app_of`), and reading it giving the server's HTML.
// The rules are core's (core/src/apps.rs); these check the translation.

const test = require('node:test')
const assert = require('node:assert/strict')

const h = require('./helpers.js')

const T = { timeout: 60_000 }
const MIME = 'text/html;profile=mcp-app'

function config() {
  const entry = h.fault('apps_server.py')
  entry.args.push('north')
  entry.allow_tools = ['show_weather', 'refresh_widget']
  entry.confirm_read_only = ['show_weather', 'refresh_widget']
  return { mcpServers: { north: entry } }
}

const withHub = (fn) => h.withHub(config(), fn)

const named = (tools, name) => {
  const found = tools.find((t) => t.name === name)
  assert.ok(found, `${name} in ${tools.map((t) => t.name)}`)
  return found
}

test("a tool's app is shown, and an app-only tool is never offered to a model", T, () =>
  withHub(async (hub) => {
    const tools = await hub.listTools()
    const weather = named(tools, 'mcp_north_show_weather')
    assert.equal(weather.ui_resource_uri, 'ui://widget/view.html')
    assert.equal(weather.app_only, undefined)
    const refresh = named(tools, 'mcp_north_refresh_widget')
    assert.equal(refresh.app_only, true)
    assert.equal(refresh.ui_resource_uri, 'ui://widget/view.html')
    assert.equal(named(tools, 'mcp_north_legacy_view').ui_resource_uri, 'ui://widget/legacy.html')
    assert.equal(named(tools, 'mcp_north_client_extensions').ui_resource_uri, undefined)

    for (const format of ['anthropic', 'openai', 'openai-responses']) {
      const text = JSON.stringify(await hub.toolsFor(format))
      assert.ok(text.includes('mcp_north_show_weather'), format)
      assert.ok(!text.includes('refresh_widget'), format)
    }
    assert.ok(JSON.stringify(await hub.toolsFor('mcp')).includes('mcp_north_refresh_widget'))

    const offered = (await hub.policy().offered()).map((t) => t.name)
    assert.deepEqual(offered, ['mcp_north_show_weather'])
    const result = await hub.callTool('mcp_north_refresh_widget', {})
    assert.ok(!result.isError, JSON.stringify(result))
  }))

test('ui:// resources name their tools and read back as the server sent them', T, () =>
  withHub(async (hub) => {
    const resources = await hub.listResources()
    const view = resources.find((r) => r.uri === 'ui://widget/view.html')
    assert.ok(view, JSON.stringify(resources))
    assert.deepEqual([...view.app_of].sort(), ['mcp_north_refresh_widget', 'mcp_north_show_weather'])
    const plain = resources.find((r) => r.uri === 'file:///north/readme.txt')
    assert.equal(plain.app_of, undefined)
    const read = await hub.readResource('ui://widget/view.html')
    assert.equal(read.contents[0].mimeType, MIME)
    assert.match(read.contents[0].text, /north weather/)
    assert.deepEqual(read.contents[0]._meta.ui.csp.connectDomains, ['https://api.example.com'])
  }))
