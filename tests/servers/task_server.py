#!/usr/bin/env python3
"""Task server: tools that require MCP tasks, honest or hostile.

Usage: task_server.py <mode>

- ``no_caps``: lists `needs_task` (execution.taskSupport "required") and
  `plain`, but declares no `tasks` capability: the client cannot call
  `needs_task` (it must not ask for a task), so it is left out of tool
  listings for models.
- ``hostile``: declares tasks for tools/call. `needs_task` creates a task
  whose `tasks/get` asks for a poll interval of 0 ms and says `working`
  forever with a 100 000-character status message; `bad_status` creates a
  task whose `tasks/get` answers an unknown status; `other_id` creates a
  task whose `tasks/get` answers about another task. `tasks/cancel` marks a
  task cancelled; `tasks/list` lists every task. Every task reports the
  `ttl` its call asked for (`params.task.ttl`), else 60 000 ms.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _mini  # noqa: E402

MODE = sys.argv[1] if len(sys.argv) > 1 else "no_caps"


def task_tool(name):
    t = _mini.tool(name, "Runs as a task.")
    t["execution"] = {"taskSupport": "required"}
    return t


TOOLS = [task_tool("needs_task"), task_tool("bad_status"), task_tool("other_id"),
         _mini.tool("plain", "Answers at once.")]
CAPS = {"tools": {}}
if MODE == "hostile":
    CAPS["tasks"] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}

tasks = {}  # id -> (tool, status)


def task_obj(task_id, status, message=None, poll=0):
    ttl = tasks[task_id][2] if task_id in tasks else 60000
    t = {"taskId": task_id, "status": status, "createdAt": "2025-11-25T00:00:00Z",
         "lastUpdatedAt": "2025-11-25T00:00:00Z", "ttl": ttl, "pollInterval": poll}
    if message is not None:
        t["statusMessage"] = message
    return t


def main():
    while True:
        msg = _mini.read_message()
        if msg is None:
            return
        if not _mini.is_request(msg):
            continue
        rid, method, params = msg["id"], msg["method"], msg.get("params") or {}
        if method == "initialize":
            _mini.respond(rid, _mini.initialize_result(params, "task_server", capabilities=CAPS))
        elif method == "ping":
            _mini.respond(rid, {})
        elif method == "tools/list":
            _mini.respond(rid, {"tools": TOOLS})
        elif method == "tools/call":
            name = params.get("name")
            if name == "plain":
                _mini.respond(rid, _mini.text_result("plain answer"))
            elif "task" not in params:
                _mini.respond_error(rid, _mini.METHOD_NOT_FOUND,
                                    "Tool %s requires task augmentation" % name)
            else:
                task_id = "t%d" % (len(tasks) + 1)
                asked = params["task"].get("ttl") if isinstance(params["task"], dict) else None
                tasks[task_id] = [name, "working", asked if isinstance(asked, int) else 60000]
                _mini.respond(rid, {"task": task_obj(task_id, "working")})
        elif method in ("tasks/get", "tasks/cancel"):
            task_id = params.get("taskId")
            if task_id not in tasks:
                _mini.respond_error(rid, _mini.INVALID_PARAMS, "no task")
                continue
            if method == "tasks/cancel":
                tasks[task_id][1] = "cancelled"
            name, status, _ = tasks[task_id]
            if status == "cancelled":
                _mini.respond(rid, task_obj(task_id, "cancelled"))
            elif name == "bad_status":
                _mini.respond(rid, task_obj(task_id, "sleeping"))
            elif name == "other_id":
                _mini.respond(rid, task_obj("not-" + task_id, "completed"))
            else:
                _mini.respond(rid, task_obj(task_id, "working", "x" * 100000))
        elif method == "tasks/list":
            _mini.respond(rid, {"tasks": [task_obj(i, s) for i, (_, s, _) in tasks.items()]})
        else:
            _mini.respond_error(rid, _mini.METHOD_NOT_FOUND, "Method not found: %s" % method)


if __name__ == "__main__":
    main()
