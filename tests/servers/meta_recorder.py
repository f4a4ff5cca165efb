#!/usr/bin/env python3
"""An MCP server that records the `_meta` of every request (telemetry tests).

    meta_recorder.py RECORD_FILE

Appends one JSON line per request to RECORD_FILE: {"method", "meta"} with
the request's `params._meta` (null when absent). Tools: `echo` (its `text`
back), `fail` (a result with isError), `rpcfail` (a JSON-RPC error -32002).
Standard library only.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _mini  # noqa: E402

ECHO = _mini.tool("echo", "Returns its text", {"type": "object", "properties": {"text": {"type": "string"}}})
ECHO["annotations"] = {"readOnlyHint": True}

TOOLS = [
    ECHO,
    _mini.tool("fail", "Always a tool error"),
    _mini.tool("rpcfail", "Always a JSON-RPC error -32002"),
]


def main():
    record = open(sys.argv[1], "a", encoding="utf-8")
    while True:
        msg = _mini.read_message()
        if msg is None:
            return
        if not _mini.is_request(msg):
            continue
        method = msg["method"]
        rid = msg["id"]
        params = msg.get("params") or {}
        record.write(json.dumps({"method": method, "meta": params.get("_meta")}) + "\n")
        record.flush()
        if method == "initialize":
            _mini.respond(rid, _mini.initialize_result(params, "meta-recorder"))
        elif method == "ping":
            _mini.respond(rid, {})
        elif method == "tools/list":
            _mini.respond(rid, {"tools": TOOLS})
        elif method == "tools/call":
            name = params.get("name")
            if name == "echo":
                text = (params.get("arguments") or {}).get("text", "")
                _mini.respond(rid, _mini.text_result(text))
            elif name == "fail":
                _mini.respond(rid, _mini.text_result("it failed", is_error=True))
            else:
                _mini.respond_error(rid, -32002, "refused")
        else:
            _mini.respond_error(rid, _mini.METHOD_NOT_FOUND, "Method not found: %s" % method)


if __name__ == "__main__":
    main()
