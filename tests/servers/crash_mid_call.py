#!/usr/bin/env python3
"""Fault server: crashes in the middle of a tool call.

Correct up to the fault: answers `initialize` (echoing the requested
protocolVersion, capabilities {"tools":{}}), accepts
`notifications/initialized`, answers `ping` and `tools/list` (one tool
`work`). On `tools/call` of `work` it writes a panic message to stderr and
exits with status 1 without answering. Exits 0 at stdin EOF.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _mini  # noqa: E402

TOOLS = [_mini.tool("work", "Does some work (and crashes while doing it).")]


def on_call(msg):
    _mini.log("crash_mid_call: panic while handling tools/call id=%s: simulated crash"
              % _mini.format_id(msg["id"]))
    sys.stdout.flush()
    os._exit(1)


if __name__ == "__main__":
    _mini.serve("crash_mid_call", TOOLS, on_call)
    sys.exit(0)
