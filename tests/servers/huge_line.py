#!/usr/bin/env python3
"""Fault server: answers a tool call with one huge line.

Answers `initialize`, `ping` and `tools/list` (one tool `flood`). On
`tools/call` it answers with a single, valid JSON-RPC response line whose
result holds one text content block of 20 MiB (20*1024*1024 'x'
characters; the env var HUGE_LINE_BYTES overrides the count), then keeps
serving until stdin EOF (exit 0).
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _mini  # noqa: E402

TOOLS = [_mini.tool("flood", "Answers with a ~20 MiB line.")]
SIZE = int(os.environ.get("HUGE_LINE_BYTES", str(20 * 1024 * 1024)))


def on_call(msg):
    head = '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"' % json.dumps(
        msg["id"]
    )
    tail = '"}]}}\n'
    _mini.write_raw(head.encode() + b"x" * SIZE + tail.encode())
    return None


if __name__ == "__main__":
    _mini.serve("huge_line", TOOLS, on_call)
    sys.exit(0)
