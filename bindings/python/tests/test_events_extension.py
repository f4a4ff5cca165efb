"""The events extension (``io.modelcontextprotocol/events``) from Python,
against tests/servers/events_server.py: listing event types, polling from a
cursor, a stream whose occurrences arrive on the hub's events, webhook
subscriptions, the same on ``AsyncHub``, and unknown options refused. The
work is core's (core/tests/events_extension.rs); these check the
translation.

No sleeps but bounded polling of the server's own state; every event wait is
bounded by a watchdog that closes the hub (which ends the iterator).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any, Callable, Dict, Iterator

import pytest

import mcpmux
from conftest import config, fault

HANG = 30.0
SECRET = "whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0"


def events_server(**env: str) -> dict:
    return fault("events_server.py", env=env)


def tool(hub: mcpmux.Hub, name: str, args: Dict[str, Any] | None = None) -> str:
    return hub.call_tool(f"mcp_ev_{name}", args or {})["content"][0]["text"]


def emit(hub: mcpmux.Hub, name: str, n: int) -> str:
    return tool(hub, "emit", {"name": name, "data": {"n": n}})


def server_state(hub: mcpmux.Hub) -> Dict[str, Any]:
    return json.loads(tool(hub, "state"))


def next_matching(events: Iterator[Dict[str, Any]], pick: Callable[[Dict[str, Any]], bool]) -> Dict[str, Any]:
    for event in events:
        if pick(event):
            return event
    raise AssertionError("the event stream ended before the event came")


def until(predicate: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + HANG
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def test_lists_event_types_only_of_servers_offering_the_extension():
    with mcpmux.Hub.connect(
        config(
            ev=events_server(CAPABILITY="extension"),
            top=events_server(CAPABILITY="top"),
            none=events_server(CAPABILITY="none"),
        )
    ) as hub:
        seen = sorted(f"{e['server']} {e['name']}" for e in hub.list_events())
        assert seen == [
            "ev build.finished",
            "ev ticket.created",
            "top build.finished",
            "top ticket.created",
        ]
        assert len(hub.list_events("top")) == 2
        assert len(hub.list_events(server="ev")) == 2
        with pytest.raises(mcpmux.InvalidInput, match="io.modelcontextprotocol/events"):
            hub.list_events("none")
        with pytest.raises(mcpmux.InvalidInput):
            hub.poll_events("none", "ticket.created")


def test_polls_from_a_cursor():
    with mcpmux.Hub.connect(config(ev=events_server(KEEP="4"))) as hub:
        first = hub.poll_events("ev", "ticket.created")
        assert first["events"] == []
        assert first["truncated"] is False and first["has_more"] is False
        assert first["next_poll_ms"] == 1000
        start = first["cursor"]
        assert isinstance(start, str)
        for n in range(3):
            emit(hub, "ticket.created", n)
        emit(hub, "build.finished", 9)
        page = hub.poll_events("ev", "ticket.created", cursor=start, max_events=2)
        assert [e["data"] for e in page["events"]] == [{"n": 0}, {"n": 1}]
        assert page["has_more"] is True
        event = page["events"][0]
        assert event["name"] == "ticket.created"
        assert set(event) >= {"event_id", "name", "timestamp", "data"}
        rest = hub.poll_events("ev", "ticket.created", None, cursor=page["cursor"])
        assert [e["data"] for e in rest["events"]] == [{"n": 2}]
        for n in range(3, 8):
            emit(hub, "ticket.created", n)
        late = hub.poll_events("ev", "ticket.created", {}, cursor=start)
        assert late["truncated"] is True and len(late["events"]) == 4
        with pytest.raises(mcpmux.ServerError) as e:
            hub.poll_events("ev", "no.such")
        assert e.value.rpc_code == -32023


def test_a_stream_delivers_events_on_the_hub_events_and_keeps_the_cursor():
    with mcpmux.Hub.connect(config(ev=events_server(HEARTBEAT_MS="100"))) as hub:
        timer = threading.Timer(HANG, hub.close)
        timer.daemon = True
        timer.start()
        try:
            events = hub.events()
            emit(hub, "ticket.created", 0)
            with hub.stream_events("ev", "ticket.created", cursor="pos-0") as stream:
                assert isinstance(stream, mcpmux.EventStream)
                assert isinstance(stream.id, int)
                active = next_matching(events, lambda e: e["type"] == "event_stream")
                assert active["state"] == "active" and active["subscription"] == stream.id
                replayed = next_matching(events, lambda e: e["type"] == "event")
                assert replayed["data"] == {"n": 0} and replayed["event_id"] == "evt-1"
                emit(hub, "build.finished", 1)
                emit(hub, "ticket.created", 2)
                pushed = next_matching(events, lambda e: e["type"] == "event")
                assert pushed["server"] == "ev"
                assert pushed["subscription"] == stream.id
                assert pushed["name"] == "ticket.created"
                assert pushed["data"] == {"n": 2}
                assert pushed["cursor"] == "pos-3"
                emit(hub, "build.finished", 3)
                until(lambda: stream.cursor == "pos-4", "heartbeats move the cursor")
                assert "pos-4" in repr(stream)
            # Leaving the block stopped it: the server was told.
            until(
                lambda: (lambda s: s["streams"] == [] and len(s["cancelled"]) == 1)(server_state(hub)),
                "the stream was not cancelled",
            )
            stream.stop()  # again: nothing
        finally:
            timer.cancel()


def test_an_ended_stream_is_told_on_on_event():
    got: list = []
    seen = threading.Event()

    def on_event(event: Dict[str, Any]) -> None:
        if event["type"] == "event_stream":
            got.append(event)
            if event["state"] == "ended":
                seen.set()

    with mcpmux.Hub.connect(config(ev=events_server()), on_event=on_event) as hub:
        stream = hub.stream_events("ev", "build.finished")
        until(lambda: any(e["state"] == "active" for e in got), "no active")
        tool(hub, "end_streams")
        assert seen.wait(HANG)
        assert got[-1]["subscription"] == stream.id
        stream.stop()


def test_a_streams_error_and_termination_carry_the_servers_code_and_data():
    got: list = []
    ended = threading.Event()

    def on_event(event: Dict[str, Any]) -> None:
        if event["type"] == "event_stream":
            got.append(event)
            if event["state"] == "terminated":
                ended.set()

    with mcpmux.Hub.connect(config(ev=events_server()), on_event=on_event) as hub:
        stream = hub.stream_events("ev", "ticket.created")
        until(lambda: any(e["state"] == "active" for e in got), "no active")
        tool(hub, "fail_streams", {"kind": "error", "code": -32025, "message": "Forbidden",
                                   "data": {"reason": "revoked"}})
        until(lambda: any(e["state"] == "error" for e in got), "no error")
        error = next(e for e in got if e["state"] == "error")
        assert error["error_code"] == -32025 and error["error_data"] == {"reason": "revoked"}
        assert error["subscription"] == stream.id
        tool(hub, "fail_streams", {"kind": "terminated", "code": -32023, "message": "gone"})
        assert ended.wait(HANG)
        assert got[-1]["error_code"] == -32023 and "error_data" not in got[-1]
        stream.stop()


def test_webhook_subscriptions():
    with mcpmux.Hub.connect(config(ev=events_server())) as hub:
        with pytest.raises(mcpmux.InvalidInput, match="https"):
            hub.subscribe_events("ev", "build.finished", "http://example.com/hook", SECRET)
        with pytest.raises(mcpmux.InvalidInput) as e:
            hub.subscribe_events("ev", "build.finished", "https://example.com/hook", "not-a-secret-at-all")
        assert "not-a-secret-at-all" not in str(e.value)
        assert server_state(hub)["secrets_seen"] == 0
        sub = hub.subscribe_events(
            "ev", "build.finished", "https://example.com/hook", SECRET, {"repo": "x"}, ttl=60
        )
        assert sub["id"].startswith("sub_")
        assert sub["truncated"] is False
        assert "refresh_before" in sub and "cursor" in sub
        state = server_state(hub)
        assert state["subscriptions"][0]["url"] == "https://example.com/hook"
        assert state["subscriptions"][0]["ttlMs"] == 60000
        with pytest.raises(mcpmux.ServerError) as err:
            hub.subscribe_events("ev", "ticket.created", "https://example.com/hook", SECRET)
        assert err.value.rpc_code == -32026
        hub.unsubscribe_events("ev", "build.finished", "https://example.com/hook", {"repo": "x"})
        assert server_state(hub)["subscriptions"] == []


def test_bad_arguments_and_unknown_options_are_refused():
    with mcpmux.Hub.connect(config(ev=events_server())) as hub:
        with pytest.raises(mcpmux.InvalidInput, match="arguments"):
            hub.poll_events("ev", "ticket.created", [1])  # type: ignore[arg-type]
        with pytest.raises(mcpmux.InvalidInput, match="max_events"):
            hub.poll_events("ev", "ticket.created", max_events=-1)
        with pytest.raises(mcpmux.InvalidInput, match="max_events"):
            hub.poll_events("ev", "ticket.created", max_events=True)
        with pytest.raises(mcpmux.InvalidInput, match="cursor"):
            hub.stream_events("ev", "ticket.created", cursor=5)  # type: ignore[arg-type]
        with pytest.raises(mcpmux.InvalidInput, match="ttl"):
            hub.subscribe_events("ev", "build.finished", "https://x/h", SECRET, ttl=-1)
        with pytest.raises(TypeError, match="max_event"):
            hub.poll_events("ev", "ticket.created", max_event=3)  # type: ignore[call-arg]
        with pytest.raises(TypeError, match="heartbeat_ms"):
            hub.stream_events("ev", "ticket.created", heartbeat_ms=1)  # type: ignore[call-arg]
        with pytest.raises(mcpmux.InvalidInput, match="heartbeat"):
            hub.stream_events("ev", "ticket.created", heartbeat=0)
    with pytest.raises(mcpmux.TransportClosed):
        hub.list_events()


def test_async_hub():
    async def main() -> None:
        async with mcpmux.AsyncHub.connect(config(ev=events_server(HEARTBEAT_MS="100"))) as hub:
            assert len(await hub.list_events("ev")) == 2
            page = await hub.poll_events("ev", "ticket.created")
            start = page["cursor"]
            await hub.call_tool("mcp_ev_emit", {"name": "ticket.created", "data": {"n": 7}})
            page = await hub.poll_events("ev", "ticket.created", cursor=start, max_events=10)
            assert [e["data"] for e in page["events"]] == [{"n": 7}]
            events = hub.events()
            async with await hub.stream_events("ev", "ticket.created", cursor=start) as stream:

                async def first_event() -> Dict[str, Any]:
                    async for event in events:
                        if event["type"] == "event":
                            return event
                    raise AssertionError("events ended")

                event = await asyncio.wait_for(first_event(), HANG)
                assert event["data"] == {"n": 7} and event["subscription"] == stream.id
            sub = await hub.subscribe_events("ev", "build.finished", "http://127.0.0.1:9/h", SECRET)
            assert sub["id"].startswith("sub_")
            await hub.unsubscribe_events("ev", "build.finished", "http://127.0.0.1:9/h")
            with pytest.raises(TypeError):
                await hub.poll_events("ev", "ticket.created", limit=3)  # type: ignore[call-arg]

    asyncio.run(main())


def test_max_age_no_expiry_and_heartbeat():
    """``max_age`` (``maxAgeMs``) leaves old occurrences out and says so;
    ``no_expiry`` subscribes without ``refresh_before``; ``heartbeat`` sets
    the stream's watchdog (a silent server's stream is sent again)."""
    env = events_server(PRELOAD="3", PRELOAD_AGE_MS="600000", HEARTBEAT_MS="0")
    with mcpmux.Hub.connect(config(ev=env)) as hub:
        emit(hub, "ticket.created", 7)
        everything = hub.poll_events("ev", "ticket.created", cursor="pos-0")
        assert len(everything["events"]) == 4 and everything["truncated"] is False
        recent = hub.poll_events("ev", "ticket.created", cursor="pos-0", max_age=60)
        assert [e["data"] for e in recent["events"]] == [{"n": 7}]
        assert recent["truncated"] is True
        with pytest.raises(mcpmux.InvalidInput):
            hub.poll_events("ev", "ticket.created", cursor="pos-0", max_age=-1)

        sub = hub.subscribe_events("ev", "build.finished", "https://h.example.com/x", SECRET, no_expiry=True)
        assert sub.get("refresh_before") is None, sub
        assert server_state(hub)["subscriptions"][0]["ttlMs"] is None
        with pytest.raises(mcpmux.InvalidInput):
            hub.subscribe_events("ev", "build.finished", "https://h.example.com/x", SECRET, ttl=60, no_expiry=True)

        timer = threading.Timer(HANG, hub.close)
        timer.daemon = True
        timer.start()
        try:
            events = hub.events()
            with hub.stream_events("ev", "ticket.created", cursor="pos-0", max_age=60, heartbeat=0.2):
                active = next_matching(events, lambda e: e["type"] == "event_stream")
                assert active["state"] == "active" and active["truncated"] is True, active
                first = next_matching(events, lambda e: e["type"] == "event")
                assert first["data"] == {"n": 7}
                again = next_matching(events, lambda e: e["type"] == "event_stream" and e["state"] != "active")
                assert again["state"] == "reconnecting", again
        finally:
            timer.cancel()


def test_async_max_age_and_no_expiry():
    async def main() -> None:
        env = events_server(PRELOAD="2", PRELOAD_AGE_MS="600000")
        async with mcpmux.AsyncHub.connect(config(ev=env)) as hub:
            page = await hub.poll_events("ev", "ticket.created", cursor="pos-0", max_age=60)
            assert page["events"] == [] and page["truncated"] is True
            sub = await hub.subscribe_events(
                "ev", "build.finished", "https://h.example.com/x", SECRET, no_expiry=True
            )
            assert sub.get("refresh_before") is None, sub

    asyncio.run(main())
