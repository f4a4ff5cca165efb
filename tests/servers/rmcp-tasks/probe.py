#!/usr/bin/env python3
"""Hand check of rmcp-tasks-server (stdlib only): speaks JSON-RPC to it over
stdio (2026-07-28 through server/discover, then a 2025-11-25 `initialize`
session) and, with --http, over Streamable HTTP; prints every exchange.

Usage: probe.py [--http] [BINARY]
BINARY defaults to $RMCP_TASKS_SERVER, else $CARGO_TARGET_DIR/debug/
rmcp-tasks-server, else target/debug/rmcp-tasks-server beside this file.
"""
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
TASKS = "io.modelcontextprotocol/tasks"
V_NEW = "2026-07-28"
V_OLD = "2025-11-25"
SHOWN = 1500  # longest message printed whole


def binary_path(args):
    if args:
        return args[0]
    if os.environ.get("RMCP_TASKS_SERVER"):
        return os.environ["RMCP_TASKS_SERVER"]
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(HERE, "target")
    return os.path.join(target, "debug", "rmcp-tasks-server")


def meta(tasks=True):
    caps = {"extensions": {TASKS: {}}} if tasks else {}
    return {
        "io.modelcontextprotocol/protocolVersion": V_NEW,
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": {"name": "probe", "version": "0"},
    }


def show(direction, obj, raw_len=None):
    text = json.dumps(obj, separators=(",", ":"))
    if len(text) > SHOWN:
        text = text[:SHOWN] + f"... ({raw_len or len(text)} bytes in all)"
    print(f"{direction} {text}", flush=True)


