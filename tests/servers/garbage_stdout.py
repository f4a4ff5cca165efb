#!/usr/bin/env python3
"""Fault server: writes a non-JSON-RPC line on stdout.

Answers `initialize`, `ping` and `tools/list` (one tool `garble`). On
`tools/call` it prints the line `this is not json-rpc <<<>>>` on stdout
instead of an answer, then keeps serving until stdin EOF (exit 0).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _mini  # noqa: E402

TOOLS = [_mini.tool("garble", "Answers with garbage on stdout.")]
GARBAGE = b"this is not json-rpc <<<>>>\n"


def on_call(msg):
    _mini.write_raw(GARBAGE)
    return None


if __name__ == "__main__":
    _mini.serve("garbage_stdout", TOOLS, on_call)
    sys.exit(0)
