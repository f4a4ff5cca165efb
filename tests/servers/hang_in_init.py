#!/usr/bin/env python3
"""Fault server: never answers `initialize`.

Reads (and ignores) everything on stdin; exits 0 at EOF.
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
            _mini.log("hang_in_init: got initialize; never answering")


if __name__ == "__main__":
    sys.exit(main())
