#!/usr/bin/env python3
"""Hostile server: a storm of `notifications/tools/list_changed`.

Answers `initialize` (capabilities tools with listChanged), `ping` and
`tools/list` (tools `storm` and `count`), counting every `tools/list` it
receives. On `tools/call` of `storm` a writer thread sends STORM_CHANGES
(default 1000000) `notifications/tools/list_changed` notifications, then the
call's result (text "sent N"), while the main thread goes on answering. On
`tools/call` of `count` it answers with the number of `tools/list` requests
received so far (as text). A client that refreshes its tool list once per
notification sends about STORM_CHANGES `tools/list` requests.

With LIST_CHANGED_AT_START=N it also sends N `notifications/tools/list_changed`
when the client says it is initialized, while the client is still
connecting (@modelcontextprotocol/server-everything registers tools then, and
announces them so).
"""
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _mini  # noqa: E402

TOOLS = [
    _mini.tool("storm", "Sends a storm of tools/list_changed notifications."),
    _mini.tool("count", "How many tools/list requests came so far."),
]
CHANGES = int(os.environ.get("STORM_CHANGES", "1000000"))
AT_START = int(os.environ.get("LIST_CHANGED_AT_START", "0"))
LOCK = threading.Lock()
LISTED = [0]


def send(obj):
    with LOCK:
        return _mini.write_message(obj)


def storm(request_id):
    line = b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n'
    chunk = 10000
    sent = 0
    while sent < CHANGES:
        n = min(chunk, CHANGES - sent)
        with LOCK:
            if not _mini.write_raw(line * n):
                return
        sent += n
    send({"jsonrpc": "2.0", "id": request_id, "result": _mini.text_result("sent %d" % sent)})


def main():
    while True:
        msg = _mini.read_message()
        if msg is None:
            return
        if msg.get("method") == "notifications/initialized":
            for _ in range(AT_START):
                send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        if not _mini.is_request(msg):
            continue
        rid = msg["id"]
        method = msg["method"]
        params = msg.get("params") or {}
        if method == "initialize":
            caps = {"tools": {"listChanged": True}}
            send({"jsonrpc": "2.0", "id": rid,
                  "result": _mini.initialize_result(params, "list_changed_storm", capabilities=caps)})
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": rid, "result": {}})
        elif method == "tools/list":
            LISTED[0] += 1
            send({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}})
        elif method == "tools/call" and params.get("name") == "storm":
            threading.Thread(target=storm, args=(rid,), daemon=True).start()
        elif method == "tools/call" and params.get("name") == "count":
            send({"jsonrpc": "2.0", "id": rid, "result": _mini.text_result(str(LISTED[0]))})
        else:
            send({"jsonrpc": "2.0", "id": rid,
                  "error": {"code": _mini.METHOD_NOT_FOUND, "message": "Method not found"}})


if __name__ == "__main__":
    main()
    sys.exit(0)
