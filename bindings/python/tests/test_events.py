"""Hub events and the rest of the MCP client surface (ping, log level,
completions, subscriptions) against server-everything over stdio.

No sleeps: every event is awaited. A blocking wait is bounded by a watchdog
that closes the hub (which ends the iterator, so a missing event fails the
test instead of hanging it); async waits by ``asyncio.wait_for``.
"""

from __future__ import annotations

import asyncio
import json
import queue
import subprocess
import sys
import threading
from typing import Any, Callable, Dict, Iterator, List

import pytest

import mcpmux
from conftest import config, everything, marked, marked_pids, new_marker, wait_until

#: Only catches hangs: each event comes far sooner.
HANG = 60.0

PROMPT = {"type": "ref/prompt", "name": "completable-prompt"}
TEMPLATE = {"type": "ref/resource", "uri": "demo://resource/dynamic/text/{resourceId}"}
BROKEN = {"command": "/nonexistent/mcpmux-no-such-server"}


def next_matching(events: Iterator[Dict[str, Any]], pick: Callable[[Dict[str, Any]], bool]) -> Dict[str, Any]:
    """The next event ``pick`` accepts (others skipped); fails if the
    iteration ends first."""
    for event in events:
        if pick(event):
            return event
    raise AssertionError("the event stream ended before the event came")


class Watchdog:
    """Closes ``hub`` after ``HANG`` seconds unless cancelled: a blocking
    ``next`` then ends instead of hanging the test run."""

    def __init__(self, hub: mcpmux.Hub) -> None:
        self.timer = threading.Timer(HANG, hub.close)
        self.timer.daemon = True
        self.timer.start()

    def __enter__(self) -> "Watchdog":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.timer.cancel()


def test_on_event_gets_each_servers_first_state_on_the_delivery_thread():
    got: "queue.Queue[tuple]" = queue.Queue()
    hub = mcpmux.Hub.connect(
        config(everything=everything(), broken=BROKEN),
        on_event=lambda e: got.put((threading.current_thread().name, e)),
    )
    try:
        states = {}
        while len(states) < 2:
            thread, event = got.get(timeout=HANG)
            if event["type"] == "server_state":
                assert thread == "mcpmux-events", thread
                states[event["server"]] = event
        assert states["everything"]["state"] == "connected", states
        assert "error" not in states["everything"], states
        assert states["broken"]["state"] == "failed", states
        assert states["broken"]["code"] == "CONNECT_FAILED", states
        assert "mcpmux-no-such-server" in states["broken"]["error"], states
    finally:
        hub.close()


def test_on_event_must_be_callable():
    with pytest.raises(mcpmux.InvalidInput, match="on_event"):
        mcpmux.Hub.connect(config(everything=everything()), on_event=42)  # type: ignore[arg-type]


def test_log_tools_changed_and_the_end_of_the_iteration():
    hub = mcpmux.Hub.connect(config(everything=everything()))
    events = hub.events()
    with Watchdog(hub):
        hub.call_tool("mcp_everything_toggle-simulated-logging")
        log = next_matching(events, lambda e: e["type"] == "log")
        assert log["server"] == "everything", log
        assert isinstance(log["level"], str), log
        assert "message" in str(log["data"]), log

        # A refresh reconnects the server: its state comes again.
        hub.refresh("everything")
        state = next_matching(events, lambda e: e["type"] == "server_state")
        assert (state["server"], state["state"]) == ("everything", "connected"), state

        # Closing removes every tool (one tools_changed), then the iteration ends.
        before = len(hub.list_tools())
        assert before > 0
        hub.close()
        gone = next_matching(events, lambda e: e["type"] == "tools_changed")
        assert gone["server"] == "everything" and gone["added"] == [], gone
        assert len(gone["removed"]) == before, gone
        list(events)  # ends: the hub is closed
        with pytest.raises(StopIteration):
            next(events)
    with pytest.raises(mcpmux.TransportClosed):
        hub.events()


