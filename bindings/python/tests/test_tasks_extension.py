"""The 2026-07-28 tasks extension from Python, against the rmcp tasks server
(tests/servers/rmcp-tasks, built by tests/setup.sh): a call the server makes
a task is followed to its result, its input is answered by ``on_elicitation``
(an ``async def`` one on ``AsyncHub``), and the handle API works."""

from __future__ import annotations

import asyncio

import pytest

import mcpmux
from conftest import TARGET, config

RMCP = TARGET / "debug" / "rmcp-tasks-server"


def rmcp(**extra) -> dict:
    assert RMCP.exists(), f"{RMCP} missing: run bash tests/setup.sh"
    return {"command": str(RMCP), "protocol_version": "2026-07-28", **extra}


def text(result) -> str:
    return result["content"][0]["text"]


def test_a_task_is_followed_and_its_input_answered():
    asked = []

    def on_elicitation(params):
        asked.append(params["message"])
        return {"action": "accept", "content": {"name": "Ada"}}

    with mcpmux.Hub.connect(config(tasks=rmcp()), on_elicitation=on_elicitation) as hub:
        status = hub.servers()[0]
        assert status["protocol_version"] == "2026-07-28"
        assert "io.modelcontextprotocol/tasks" in status["capabilities"]["extensions"]
        result = hub.call_tool("mcp_tasks_slow_sum", {"a": 2, "b": 40, "ms": 200})
        assert text(result) == "sum: 42"
        assert result["structuredContent"] == {"sum": 42}
        assert text(hub.call_tool("mcp_tasks_ask_name")) == "Hello, Ada"
    assert asked == ["What is your name?"]


def test_the_handle_api_on_this_revision():
    with mcpmux.Hub.connect(config(tasks=rmcp())) as hub:
        handle = hub.call_tool_as_task("mcp_tasks_slow_sum", {"a": 1, "b": 2, "ms": 100})
        assert handle["server"] == "tasks"
        assert hub.task("tasks", handle["task_id"])["task_id"] == handle["task_id"]
        assert text(hub.task_result("tasks", handle["task_id"])) == "sum: 3"
        with pytest.raises(mcpmux.InvalidInput, match="tasks/list"):
            hub.list_tasks("tasks")
        with pytest.raises(mcpmux.Timeout):
            hub.call_tool("mcp_tasks_never_ends", timeout=1, max_total_timeout=1)
        with pytest.raises(mcpmux.ServerError, match="failed on purpose"):
            hub.call_tool("mcp_tasks_fails")


def test_async_hub_answers_task_input_with_an_async_handler():
    async def main():
        async def on_elicitation(params):
            await asyncio.sleep(0.01)
            return {"action": "accept", "content": {"name": "Grace"}}

        async with mcpmux.AsyncHub.connect(
            config(tasks=rmcp()), on_elicitation=on_elicitation
        ) as hub:
            return text(await hub.call_tool("mcp_tasks_ask_name"))

    assert asyncio.run(main()) == "Hello, Grace"
