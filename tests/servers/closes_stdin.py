#!/usr/bin/env python3
"""Fault server: stops reading its stdin, then exits a moment later.

Correct up to the fault: answers `initialize`, `ping` and `tools/list`
(tool `quit`). On `tools/call` of `quit` it answers, closes its stdin
(a client's next write fails with a broken pipe while the process still
runs), writes why to stderr 0.1 s later, and exits with status 3 after
0.3 s, its stdout open until then.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _mini  # noqa: E402

TOOLS = [_mini.tool("quit", "Answers, then stops reading and exits.")]


def on_call(msg):
    _mini.respond(msg["id"], _mini.text_result("bye"))
    sys.stdout.flush()
    os.close(0)
    # Written once the answer has surely been read: it belongs to the end,
    # not to the call just answered.
    time.sleep(0.1)
    _mini.log("closes_stdin: stopped reading, exiting with status 3")
    time.sleep(0.2)
    os._exit(3)


if __name__ == "__main__":
    _mini.serve("closes_stdin", TOOLS, on_call)
    sys.exit(0)
