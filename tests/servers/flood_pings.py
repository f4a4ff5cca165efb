#!/usr/bin/env python3
"""Hostile server: floods the client with pings and never reads its stdin.

Answers `initialize`, `ping` and `tools/list` (one tool `flood`). On
`tools/call` of `flood` it stops reading stdin for good and sends
FLOOD_PINGS (default 8000) `ping` requests whose ids are strings of
FLOOD_ID_BYTES (default 65536) characters, so every answer the client owes
is as large as the ping. Then it sleeps, still not reading, until it is
killed. A client that queues its answers without a bound grows by
FLOOD_PINGS * FLOOD_ID_BYTES bytes (512 MiB by default).
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _mini  # noqa: E402

TOOLS = [_mini.tool("flood", "Floods the client with pings; never answers.")]
PINGS = int(os.environ.get("FLOOD_PINGS", "8000"))
ID_BYTES = int(os.environ.get("FLOOD_ID_BYTES", "65536"))


def on_call(msg):
    filler = "p" * ID_BYTES
    for i in range(PINGS):
        line = '{"jsonrpc":"2.0","id":"%d-%s","method":"ping"}\n' % (i, filler)
        if not _mini.write_raw(line.encode()):
            sys.exit(0)
    _mini.log("flood_pings: sent %d pings; never reading again" % PINGS)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    _mini.serve("flood_pings", TOOLS, on_call)
    sys.exit(0)
