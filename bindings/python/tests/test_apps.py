"""MCP Apps (``io.modelcontextprotocol/ui``) from Python, against
tests/servers/apps_server.py (written from the ext-apps text): a tool's UI
resource and visibility are shown as the engine read them
(``ui_resource_uri``, ``app_only``), an app-only tool is never offered to a
model (LLM formats, a policy's offered list) but can be called, each
``ui://`` resource names the tools whose app it is (``app_of``), and reading
it gives the server's HTML. The rules are core's (core/src/apps.rs); these
check the translation.
"""

from __future__ import annotations

import asyncio

import mcpmux
from conftest import config, fault

MIME = "text/html;profile=mcp-app"


def apps_config() -> dict:
    entry = fault("apps_server.py")
    entry["args"].append("north")
    entry["allow_tools"] = ["show_weather", "refresh_widget"]
    entry["confirm_read_only"] = ["show_weather", "refresh_widget"]
    return config(north=entry)


def by_name(tools, name):
    found = [t for t in tools if t["name"] == name]
    assert found, [t["name"] for t in tools]
    return found[0]


def test_a_tools_app_is_shown_and_an_app_only_tool_is_never_offered_to_a_model():
    with mcpmux.Hub.connect(apps_config()) as hub:
        tools = hub.list_tools()
        weather = by_name(tools, "mcp_north_show_weather")
        assert weather["ui_resource_uri"] == "ui://widget/view.html"
        assert "app_only" not in weather
        refresh = by_name(tools, "mcp_north_refresh_widget")
        assert refresh["app_only"] is True
        assert refresh["ui_resource_uri"] == "ui://widget/view.html"
        assert by_name(tools, "mcp_north_legacy_view")["ui_resource_uri"] == "ui://widget/legacy.html"
        assert "ui_resource_uri" not in by_name(tools, "mcp_north_client_extensions")

        for fmt in ("anthropic", "openai", "openai-responses"):
            text = repr(hub.tools_for(fmt))
            assert "mcp_north_show_weather" in text, fmt
            assert "refresh_widget" not in text, fmt
        assert "mcp_north_refresh_widget" in repr(hub.tools_for("mcp"))

        # Both allowed; the app-only one is still not offered.
        policy = hub.policy()
        offered = [t["name"] for t in policy.offered()]
        assert offered == ["mcp_north_show_weather"]

        # Not offered to a model, but the host (for its app) calls it.
        result = hub.call_tool("mcp_north_refresh_widget", {})
        assert not result.get("isError"), result


def test_ui_resources_name_their_tools_and_read_back_as_the_servers_html():
    with mcpmux.Hub.connect(apps_config()) as hub:
        resources = {r["uri"]: r for r in hub.list_resources()}
        view = resources["ui://widget/view.html"]
        assert sorted(view["app_of"]) == ["mcp_north_refresh_widget", "mcp_north_show_weather"]
        assert view["server"] == "north"
        assert "app_of" not in resources["file:///north/readme.txt"]
        read = hub.read_resource("ui://widget/view.html")
        content = read["contents"][0]
        assert content["mimeType"] == MIME
        assert "north weather" in content["text"]
        assert content["_meta"]["ui"]["csp"]["connectDomains"] == ["https://api.example.com"]


def test_the_same_on_async_hub():
    async def main():
        hub = await mcpmux.AsyncHub.connect(apps_config())
        try:
            tools = await hub.list_tools()
            assert by_name(tools, "mcp_north_refresh_widget")["app_only"] is True
            resources = await hub.list_resources()
            view = [r for r in resources if r["uri"] == "ui://widget/view.html"][0]
            assert "mcp_north_show_weather" in view["app_of"]
        finally:
            await hub.close()

    asyncio.run(main())
