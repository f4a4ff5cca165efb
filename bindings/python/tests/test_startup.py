"""startup_timeout: connect returns with what is up; a hung server shows as starting."""

from __future__ import annotations

import asyncio

import pytest

import mcpmux
from conftest import config, demo, fault


def _hung() -> dict:
    # Longer than any wait here: only a bounded startup returns in time.
    return config(demo=demo(), stuck=fault("hang_in_init.py", timeout_seconds=600))


def _states(hub) -> dict:
    return {s["name"]: s["state"] for s in hub.servers()}


def test_connect_returns_with_what_is_up():
    with mcpmux.Hub.connect(_hung(), startup_timeout=1) as hub:
        assert _states(hub) == {"demo": "connected", "stuck": "starting"}
        names = [t["name"] for t in hub.list_tools()]
        assert "mcp_demo_echo" in names
        result = hub.call_tool("mcp_demo_echo", {"text": "up"})
        assert result["content"][0]["text"] == "up"


def test_async_connect_returns_with_what_is_up():
    async def main():
        async with mcpmux.AsyncHub.connect(_hung(), startup_timeout=1) as hub:
            states = {s["name"]: s["state"] for s in await hub.servers()}
            assert states == {"demo": "connected", "stuck": "starting"}

    asyncio.run(main())


def test_a_bad_startup_timeout_is_invalid_input():
    with pytest.raises(mcpmux.InvalidInput, match="startup_timeout"):
        mcpmux.Hub.connect(config(demo=demo()), startup_timeout=-1)
