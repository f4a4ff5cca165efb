#!/usr/bin/env python3
"""Fault server: dies while initializing.

Reads messages until the client's `initialize` request, then writes
`fatal: database at /nonexistent is unavailable` to stderr and exits with
status 17 without answering. Exits 0 if stdin reaches EOF first.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _mini  # noqa: E402


def main():
    while True:
        msg = _mini.read_message()
        if msg is None:
            return 0
        if _mini.is_request(msg) and msg["method"] == "initialize":
            _mini.log("fatal: database at /nonexistent is unavailable")
            return 17


if __name__ == "__main__":
    sys.exit(main())
