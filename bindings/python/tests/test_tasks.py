"""MCP tasks against server-everything over stdio: its
``simulate-research-query`` requires a task, so a plain ``call_tool`` runs
it as one; the handle API starts, polls, lists, waits for and cancels
tasks; ``task_status`` events tell each status. In ``Hub`` and ``AsyncHub``.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Dict, List

import pytest

import mcpmux
from conftest import config, everything

RESEARCH = "mcp_everything_simulate-research-query"
#: Only catches hangs: the research takes about four seconds.
HANG = 120.0


def test_a_tool_that_requires_a_task_runs_through_call_tool():
    seen: List[Dict[str, Any]] = []
    completed = threading.Event()

    def on_event(event: Dict[str, Any]) -> None:
        if event["type"] == "task_status":
            seen.append(event)
            if event["status"] == "completed":
                completed.set()

    with mcpmux.Hub.connect(config(everything=everything()), on_event=on_event) as hub:
        assert RESEARCH in str(hub.tools_for("openai"))
        result = hub.call_tool(RESEARCH, {"topic": "py"})
        assert not result.get("isError"), result
        assert "Research Report: py" in result["content"][0]["text"]
        assert completed.wait(HANG), seen
        assert seen[0]["server"] == "everything" and seen[0]["task_id"]
        # task=True on a tool that forbids tasks is a plain call.
        echo = hub.call_tool("mcp_everything_echo", {"message": "m"}, task=True)
        assert echo["content"][0]["text"] == "Echo: m"


def test_the_task_handle_api():
    with mcpmux.Hub.connect(config(everything=everything())) as hub:
        handle = hub.call_tool_as_task(RESEARCH, {"topic": "handles"})
        assert handle["server"] == "everything"
        task_id = handle["task_id"]
        assert isinstance(task_id, str) and task_id
        status = hub.task("everything", task_id)
        assert status["task_id"] == task_id
        assert status["status"] in ("working", "completed"), status
        assert any(t["task_id"] == task_id for t in hub.list_tasks("everything"))
        result = hub.task_result("everything", task_id, timeout=HANG)
        assert "Research Report: handles" in result["content"][0]["text"]
        assert hub.task("everything", task_id)["status"] == "completed"

        other = hub.call_tool_as_task(RESEARCH, {"topic": "stop"})
        assert hub.cancel_task("everything", other["task_id"])["status"] == "cancelled"
        with pytest.raises(mcpmux.Cancelled):
            hub.task_result("everything", other["task_id"])
        with pytest.raises(mcpmux.InvalidInput):
            hub.call_tool_as_task("mcp_everything_echo", {"message": "x"})
        with pytest.raises(mcpmux.UnknownServer):
            hub.task("nope", task_id)


def test_async_hub_runs_tasks():
    async def main() -> None:
        hub = await mcpmux.AsyncHub.connect(config(everything=everything()))
        try:
            result = await asyncio.wait_for(hub.call_tool(RESEARCH, {"topic": "aio"}), HANG)
            assert "Research Report: aio" in result["content"][0]["text"]
            handle = await hub.call_tool_as_task(RESEARCH, {"topic": "aio handle"})
            task_id = handle["task_id"]
            assert (await hub.task("everything", task_id))["task_id"] == task_id
            assert any(t["task_id"] == task_id for t in await hub.list_tasks("everything"))
            cancelled = await hub.cancel_task("everything", task_id)
            assert cancelled["status"] == "cancelled"
            with pytest.raises(mcpmux.Cancelled):
                await hub.task_result("everything", task_id)
        finally:
            await hub.close()

    asyncio.run(main())
