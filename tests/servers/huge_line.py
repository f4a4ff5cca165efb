#!/usr/bin/env python3
"""Fault server: answers a tool call with one huge line.

Answers `initialize`, `ping` and `tools/list` (one tool `flood`). On
`tools/call` it answers with a single, valid JSON-RPC response line whose
result holds one text content block of 20 MiB (20*1024*1024 'x'
characters; the env var HUGE_LINE_BYTES overrides the count), then keeps
serving until stdin EOF (exit 0).

The text is built once and written as it is, so answers leave as fast as
the pipe takes them (the gateway's memory tests count on it). With
HUGE_LINE_LOG set, the id of each answer is appended to that file once the
answer is written. With HUGE_LINE_BATCH=N, calls are answered only once N
of them wait, then all at once, one after the other (so that every call a
client sends at once is taken before the first answer leaves).
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _mini  # noqa: E402

TOOLS = [_mini.tool("flood", "Answers with a ~20 MiB line.")]
SIZE = int(os.environ.get("HUGE_LINE_BYTES", str(20 * 1024 * 1024)))
LOG = os.environ.get("HUGE_LINE_LOG")
BATCH = int(os.environ.get("HUGE_LINE_BATCH", "1"))
TEXT = b"x" * SIZE
TAIL = b'"}]}}\n'
waiting = []


def on_call(msg):
    waiting.append(msg)
    if len(waiting) >= BATCH:
        for call in waiting:
            answer(call)
        waiting.clear()
    return None


def answer(msg):
    head = '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"' % json.dumps(
        msg["id"]
    )
    out = sys.stdout.buffer
    try:
        # Three writes, no copy of the text.
        out.write(head.encode())
        out.write(TEXT)
        out.write(TAIL)
        out.flush()
    except (BrokenPipeError, ValueError):
        return
    if LOG:
        with open(LOG, "a") as log:
            log.write("%s\n" % json.dumps(msg["id"]))


if __name__ == "__main__":
    _mini.serve("huge_line", TOOLS, on_call)
    sys.exit(0)
