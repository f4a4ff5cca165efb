"""Hub.search_tools / AsyncHub.search_tools against the demo server and
server-everything: the tool a query is about ranks first."""

from __future__ import annotations

import asyncio

import pytest

import mcpmux
from conftest import config, demo, everything


def test_search_ranks_the_tool_the_query_is_about_first():
    with mcpmux.Hub.connect(config(demo=demo(), everything=everything())) as hub:
        found = hub.search_tools("add two numbers")
        assert found and found[0]["name"] == "mcp_demo_add", [t["name"] for t in found]
        assert set(found[0]) >= {"name", "server", "tool", "input_schema"}
        assert len(hub.search_tools("echo", limit=1)) == 1
        # Nothing matches: still an answer while there are tools.
        assert len(hub.search_tools("kubernetes cluster autoscaler")) > 0
        with pytest.raises(mcpmux.InvalidInput):
            hub.search_tools(42)


def test_async_search():
    async def main():
        async with mcpmux.AsyncHub.connect(config(demo=demo())) as hub:
            found = await hub.search_tools("echo text back", limit=3)
            assert found[0]["name"] == "mcp_demo_echo", [t["name"] for t in found]
            assert len(found) <= 3

    asyncio.run(main())
