#!/usr/bin/env python3
"""Test server for resource subscriptions (stdlib only).

Declares `resources.subscribe` unless SUBSCRIBE=0; lists one resource,
`listed://<name>`, and the resource templates in TEMPLATES (env,
space-separated). Answers `resources/subscribe` and `unsubscribe` for any
URI and records them; the tool `subscriptions` returns the record, one
`subscribe <uri>` / `unsubscribe <uri>` line each.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _mini  # noqa: E402

NAME = os.environ.get("SERVER_NAME", "subscriber")
SUBSCRIBES = os.environ.get("SUBSCRIBE", "1") != "0"
TEMPLATES = os.environ.get("TEMPLATES", "").split()
TOOLS = [_mini.tool("subscriptions", "The subscriptions received, one a line.")]


def main():
    record = []
    while True:
        msg = _mini.read_message()
        if msg is None:
            return
        if not isinstance(msg, dict) or "method" not in msg or "id" not in msg:
            continue
        rid, method, params = msg["id"], msg["method"], msg.get("params") or {}
        if method == "initialize":
            capabilities = {"tools": {}, "resources": {"subscribe": SUBSCRIBES}}
            _mini.respond(rid, _mini.initialize_result(params, NAME, capabilities=capabilities))
        elif method == "ping":
            _mini.respond(rid, {})
        elif method == "tools/list":
            _mini.respond(rid, {"tools": TOOLS})
        elif method == "tools/call":
            _mini.respond(rid, _mini.text_result("\n".join(record)))
        elif method == "resources/list":
            _mini.respond(rid, {"resources": [{"uri": "listed://" + NAME, "name": NAME}]})
        elif method == "resources/templates/list":
            templates = [{"uriTemplate": t, "name": t} for t in TEMPLATES]
            _mini.respond(rid, {"resourceTemplates": templates})
        elif method in ("resources/subscribe", "resources/unsubscribe") and SUBSCRIBES:
            record.append("%s %s" % (method.split("/")[1], params.get("uri")))
            _mini.respond(rid, {})
        else:
            _mini.respond_error(rid, _mini.METHOD_NOT_FOUND, "Method not found: %s" % method)


if __name__ == "__main__":
    main()
