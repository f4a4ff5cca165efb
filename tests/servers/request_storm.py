#!/usr/bin/env python3
"""Hostile server: sends the client many sampling requests at once.

Answers `initialize`, `ping` and `tools/list` (one tool `storm`). On
`tools/call` of `storm` it sends STORM_REQUESTS (default 2000)
`sampling/createMessage` requests (ids "s0", "s1", ...) without waiting,
then reads the client's answers until all but STORM_UNANSWERED (default 64)
of them came back, and answers the tool call with one text block holding
JSON `{"errors": E, "results": R, "codes": [...distinct error codes]}`.
A client that handles every request at once (and whose host handler never
ends) answers none of them, and the tool call never returns.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _mini  # noqa: E402

TOOLS = [_mini.tool("storm", "Sends many sampling requests at once.")]
REQUESTS = int(os.environ.get("STORM_REQUESTS", "2000"))
UNANSWERED = int(os.environ.get("STORM_UNANSWERED", "64"))


def on_call(msg):
    params = {
        "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
        "maxTokens": 10,
    }
    out = []
    for i in range(REQUESTS):
        out.append(
            json.dumps(
                {"jsonrpc": "2.0", "id": "s%d" % i, "method": "sampling/createMessage", "params": params},
                separators=(",", ":"),
            )
        )
    if not _mini.write_raw(("\n".join(out) + "\n").encode()):
        sys.exit(0)
    errors = results = 0
    codes = set()
    while errors + results < REQUESTS - UNANSWERED:
        reply = _mini.read_message()
        if reply is None:
            sys.exit(0)
        if not isinstance(reply, dict) or "method" in reply:
            continue
        if not str(reply.get("id", "")).startswith("s"):
            continue
        if "error" in reply:
            errors += 1
            codes.add(reply["error"].get("code"))
        else:
            results += 1
    text = json.dumps({"errors": errors, "results": results, "codes": sorted(codes)})
    return _mini.text_result(text)


if __name__ == "__main__":
    _mini.serve("request_storm", TOOLS, on_call)
    sys.exit(0)
