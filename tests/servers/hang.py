#!/usr/bin/env python3
"""Fault server: never answers a tool call.

Answers `initialize`, `ping` and `tools/list` (one tool `wait_forever`), but
never answers any `tools/call`; it keeps reading stdin and stays alive, and
exits 0 when stdin reaches EOF.

Every `notifications/cancelled` it receives is logged to stderr as
`cancelled <requestId>` (a string id as is, a number as its JSON form) and,
if the env var HANG_CANCEL_LOG names a file, appended to it as one line
`<requestId>`, so tests can check that the client sent the cancellation.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _mini  # noqa: E402

TOOLS = [_mini.tool("wait_forever", "Never returns.")]


def on_call(msg):
    _mini.log("hang: received tools/call id=%s; never answering" % _mini.format_id(msg["id"]))
    return None


def on_notification(msg):
    if msg.get("method") != "notifications/cancelled":
        return
    params = msg.get("params") or {}
    rid = _mini.format_id(params.get("requestId"))
    _mini.log("cancelled %s" % rid)
    path = os.environ.get("HANG_CANCEL_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(rid + "\n")
            f.flush()


if __name__ == "__main__":
    _mini.serve("hang", TOOLS, on_call, on_notification)
    sys.exit(0)
