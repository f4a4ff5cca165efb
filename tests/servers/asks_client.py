#!/usr/bin/env python3
"""Test server: asks the client things (server-to-client requests).

Tool `ask` {method, params}: sends a JSON-RPC request `method` with `params`
to the client, waits for the client's answer, and returns it as the text of
the tool result (JSON: {"result": ...} or {"error": ...}).

Tool `ping_client`: sends `ping` to the client and returns its answer.

It also records the client's declared capabilities from `initialize`; tool
`client_capabilities` returns them as JSON text.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _mini  # noqa: E402

TOOLS = [
    _mini.tool("ask", "Send a request to the client and return its answer.",
               {"type": "object", "properties": {"method": {"type": "string"},
                                                  "params": {"type": "object"}}}),
    _mini.tool("ping_client", "Ping the client."),
    _mini.tool("client_capabilities", "Return the capabilities the client declared."),
]

state = {"capabilities": None, "next": 0}


def ask(method, params):
    state["next"] += 1
    rid = "srv-%d" % state["next"]
    msg = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        msg["params"] = params
    _mini.write_message(msg)
    while True:
        reply = _mini.read_message()
        if reply is None:
            sys.exit(0)
        if reply.get("id") == rid and "method" not in reply:
            return {k: reply[k] for k in ("result", "error") if k in reply}


def main():
    while True:
        msg = _mini.read_message()
        if msg is None:
            return
        if "method" not in msg or "id" not in msg:
            continue
        rid, method, params = msg["id"], msg["method"], msg.get("params") or {}
        if method == "initialize":
            state["capabilities"] = params.get("capabilities")
            _mini.respond(rid, _mini.initialize_result(params, "asks-client"))
        elif method == "tools/list":
            _mini.respond(rid, {"tools": TOOLS})
        elif method == "tools/call":
            name, args = params.get("name"), params.get("arguments") or {}
            if name == "ask":
                answer = ask(args.get("method"), args.get("params"))
            elif name == "ping_client":
                answer = ask("ping", None)
            elif name == "client_capabilities":
                answer = state["capabilities"]
            else:
                _mini.respond_error(rid, _mini.INVALID_PARAMS, "Unknown tool: %s" % name)
                continue
            _mini.respond(rid, _mini.text_result(json.dumps(answer)))
        else:
            _mini.respond_error(rid, _mini.METHOD_NOT_FOUND, "Method not found: %s" % method)


if __name__ == "__main__":
    main()
