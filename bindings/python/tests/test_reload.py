"""``Hub.reload`` / ``AsyncHub.reload``: an unchanged server keeps its
process, a removed one is closed, an added one is started (its tools
appear), a changed one is started again; a lazy server waits for its first
call. Processes are found by the marker in their environment."""

from __future__ import annotations

import asyncio

import pytest

import mcpmux
from conftest import config, demo, marked, marked_pids, new_marker, wait_until


def one_pid(marker: str) -> int:
    pids = marked_pids(marker)
    assert len(pids) == 1, (marker, pids)
    return pids[0]


def test_reload_keeps_unchanged_servers_and_replaces_the_rest():
    keep, gone, change, added = (new_marker() for _ in range(4))
    hub = mcpmux.Hub.connect(
        config(
            keep=marked(demo(), keep),
            gone=marked(demo(), gone),
            change=marked(demo(timeout_seconds=30), change),
        )
    )
    try:
        keep_pid, gone_pid, change_pid = one_pid(keep), one_pid(gone), one_pid(change)
        with pytest.raises(mcpmux.ConfigInvalid):
            hub.reload({"mcpServers": {"x": {"command": 1}}})
        assert one_pid(gone) == gone_pid, "a bad config changed something"

        hub.reload(
            config(
                keep=marked(demo(), keep),
                change=marked(demo(timeout_seconds=31), change),
                added=marked(demo(), added),
            )
        )
        assert one_pid(keep) == keep_pid
        assert wait_until(lambda: marked_pids(gone) == []), "the removed server still runs"
        assert wait_until(lambda: change_pid not in marked_pids(change))
        assert len(marked_pids(change)) == 1
        one_pid(added)
        assert [s["name"] for s in hub.servers()] == ["keep", "change", "added"]
        names = {t["name"] for t in hub.list_tools()}
        assert "mcp_added_echo" in names and "mcp_gone_echo" not in names
        result = hub.call_tool("mcp_added_echo", {"text": "new"})
        assert result["content"][0]["text"] == "new"

        # A lazy server added by a reload starts on its first call.
        lazy = new_marker()
        hub.reload(config(keep=marked(demo(), keep), later=marked(demo(lazy=True), lazy)))
        assert [s["state"] for s in hub.servers()] == ["connected", "idle"]
        assert marked_pids(lazy) == []
        assert hub.call_tool("mcp_later_echo", {"text": "now"})["content"][0]["text"] == "now"
        one_pid(lazy)
        assert one_pid(keep) == keep_pid
    finally:
        hub.close()
    with pytest.raises(mcpmux.TransportClosed):
        hub.reload(config(keep=demo()))


def test_async_reload_adds_and_removes():
    added = new_marker()

    async def main() -> None:
        async with mcpmux.AsyncHub.connect(config(a=demo())) as hub:
            await hub.reload(config(b=marked(demo(), added)))
            assert [s["name"] for s in await hub.servers()] == ["b"]
            assert len(marked_pids(added)) == 1
            names = {t["name"] for t in await hub.list_tools()}
            assert "mcp_b_echo" in names and "mcp_a_echo" not in names

    asyncio.run(main())
    assert marked_pids(added) == []