def test_ping_log_level_and_completions():
    with mcpmux.Hub.connect(config(everything=everything())) as hub:
        rtt = hub.ping("everything")
        assert isinstance(rtt, float) and 0 < rtt < HANG, rtt
        with pytest.raises(mcpmux.UnknownServer):
            hub.ping("nope")

        hub.set_log_level("everything", "error")
        with pytest.raises(mcpmux.InvalidInput) as bad:
            hub.set_log_level("everything", "loud")
        assert bad.value.code == "INVALID_INPUT" and "loud" in str(bad.value)

        c = hub.complete(PROMPT, {"name": "department", "value": "E"})
        assert c["values"] == ["Engineering"], c
        c = hub.complete(PROMPT, {"name": "name", "value": ""}, {"arguments": {"department": "Sales"}})
        assert c["values"] == ["David", "Eve", "Frank"], c
        c = hub.complete(TEMPLATE, {"name": "resourceId", "value": "7"}, server="everything")
        assert c["values"] == ["7"], c
        with pytest.raises(mcpmux.InvalidInput, match="no-such-prompt"):
            hub.complete({"type": "ref/prompt", "name": "no-such-prompt"}, {"name": "x", "value": ""})
        with pytest.raises(mcpmux.InvalidInput):
            hub.complete({"type": "nonsense"}, {"name": "x", "value": ""})


def test_a_subscribed_resource_sends_resource_updated():
    hub = mcpmux.Hub.connect(config(everything=everything()))
    with Watchdog(hub):
        uri = hub.list_resources()[0]["uri"]
        events = hub.events()
        hub.subscribe(uri)
        hub.call_tool("mcp_everything_toggle-subscriber-updates")
        update = next_matching(events, lambda e: e["type"] == "resource_updated")
        assert update == {"type": "resource_updated", "server": "everything", "uri": uri}, update
        hub.unsubscribe(uri, server="everything")
    hub.close()


async def test_async_events_on_event_and_surface():
    loop = asyncio.get_running_loop()
    first_state = loop.create_future()
    seen_update = loop.create_future()

    def on_event(event: Dict[str, Any]) -> None:
        # On the event loop's thread (asyncio futures are not thread-safe:
        # set from another thread, the awaits below would not wake).
        for future, kind in ((first_state, "server_state"), (seen_update, "resource_updated")):
            if event["type"] == kind and not future.done():
                future.set_result(event)

    hub = await mcpmux.AsyncHub.connect(config(everything=everything()), on_event=on_event)
    try:
        state = await asyncio.wait_for(first_state, HANG)
        assert (state["server"], state["state"]) == ("everything", "connected"), state

        events = hub.events()
        assert await hub.ping("everything") > 0
        await hub.set_log_level("everything", "debug")
        with pytest.raises(mcpmux.InvalidInput):
            await hub.set_log_level("everything", "loud")
        c = await hub.complete(PROMPT, {"name": "department", "value": "E"})
        assert c["values"] == ["Engineering"], c

        uri = (await hub.list_resources())[0]["uri"]
        await hub.subscribe(uri)
        await hub.call_tool("mcp_everything_toggle-subscriber-updates")

        async def first(kind: str) -> Dict[str, Any]:
            async for event in events:
                if event["type"] == kind:
                    return event
            raise AssertionError(f"the events ended before a {kind}")

        update = await asyncio.wait_for(first("resource_updated"), HANG)
        assert update["uri"] == uri, update
        await hub.unsubscribe(uri)
    finally:
        await hub.close()
    # The iterator ends with the hub, after what closing sent.
    rest = await asyncio.wait_for(_drain(events), HANG)
    assert any(e["type"] == "tools_changed" for e in rest), rest
    # on_event saw the same update.
    assert (await asyncio.wait_for(seen_update, HANG))["uri"] == update["uri"]


async def _drain(events: mcpmux.AsyncEvents) -> List[Dict[str, Any]]:
    return [e async for e in events]


def test_exit_with_an_open_hub_and_on_event_neither_hangs_nor_leaves_servers():
    marker = new_marker()
    cfg = config(everything=marked(everything(), marker))
    script = (
        "import json, sys, threading, mcpmux\n"
        "seen = threading.Event()\n"
        "def on_event(e):\n"
        "    print(e['type'], e.get('state'), flush=True)\n"
        "    seen.set()\n"
        "hub = mcpmux.Hub.connect(json.loads(sys.argv[1]), on_event=on_event)\n"
        "assert seen.wait(60)\n"
        "print('exiting', flush=True)\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", script, json.dumps(cfg)], capture_output=True, text=True, timeout=HANG
    )
    assert r.returncode == 0, r.stderr
    assert "server_state connected" in r.stdout and "exiting" in r.stdout, r.stdout
    assert wait_until(lambda: not marked_pids(marker), timeout=HANG), marked_pids(marker)
