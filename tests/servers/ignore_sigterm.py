#!/usr/bin/env python3
"""A correct minimal server that refuses to die politely.

Serves `initialize`, `ping`, `tools/list` (one tool `noop`) and `tools/call`
(answers text "ok"), but:
  * ignores SIGTERM (SIG_IGN);
  * ignores stdin EOF: after EOF it keeps sleeping forever;
  * at start it spawns a child `sleep 300` (subprocess.Popen, same process
    group, stdio on /dev/null) and, if the env var CHILD_PID_FILE is set,
    writes the child's pid to that file (atomically, before reading stdin).
    The child inherits SIGTERM = SIG_IGN too, so only SIGKILL of the whole
    process group ends both;
  * if the env var EVENT_LOG is set, appends a line to that file at stdin
    EOF ("stdin <how>") and at each SIGTERM ("SIGTERM"), which it still
    ignores, so a test can check the order of a close's steps.
Used to test that the client escalates to SIGKILL and kills the group.
"""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _mini  # noqa: E402

TOOLS = [_mini.tool("noop", "Does nothing; answers \"ok\".")]


def main():
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen(
        ["sleep", "300"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    path = os.environ.get("CHILD_PID_FILE")
    if path:
        tmp = "%s.tmp.%d" % (path, os.getpid())
        with open(tmp, "w", encoding="utf-8") as f:
            f.write("%d\n" % child.pid)
        os.replace(tmp, path)
    events = os.environ.get("EVENT_LOG")

    def event(line):
        if events:
            with open(events, "a", encoding="utf-8") as f:
                f.write(line + "\n")

    if events:
        # After the child started: it keeps SIG_IGN (a handler is not inherited).
        signal.signal(signal.SIGTERM, lambda *_: event("SIGTERM"))
    _mini.log("ignore_sigterm: pid %d, child sleep pid %d" % (os.getpid(), child.pid))
    how = _mini.serve("ignore_sigterm", TOOLS, lambda msg: _mini.text_result("ok"))
    event("stdin %s" % how)
    _mini.log("ignore_sigterm: stdin %s; sleeping anyway" % how)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
