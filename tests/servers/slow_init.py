#!/usr/bin/env python3
"""A correct minimal server whose `initialize` answer is delayed.

The delay is the env var INIT_DELAY_MS in milliseconds (default 200). One
tool `noop` (answers text "ok"); also answers `ping`. Exits 0 at stdin EOF.
Used by the connect-time benchmark.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _mini  # noqa: E402

DELAY_S = int(os.environ.get("INIT_DELAY_MS", "200")) / 1000.0
TOOLS = [_mini.tool("noop", "Does nothing; answers \"ok\".")]


def main():
    # Wait for initialize, answer it late, then behave normally.
    while True:
        msg = _mini.read_message()
        if msg is None:
            return 0
        if _mini.is_request(msg) and msg["method"] == "initialize":
            time.sleep(DELAY_S)
            if not _mini.respond(msg["id"], _mini.initialize_result(msg.get("params"), "slow_init")):
                return 0
            break
        if _mini.is_request(msg):
            _mini.respond_error(msg["id"], _mini.INVALID_REQUEST, "Server not initialized")
    _mini.serve("slow_init", TOOLS, lambda msg: _mini.text_result("ok"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
