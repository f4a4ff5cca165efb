#!/usr/bin/env python3
"""Smoke-test any stdio MCP server: initialize + tools/list (+ lists).

    python3 tests/servers/probe.py [--timeout SECONDS] -- COMMAND [ARGS...]

Starts COMMAND, sends `initialize` (protocolVersion 2025-06-18), then
`notifications/initialized`, `tools/list` and, if the server declares them,
`resources/list` and `prompts/list`; prints the server info and the names,
closes stdin and waits for the server to exit. Server notifications and
requests that arrive meanwhile are printed and skipped (server requests are
answered with a METHOD_NOT_FOUND error). Exit status 0 on success.
Standard library only; used by `tests/setup.sh --verify`.
"""
import json
import queue
import subprocess
import sys
import threading
import time


def main(argv):
    timeout = 15.0
    if argv[:1] == ["--timeout"]:
        timeout = float(argv[1])
        argv = argv[2:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2

    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    lines = queue.Queue()

    def reader():
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=reader, daemon=True).start()
    deadline = time.monotonic() + timeout

    def send(obj):
        proc.stdin.write(json.dumps(obj).encode() + b"\n")
        proc.stdin.flush()

    def call(rid, method, params=None):
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        send(msg)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no answer to %s within %ss" % (method, timeout))
            try:
                line = lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                raise EOFError("server closed stdout (exit %s) before answering %s"
                               % (proc.wait(), method))
            msg = json.loads(line)
            if msg.get("id") == rid and "method" not in msg:
                if "error" in msg:
                    raise RuntimeError("%s failed: %s" % (method, msg["error"]))
                return msg["result"]
            if "method" in msg:
                print("  (server %s %s)" % ("request" if "id" in msg else "notification",
                                            msg["method"]))
                if "id" in msg:
                    send({"jsonrpc": "2.0", "id": msg["id"],
                          "error": {"code": -32601, "message": "not supported by probe"}})

    try:
        init = call(1, "initialize", {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "mcpmux-probe", "version": "0"},
        })
        print("server:", json.dumps(init.get("serverInfo")), "protocol", init.get("protocolVersion"))
        caps = init.get("capabilities", {})
        print("capabilities:", ", ".join(sorted(caps)))
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        tools = call(2, "tools/list")["tools"]
        print("tools (%d): %s" % (len(tools), ", ".join(t["name"] for t in tools)))
        if "resources" in caps:
            res = call(3, "resources/list")["resources"]
            print("resources (%d): %s" % (len(res), ", ".join(r["uri"] for r in res)))
        if "prompts" in caps:
            prompts = call(4, "prompts/list")["prompts"]
            print("prompts (%d): %s" % (len(prompts), ", ".join(p["name"] for p in prompts)))
    except (TimeoutError, EOFError, RuntimeError, ValueError, OSError) as exc:
        print("probe failed: %s" % exc, file=sys.stderr)
        proc.kill()
        proc.wait()
        return 1
    finally:
        try:
            proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            print("server did not exit within 5s of stdin EOF; killed", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
