#!/usr/bin/env python3
"""Hostile server: answers a tool call with a line that never ends.

Answers `initialize`, `ping` and `tools/list` (one tool `endless`). On
`tools/call` it starts a valid JSON-RPC response (its `id` first) and then
writes 'x' characters in 64 KiB chunks without ever writing a newline,
until the client closes the pipe or kills it. Only a client that reports
the message once it passes its size cap ends the call before its timeout.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _mini  # noqa: E402

TOOLS = [_mini.tool("endless", "Answers with a line that never ends.")]


def on_call(msg):
    head = '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"' % json.dumps(
        msg["id"]
    )
    if not _mini.write_raw(head.encode()):
        sys.exit(0)
    chunk = b"x" * 65536
    while _mini.write_raw(chunk):
        pass
    sys.exit(0)


if __name__ == "__main__":
    _mini.serve("endless_line", TOOLS, on_call)
    sys.exit(0)
