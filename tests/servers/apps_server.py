#!/usr/bin/env python3
"""Test server: an MCP Apps server (ext-apps specification 2026-01-26),
written from its text. Usage: apps_server.py LABEL

It declares the extension (`capabilities.extensions["io.modelcontextprotocol/ui"]`)
and the `resources` capability, and records the client's capabilities.

Tools (each names its UI in `_meta.ui.resourceUri`):
  show_weather    visible to model and app      -> ui://widget/view.html
  refresh_widget  app only (visibility ["app"])  -> ui://widget/view.html
  legacy_view     the flat `_meta["ui/resourceUri"]` key -> ui://widget/legacy.html
  secret_panel    (a policy test denies it)     -> ui://secret/panel.html
  client_extensions  returns the client's declared `capabilities.extensions`
  render_view     a result naming UI resources: `_meta.ui.resourceUri`, a
                  `resource_link` and an embedded `resource` (ui:// URIs)
  touch_view      sends notifications/resources/updated for
                  ui://widget/view.html (to a client that subscribed to it)
  subscribed      the URIs subscribed to now, as JSON
Resources: the three UI resources (`text/html;profile=mcp-app`, `_meta.ui`
with a CSP) and one plain `file:///LABEL/readme.txt`; one template,
`ui://widget/{name}.html`, whose every expansion reads as HTML. The HTML
carries LABEL, so a test can tell two servers' apps apart. Resources can be
subscribed to.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _mini  # noqa: E402

LABEL = sys.argv[1] if len(sys.argv) > 1 else "apps"
MIME = "text/html;profile=mcp-app"
UI_META = {"ui": {"csp": {"connectDomains": ["https://api.example.com"]}, "prefersBorder": True}}


def ui_tool(name, description, uri, visibility=None, flat=False):
    tool = _mini.tool(name, description)
    if flat:
        tool["_meta"] = {"ui/resourceUri": uri}
    else:
        ui = {"resourceUri": uri}
        if visibility is not None:
            ui["visibility"] = visibility
        tool["_meta"] = {"ui": ui}
    return tool


TOOLS = [
    ui_tool("show_weather", "Show the weather in a widget.", "ui://widget/view.html", ["model", "app"]),
    ui_tool("refresh_widget", "Refresh the widget's data (called by the app).", "ui://widget/view.html", ["app"]),
    ui_tool("legacy_view", "A view named with the older flat key.", "ui://widget/legacy.html", flat=True),
    ui_tool("secret_panel", "A panel the operator denies.", "ui://secret/panel.html"),
    _mini.tool("client_extensions", "Return the extensions the client declared."),
    _mini.tool("render_view", "Return a result that names UI resources."),
    _mini.tool("touch_view", "Report ui://widget/view.html updated."),
    _mini.tool("subscribed", "The URIs subscribed to now."),
]
TEMPLATE = "ui://widget/{name}.html"
subscribed = set()

RESOURCES = {
    "ui://widget/view.html": "<!doctype html><title>%s weather</title><p>view</p>" % LABEL,
    "ui://widget/legacy.html": "<!doctype html><title>%s legacy</title>" % LABEL,
    "ui://secret/panel.html": "<!doctype html><title>%s secret</title>" % LABEL,
}
PLAIN = "file:///%s/readme.txt" % LABEL

state = {"capabilities": {}}


def main():
    while True:
        msg = _mini.read_message()
        if msg is None:
            return
        if "method" not in msg or "id" not in msg:
            continue
        rid, method, params = msg["id"], msg["method"], msg.get("params") or {}
        if method == "initialize":
            state["capabilities"] = params.get("capabilities") or {}
            caps = {
                "tools": {},
                "resources": {"subscribe": True},
                "extensions": {"io.modelcontextprotocol/ui": {}},
            }
            _mini.respond(rid, _mini.initialize_result(params, "apps-" + LABEL, capabilities=caps))
        elif method == "tools/list":
            _mini.respond(rid, {"tools": TOOLS})
        elif method == "tools/call":
            name = params.get("name")
            if name == "client_extensions":
                text = json.dumps(state["capabilities"].get("extensions") or {})
                _mini.respond(rid, _mini.text_result(text))
            elif name == "render_view":
                result = _mini.text_result("%s rendered" % LABEL)
                result["content"] += [
                    {"type": "resource_link", "uri": "ui://widget/view.html", "name": "view"},
                    {"type": "resource", "resource": {
                        "uri": "ui://widget/inline.html", "mimeType": MIME, "text": "<p>%s</p>" % LABEL}},
                    {"type": "resource_link", "uri": PLAIN, "name": "readme"},
                ]
                result["_meta"] = {"ui": {"resourceUri": "ui://widget/view.html"}}
                _mini.respond(rid, result)
            elif name == "touch_view":
                _mini.write_message({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                                     "params": {"uri": "ui://widget/view.html"}})
                _mini.respond(rid, _mini.text_result("touched"))
            elif name == "subscribed":
                _mini.respond(rid, _mini.text_result(json.dumps(sorted(subscribed))))
            elif name in {t["name"] for t in TOOLS}:
                result = _mini.text_result("%s: %s done" % (LABEL, name))
                result["structuredContent"] = {"label": LABEL, "tool": name}
                _mini.respond(rid, result)
            else:
                _mini.respond_error(rid, _mini.INVALID_PARAMS, "Unknown tool: %s" % name)
        elif method == "resources/list":
            items = [
                {"uri": uri, "name": uri.rsplit("/", 1)[-1], "mimeType": MIME, "_meta": UI_META}
                for uri in RESOURCES
            ]
            items.append({"uri": PLAIN, "name": "readme", "mimeType": "text/plain"})
            _mini.respond(rid, {"resources": items})
        elif method == "resources/templates/list":
            _mini.respond(rid, {"resourceTemplates": [
                {"uriTemplate": TEMPLATE, "name": "widget-page", "mimeType": MIME}
            ]})
        elif method in ("resources/subscribe", "resources/unsubscribe"):
            uri = params.get("uri")
            if method == "resources/subscribe":
                subscribed.add(uri)
            else:
                subscribed.discard(uri)
            _mini.respond(rid, {})
        elif method == "resources/read":
            uri = params.get("uri")
            if uri in RESOURCES:
                _mini.respond(rid, {"contents": [
                    {"uri": uri, "mimeType": MIME, "text": RESOURCES[uri], "_meta": UI_META}
                ]})
            elif uri == PLAIN:
                _mini.respond(rid, {"contents": [{"uri": uri, "mimeType": "text/plain", "text": LABEL}]})
            elif isinstance(uri, str) and uri.startswith("ui://widget/") and uri.endswith(".html"):
                page = uri[len("ui://widget/"):-len(".html")]
                _mini.respond(rid, {"contents": [
                    {"uri": uri, "mimeType": MIME, "text": "<p>%s page %s</p>" % (LABEL, page)}
                ]})
            else:
                _mini.respond_error(rid, -32602, "Resource not found: %s" % uri)
        elif method == "ping":
            _mini.respond(rid, {})
        else:
            _mini.respond_error(rid, _mini.METHOD_NOT_FOUND, "Method not found: %s" % method)


if __name__ == "__main__":
    main()
