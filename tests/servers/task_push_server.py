#!/usr/bin/env python3
"""A 2026-07-28 server of the tasks extension (SEP-2663) that pushes task
status: written from the SEP's "Task Status Notifications", which the
official SDKs do not route yet (rmcp 3.11 refuses `notifications/tasks` on
a listen stream). Stdlib only.

`server/discover` declares `io.modelcontextprotocol/tasks`; `tools/call`
of `slow` {ms} answers a `CreateTaskResult` (`pollIntervalMs` 30 000, so a
client that only polls waits 30 s) and completes the task `ms` later
(default 500). A `subscriptions/listen` stream asking for `taskIds` is
acknowledged with the ids the server knows (PUSH=0: with none, so the
client must poll), and each task it names gets `notifications/tasks` with
the whole task (`result` inline) when it completes, tagged with the
stream's id. `tasks/get` answers the task as it is; `state` (a plain tool)
says how many `tasks/get` came (`gets`) and the `taskIds` streams asked
for (`asked`).
"""
import datetime
import json
import os
import sys
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _mini  # noqa: E402

TASKS = "io.modelcontextprotocol/tasks"
SUB_KEY = "io.modelcontextprotocol/subscriptionId"
VERSION_META = "io.modelcontextprotocol/protocolVersion"
PUSH = os.environ.get("PUSH", "1") != "0"

lock = threading.Lock()
tasks = {}  # id -> task dict (the wire's DetailedTask)
listeners = {}  # json id text -> (request id, set of task ids)
counts = {"gets": 0, "asked": []}

TOOLS = [
    _mini.tool("slow", "Completes as a task after `ms`.",
               {"type": "object", "properties": {"ms": {"type": "integer"}}}),
    _mini.tool("state", "How many tasks/get came, and the taskIds asked for."),
]


def send(msg):
    with lock:
        _mini.write_message(msg)


def now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat().replace("+00:00", "Z")


def complete(result):
    result["resultType"] = "complete"
    return result


def finish(task_id, ms):
    time.sleep(ms / 1000)
    with lock:
        task = tasks[task_id]
        task["status"] = "completed"
        task["lastUpdatedAt"] = now()
        task["result"] = _mini.text_result("done after %d ms" % ms)
        targets = [rid for rid, ids in listeners.values() if task_id in ids]
        pushed = dict(task)
    for rid in targets:
        params = dict(pushed)
        params["_meta"] = {SUB_KEY: rid}
        send({"jsonrpc": "2.0", "method": "notifications/tasks", "params": params})


def call_tool(rid, params):
    name = params.get("name")
    args = params.get("arguments") or {}
    if name == "state":
        with lock:
            text = json.dumps(counts)
        send({"jsonrpc": "2.0", "id": rid, "result": complete(_mini.text_result(text))})
        return
    if name != "slow":
        send({"jsonrpc": "2.0", "id": rid,
              "error": {"code": _mini.INVALID_PARAMS, "message": "Unknown tool: %s" % name}})
        return
    task_id = str(uuid.uuid4())
    stamp = now()
    task = {"taskId": task_id, "status": "working", "createdAt": stamp,
            "lastUpdatedAt": stamp, "ttlMs": 600000, "pollIntervalMs": 30000}
    with lock:
        tasks[task_id] = task
        created = dict(task)
    created["resultType"] = "task"
    send({"jsonrpc": "2.0", "id": rid, "result": created})
    threading.Thread(target=finish, args=(task_id, int(args.get("ms", 500))), daemon=True).start()


def listen(rid, params):
    asked = (params.get("notifications") or {}).get("taskIds") or []
    with lock:
        counts["asked"].append(asked)
        known = [t for t in asked if t in tasks] if PUSH else []
        listeners[json.dumps(rid)] = (rid, set(known))
    accepted = {"taskIds": known} if known else {}
    send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
          "params": {"_meta": {SUB_KEY: rid}, "notifications": accepted}})


def main():
    while True:
        msg = _mini.read_message()
        if msg is None:
            return
        if not isinstance(msg, dict) or "method" not in msg:
            continue
        method, params = msg["method"], msg.get("params") or {}
        if "id" not in msg:
            if method == "notifications/cancelled":
                with lock:
                    listeners.pop(json.dumps(params.get("requestId")), None)
            continue
        rid = msg["id"]
        if method == "server/discover":
            send({"jsonrpc": "2.0", "id": rid, "result": complete({
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}, "extensions": {TASKS: {}}},
                "serverInfo": {"name": "task-push-server", "version": "0.1.0"}})})
        elif (params.get("_meta") or {}).get(VERSION_META) != "2026-07-28":
            send({"jsonrpc": "2.0", "id": rid, "error": {
                "code": _mini.INVALID_PARAMS,
                "message": "%s: _meta %s must be 2026-07-28" % (method, VERSION_META)}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": rid, "result": complete({"tools": TOOLS})})
        elif method == "tools/call":
            call_tool(rid, params)
        elif method == "tasks/get":
            with lock:
                counts["gets"] += 1
                task = tasks.get(params.get("taskId"))
                answer = dict(task) if task else None
            if answer is None:
                send({"jsonrpc": "2.0", "id": rid,
                      "error": {"code": _mini.INVALID_PARAMS, "message": "unknown task"}})
            else:
                send({"jsonrpc": "2.0", "id": rid, "result": complete(answer)})
        elif method == "subscriptions/listen":
            listen(rid, params)
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {
                "code": _mini.METHOD_NOT_FOUND, "message": "Method not found: %s" % method}})


if __name__ == "__main__":
    main()
