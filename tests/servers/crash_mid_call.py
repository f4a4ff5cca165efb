#!/usr/bin/env python3
"""Fault server: crashes in the middle of a tool call.

Correct up to the fault: answers `initialize` (echoing the requested
protocolVersion, capabilities {"tools":{}}), accepts
`notifications/initialized`, answers `ping` and `tools/list` (tools `work`
and `chatty`). On `tools/call` of `chatty` it writes a warning to stderr and
answers. On `tools/call` of `work` it writes a panic message to stderr and
exits with status 1 without answering. Exits 0 at stdin EOF.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _mini  # noqa: E402

TOOLS = [
    _mini.tool("work", "Does some work (and crashes while doing it)."),
    _mini.tool("chatty", "Answers, after a warning on stderr."),
]


def on_call(msg):
    if msg.get("params", {}).get("name") == "chatty":
        _mini.log("crash_mid_call: warning written during an earlier call")
        _mini.respond(msg["id"], _mini.text_result("fine"))
        return
    _mini.log("crash_mid_call: panic while handling tools/call id=%s: simulated crash"
              % _mini.format_id(msg["id"]))
    sys.stdout.flush()
    os._exit(1)


if __name__ == "__main__":
    _mini.serve("crash_mid_call", TOOLS, on_call)
    sys.exit(0)
