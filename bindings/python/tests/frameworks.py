"""Shared setup of the framework adapter tests (test_langchain.py,
test_openai_agents.py, test_pydantic_ai.py): the demo server under a policy
config (``allow_all``: ``crash``, marked destructive, is refused), a server
that fails to start, and the fault server that never answers (cancellation).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any, Dict

from conftest import config, demo, fault

#: Does not exist: the server fails to start and its tools are left out.
BROKEN = {"command": "/nonexistent/mcpmux-no-such-server"}


def hub_config(**extra: Dict[str, Any]) -> dict:
    return config(demo=demo(allow_all=True), broken=BROKEN, **extra)


def hang_config(cancel_log: Path) -> dict:
    return config(hang=fault("hang.py", env={"HANG_CANCEL_LOG": str(cancel_log)}), demo=demo(allow_all=True))


def tool_names(hub: Any) -> set:
    return {t["name"] for t in hub.list_tools()}


async def wait_for_tool(hub: Any, name: str, timeout: float = 10.0) -> None:
    """Waits (without blocking the loop) until the hub lists ``name``."""
    deadline = time.monotonic() + timeout
    while name not in {t["name"] for t in hub._native.list_tools()}:
        assert time.monotonic() < deadline, f"{name} never appeared"
        await asyncio.sleep(0.01)


async def wait_for_lines(path: Path, count: int, timeout: float = 5.0) -> list:
    deadline = time.monotonic() + timeout
    while True:
        lines = path.read_text().split() if path.exists() else []
        if len(lines) >= count or time.monotonic() > deadline:
            return lines
        await asyncio.sleep(0.02)


#: The tool calls of every test's first model turn: a plain call, a tool
#: error (isError), a call the policy refuses (destructive), and a call with
#: progress.
FIRST_TURN = [
    ("call_echo", "mcp_demo_echo", {"text": "hello from the model"}),
    ("call_fail", "mcp_demo_fail", {"message": "boom on purpose"}),
    ("call_crash", "mcp_demo_crash", {}),
    ("call_slow", "mcp_demo_slow", {"seconds": 0.2, "steps": 2}),
]