class Stdio:
    """One server process; requests go one at a time."""

    def __init__(self, binary, env):
        self.proc = subprocess.Popen([binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=sys.stderr, env=env)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.next_id = 0

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send(self, obj):
        show(">>", obj)
        self.proc.stdin.write((json.dumps(obj) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method, params, quiet=False):
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        if quiet:
            self.proc.stdin.write((json.dumps(msg) + "\n").encode())
            self.proc.stdin.flush()
        else:
            self.send(msg)
        while True:
            line = self.lines.get(timeout=30)
            if line is None:
                raise RuntimeError("server closed stdout")
            reply = json.loads(line)
            if reply.get("id") == self.next_id:
                if not quiet:
                    show("<<", reply, len(line))
                return reply, len(line)
            show("<< (other)", reply, len(line))

    def close(self):
        self.proc.stdin.close()
        code = self.proc.wait(timeout=10)
        print(f"-- server exited with {code} on stdin EOF", flush=True)


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        check.failed += 1


check.failed = 0


def poll(s, task_id, until, tasks=True, limit=100):
    """tasks/get until the status is in `until`; returns the last result."""
    for _ in range(limit):
        reply, _ = s.request("tasks/get", {"taskId": task_id, "_meta": meta(tasks)})
        result = reply.get("result") or {}
        if result.get("status") in until:
            return result
        time.sleep((result.get("pollIntervalMs") or 100) / 1000)
    raise RuntimeError(f"task {task_id} never reached {until}")


def call(s, name, args, tasks=True):
    reply, _ = s.request("tools/call", {"name": name, "arguments": args, "_meta": meta(tasks)})
    return reply


def stdio_new(binary, env):
    print(f"\n=== stdio, {V_NEW} (server/discover, per-request _meta) ===", flush=True)
    s = Stdio(binary, env)
    reply, _ = s.request("server/discover", {"_meta": meta()})
    caps = reply["result"]["capabilities"]
    check(TASKS in caps.get("extensions", {}), "server/discover advertises the tasks extension")
    check(V_NEW in reply["result"].get("supportedVersions", []), "2026-07-28 is supported")

    reply, _ = s.request("tools/list", {"_meta": meta()})
    names = [t["name"] for t in reply["result"]["tools"]]
    check(names == ["quick", "slow_sum", "ask_name", "never_ends", "endless_working", "fails",
                    "huge_id", "many_inputs"], f"tools/list: {names}")

    print("\n--- quick", flush=True)
    reply = call(s, "quick", {"text": "hi"})
    check(reply["result"]["content"][0]["text"] == "quick: hi", "quick answers at once")

    print("\n--- slow_sum: working -> completed", flush=True)
    reply = call(s, "slow_sum", {"a": 2, "b": 3, "ms": 300})
    created = reply["result"]
    check(created.get("resultType") == "task" and created.get("status") == "working"
          and created.get("pollIntervalMs") == 100, "slow_sum answers a CreateTaskResult")
    tid = created["taskId"]
    first = poll(s, tid, {"working", "completed"})
    check(first["status"] == "working" and first["resultType"] == "complete",
          "tasks/get at once: working")
    done = poll(s, tid, {"completed", "failed", "cancelled"})
    check(done["status"] == "completed" and done["result"]["content"][0]["text"] == "sum: 5"
          and done["result"]["structuredContent"] == {"sum": 5}, "slow_sum completes: sum: 5")

    print("\n--- ask_name: input_required -> tasks/update accept -> completed", flush=True)
    tid = call(s, "ask_name", {})["result"]["taskId"]
    got = poll(s, tid, {"input_required"})
    req = got["inputRequests"]["name"]
    check(req["method"] == "elicitation/create" and req["params"]["mode"] == "form"
          and req["params"]["message"] == "What is your name?", "input_required with key name")
    reply, _ = s.request("tasks/update", {"taskId": tid, "_meta": meta(), "inputResponses": {
        "name": {"action": "accept", "content": {"name": "Ada"}}}})
    check(reply.get("result") == {"resultType": "complete"}, "tasks/update ack")
    done = poll(s, tid, {"completed", "failed", "cancelled"})
    check(done["status"] == "completed" and done["result"]["content"][0]["text"] == "Hello, Ada",
          "ask_name completes: Hello, Ada")

    print("\n--- ask_name: decline", flush=True)
    tid = call(s, "ask_name", {})["result"]["taskId"]
    s.request("tasks/update", {"taskId": tid, "_meta": meta(),
                               "inputResponses": {"name": {"action": "decline"}}})
    done = poll(s, tid, {"completed", "failed", "cancelled"})
    check(done["result"].get("isError") is True
          and done["result"]["content"][0]["text"] == "declined", "decline: isError, declined")

    print("\n--- never_ends: working -> tasks/cancel -> cancelled", flush=True)
    tid = call(s, "never_ends", {})["result"]["taskId"]
    time.sleep(0.3)
    got = poll(s, tid, {"working"})
    check(got["status"] == "working" and got.get("ttlMs", 0) is None, "still working, ttlMs null")
    reply, _ = s.request("tasks/cancel", {"taskId": tid, "_meta": meta()})
    check(reply.get("result") == {"resultType": "complete"}, "tasks/cancel ack")
    got = poll(s, tid, {"cancelled", "completed", "failed"})
    check(got["status"] == "cancelled", "cancelled")
    cancelled_id = tid

    print("\n--- fails: working -> failed", flush=True)
    tid = call(s, "fails", {})["result"]["taskId"]
    got = poll(s, tid, {"failed", "completed", "cancelled"})
    check(got["status"] == "failed" and got["error"] == {
        "code": -32603, "message": "the task failed on purpose"}, "failed with -32603")

    print("\n--- slow_sum without the extension -> -32021", flush=True)
    reply = call(s, "slow_sum", {"a": 1, "b": 2}, tasks=False)
    check(reply.get("error", {}).get("code") == -32021, "-32021 Missing required client capability")
    print("\n--- tasks/get without the extension -> -32021", flush=True)
    reply, _ = s.request("tasks/get", {"taskId": cancelled_id, "_meta": meta(False)})
    check(reply.get("error", {}).get("code") == -32021, "tasks/get: -32021")
    print("\n--- tasks/get of an unknown task -> -32602", flush=True)
    reply, _ = s.request("tasks/get", {"taskId": "no-such-task", "_meta": meta()})
    check(reply.get("error", {}).get("code") == -32602, "unknown task: -32602")
    print("\n--- tasks/get without _meta -> rejected", flush=True)
    reply, _ = s.request("tasks/get", {"taskId": cancelled_id})
    check("error" in reply, f"no _meta: error {reply.get('error', {}).get('code')}")

    print("\n--- hostile: huge_id", flush=True)
    reply, size = s.request("tools/call", {"name": "huge_id", "arguments": {}, "_meta": meta()},
                            quiet=True)
    tid = reply["result"]["taskId"]
    print(f"<< CreateTaskResult of {size} bytes, taskId of {len(tid)} characters", flush=True)
    check(len(tid) == 100_000, "huge_id: a 100,000-character task id")
    reply, size = s.request("tasks/get", {"taskId": tid, "_meta": meta()}, quiet=True)
    check(reply["result"]["status"] == "working", f"tasks/get of it works ({size} bytes)")

    print("\n--- hostile: many_inputs (200,000 input requests)", flush=True)
    tid = call(s, "many_inputs", {})["result"]["taskId"]
    t0 = time.monotonic()
    reply, size = s.request("tasks/get", {"taskId": tid, "_meta": meta()}, quiet=True)
    took = time.monotonic() - t0
    n = len(reply["result"]["inputRequests"])
    print(f"<< tasks/get of {size} bytes ({size / 2**20:.1f} MiB) with {n} inputRequests "
          f"in {took:.2f} s; one: {json.dumps(reply['result']['inputRequests']['k0'])}",
          flush=True)
    check(n == 200_000 and size < 64 << 20, "many_inputs: 200,000 entries, under 64 MiB")
    s.close()


def stdio_old(binary, env):
    print(f"\n=== stdio, {V_OLD} (initialize) ===", flush=True)
    for declared in (False, True):
        caps = {"extensions": {TASKS: {}}} if declared else {}
        print(f"\n--- initialize, capabilities {json.dumps(caps)}", flush=True)
        s = Stdio(binary, env)
        reply, _ = s.request("initialize", {"protocolVersion": V_OLD, "capabilities": caps,
                                            "clientInfo": {"name": "probe", "version": "0"}})
        check(reply["result"]["protocolVersion"] == V_OLD, "initialize answers 2025-11-25")
        s.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        reply, _ = s.request("tools/call", {"name": "quick", "arguments": {"text": "old"}})
        check(reply["result"]["content"][0]["text"] == "quick: old", "quick")
        reply, _ = s.request("tools/call", {"name": "slow_sum", "arguments": {"a": 1, "b": 1,
                                                                             "ms": 100}})
        if declared:
            tid = reply["result"]["taskId"]
            check(reply["result"].get("resultType") == "task", "declared at initialize: a task")
            done = None
            for _ in range(50):
                r, _ = s.request("tasks/get", {"taskId": tid})
                if r["result"]["status"] == "completed":
                    done = r["result"]
                    break
                time.sleep(0.1)
            check(done is not None and done["result"]["content"][0]["text"] == "sum: 2",
                  "completes: sum: 2")
        else:
            check(reply.get("error", {}).get("code") == -32021, "not declared: -32021")
            r, _ = s.request("tasks/get", {"taskId": "x"})
            check(r.get("error", {}).get("code") == -32021, "tasks/get not declared: -32021")
        s.close()


def http_probe(binary, env):
    print(f"\n=== Streamable HTTP ({V_NEW}) ===", flush=True)
    proc = subprocess.Popen([binary, "--http", "127.0.0.1:0"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    try:
        line = proc.stderr.readline().decode()
        url = line.strip().rsplit(" ", 1)[-1]
        print(f"-- {line.strip()}", flush=True)
        next_id = [0]

        def post(method, params, headers=None):
            next_id[0] += 1
            body = {"jsonrpc": "2.0", "id": next_id[0], "method": method, "params": params}
            h = {"Content-Type": "application/json",
                 "Accept": "application/json, text/event-stream",
                 "MCP-Protocol-Version": V_NEW, "Mcp-Method": method}
            if headers is not None:
                h.update(headers)
            h = {k: v for k, v in h.items() if v is not None}
            show(f">> {json.dumps({k: v for k, v in h.items() if k.startswith('Mcp')})}", body)
            req = urllib.request.Request(url, json.dumps(body).encode(), h, method="POST")
            try:
                with urllib.request.urlopen(req, timeout=10) as r:
                    status, ctype, data = r.status, r.headers.get("Content-Type", ""), r.read()
            except urllib.error.HTTPError as e:
                status, ctype, data = e.code, e.headers.get("Content-Type", ""), e.read()
            text = data.decode()
            if ctype.startswith("text/event-stream"):
                msgs = [json.loads(l[5:]) for l in text.splitlines()
                        if l.startswith("data:") and l[5:].strip()]
                reply = msgs[-1] if msgs else {}
            else:
                reply = json.loads(text) if text.strip() else {}
            show(f"<< HTTP {status} {ctype.split(';')[0]}", reply)
            return reply

        post("server/discover", {"_meta": meta()})
        created = post("tools/call", {"name": "slow_sum", "arguments": {"a": 4, "b": 5, "ms": 100},
                                      "_meta": meta()}, {"Mcp-Name": "slow_sum"})["result"]
        tid = created["taskId"]
        time.sleep(0.3)
        got = post("tasks/get", {"taskId": tid, "_meta": meta()}, {"Mcp-Name": tid})
        check(got["result"]["status"] == "completed", "over HTTP: tasks/get with Mcp-Name")
        tid2 = post("tools/call", {"name": "never_ends", "arguments": {}, "_meta": meta()},
                    {"Mcp-Name": "never_ends"})["result"]["taskId"]
        r = post("tasks/cancel", {"taskId": tid2, "_meta": meta()}, {"Mcp-Name": tid2})
        check(r.get("result") == {"resultType": "complete"}, "over HTTP: tasks/cancel ack")
        r = post("tasks/get", {"taskId": tid, "_meta": meta()}, {"Mcp-Name": None})
        check("error" in r, f"over HTTP: tasks/get without Mcp-Name: error {r.get('error')}")
        r = post("tasks/get", {"taskId": tid, "_meta": meta()}, {"Mcp-Name": "other"})
        check("error" in r, f"over HTTP: tasks/get with a wrong Mcp-Name: error {r.get('error')}")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main():
    args = sys.argv[1:]
    http = "--http" in args
    args = [a for a in args if a != "--http"]
    binary = binary_path(args)
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "log")
        env = dict(os.environ, RMCP_TASKS_LOG=log)
        stdio_new(binary, env)
        stdio_old(binary, env)
        if http:
            http_probe(binary, env)
        print("\n=== RMCP_TASKS_LOG ===", flush=True)
        with open(log) as f:
            for line in f:
                print(line.rstrip("\n")[:200])
    print(f"\n{check.failed} failed", flush=True)
    sys.exit(1 if check.failed else 0)


if __name__ == "__main__":
    main()
