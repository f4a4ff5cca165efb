#!/usr/bin/env python3
"""Test server for protocol-version negotiation; supports only 2024-11-05.

VERSION_MODE (env) decides how it answers an `initialize` offering another
revision:
  counter  answer with protocolVersion 2024-11-05 (what the spec asks);
  refuse   answer with a JSON-RPC error "Unsupported protocol version: X";
  bogus    answer with protocolVersion 1999-01-01 (a version no client knows).
One tool `version` returns the negotiated version.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _mini  # noqa: E402

SUPPORTED = "2024-11-05"
MODE = os.environ.get("VERSION_MODE", "counter")
TOOLS = [_mini.tool("version", "Return the negotiated protocol version.")]
state = {"version": None}


def main():
    while True:
        msg = _mini.read_message()
        if msg is None:
            return
        if "method" not in msg or "id" not in msg:
            continue
        rid, method, params = msg["id"], msg["method"], msg.get("params") or {}
        if method == "initialize":
            offered = params.get("protocolVersion")
            if offered != SUPPORTED and MODE == "refuse":
                _mini.respond_error(rid, _mini.INVALID_PARAMS, "Unsupported protocol version: %s" % offered)
                continue
            answer = "1999-01-01" if MODE == "bogus" else SUPPORTED
            state["version"] = answer
            result = _mini.initialize_result(params, "old-version")
            result["protocolVersion"] = answer
            _mini.respond(rid, result)
        elif method == "tools/list":
            _mini.respond(rid, {"tools": TOOLS})
        elif method == "tools/call":
            _mini.respond(rid, _mini.text_result(state["version"]))
        else:
            _mini.respond_error(rid, _mini.METHOD_NOT_FOUND, "Method not found: %s" % method)


if __name__ == "__main__":
    main()
