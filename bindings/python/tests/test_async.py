"""The asyncio API (mcpmux.AsyncHub) against the demo server and server-everything."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest

import mcpmux
from conftest import config, demo, everything, fault


async def test_connect_await_and_call():
    hub = await mcpmux.AsyncHub.connect(config(demo=demo()))
    try:
        assert isinstance(hub, mcpmux.AsyncHub)
        servers = await hub.servers()
        assert servers[0]["state"] == "connected"
        tools = await hub.list_tools()
        assert "mcp_demo_echo" in [t["name"] for t in tools]
        result = await hub.call_tool("mcp_demo_echo", {"text": "async"})
        assert result == {"content": [{"type": "text", "text": "async"}]}
        assert (await hub.call_tool("mcp_demo_add", {"a": 20, "b": 22}))["structuredContent"] == {"sum": 42}
        assert (await hub.call_tool("mcp_demo_fail"))["isError"] is True
    finally:
        await hub.close()
    assert hub.closed


async def test_async_with_closes():
    async with mcpmux.AsyncHub.connect(config(demo=demo())) as hub:
        assert (await hub.call_tool("mcp_demo_echo", {"text": "x"}))["content"][0]["text"] == "x"
    assert hub.closed
    # connect is a real coroutine: tasks and wait_for take it
    hub2 = await asyncio.wait_for(asyncio.create_task(mcpmux.AsyncHub.connect(config(demo=demo()))), 30)
    async with hub2:
        assert not hub2.closed
    assert hub2.closed
    async with await mcpmux.AsyncHub.connect(config(demo=demo())) as hub3:
        assert not hub3.closed
    assert hub3.closed


async def test_a_server_asking_during_each_sequential_call_is_answered():
    # One call at a time: the loop's thread reads the server's output itself
    # while it waits (Bridge.read_now), so the server's own requests (here a
    # ping in the middle of each call) are read, and answered, from there.
    async with mcpmux.AsyncHub.connect(config(asker=fault("asks_client.py"))) as hub:
        for i in range(200):
            result = await asyncio.wait_for(hub.call_tool("mcp_asker_ping_client", {}), 10)
            assert not result.get("isError", False), result
            assert json.loads(result["content"][0]["text"]) == {"result": {}}, f"call {i}"


async def test_hostile_output_read_by_the_loop_itself_is_capped_and_the_hub_goes_on():
    # One call at a time, so the loop's own reads (Bridge.read_now) take the
    # servers' output: a 2 MB answer, and an answer that never ends, must
    # both fail at the 1 MB cap (not hang, not time out), and the servers
    # stay connected for the next call.
    cap = {"max_message_bytes": 1000000}
    servers = config(
        huge=fault("huge_line.py", env={"HUGE_LINE_BYTES": "2000000"}, **cap),
        endless=fault("endless_line.py", timeout_seconds=60, **cap),
    )
    async with mcpmux.AsyncHub.connect(servers) as hub:
        for tool in ["mcp_huge_flood", "mcp_endless_endless", "mcp_huge_flood"]:
            with pytest.raises(mcpmux.ProtocolError, match="exceeds the limit of 1000000 bytes"):
                await asyncio.wait_for(hub.call_tool(tool), 30)
        assert [s["state"] for s in await hub.servers()] == ["connected", "connected"]


async def test_sequential_calls_on_two_servers_get_their_own_answers():
    # The loop reads the server it sent to last; a call to the other server
    # in between must still be answered by its own server.
    async with mcpmux.AsyncHub.connect(config(demo=demo(), everything=everything())) as hub:
        for i in range(100):
            if i % 3 == 0:
                r = await hub.call_tool("mcp_everything_echo", {"message": f"m{i}"})
                assert r["content"][0]["text"] == f"Echo: m{i}"
            else:
                r = await hub.call_tool("mcp_demo_echo", {"text": f"t{i}"})
                assert r["content"][0]["text"] == f"t{i}"


async def test_200_concurrent_calls_on_two_servers():
    async with mcpmux.AsyncHub.connect(config(demo=demo(), everything=everything())) as hub:
        calls = []
        for i in range(200):
            if i % 4 == 0:
                calls.append(hub.call_tool("mcp_everything_echo", {"message": f"m{i}"}))
            else:
                calls.append(hub.call_tool("mcp_demo_echo", {"text": f"t{i}"}))
        results = await asyncio.gather(*calls)
        for i, r in enumerate(results):
            expected = f"Echo: m{i}" if i % 4 == 0 else f"t{i}"
            assert r["content"][0]["text"] == expected


async def test_concurrent_slow_calls_overlap(events):
    # 20 calls the server would answer only after an hour: all 20 reach the
    # server (it logs "slow <id>" as each starts) while none has ended, which
    # one call at a time never does (the wait below fails as hung). Then
    # each is cancelled, and the server is told so for each.
    async with mcpmux.AsyncHub.connect(config(demo=demo(env=events.demo_env()))) as hub:
        calls = [
            asyncio.ensure_future(hub.call_tool("mcp_demo_slow", {"seconds": 3600, "steps": 0}, timeout=3600))
            for _ in range(20)
        ]
        await events.wait_count("slow", 20)
        assert not any(c.done() for c in calls)
        for c in calls:
            c.cancel()
        results = await asyncio.gather(*calls, return_exceptions=True)
        assert all(isinstance(r, asyncio.CancelledError) for r in results), results
        await events.wait_count("cancelled", 20)
        assert (await hub.call_tool("mcp_demo_echo", {"text": "next"}))["content"][0]["text"] == "next"


async def test_event_loop_is_not_blocked_during_a_call(events):
    # The call would be answered only after an hour; it ends because a
    # ticker on the same loop, running while the call is pending, cancels it
    # after its 10th tick. A loop blocked by the call never runs the ticker,
    # and the call never ends (the pytest-timeout guard fails it).
    async with mcpmux.AsyncHub.connect(config(demo=demo(env=events.demo_env()))) as hub:
        ticks = 0
        call = asyncio.ensure_future(hub.call_tool("mcp_demo_slow", {"seconds": 3600, "steps": 0}, timeout=3600))

        async def ticker():
            nonlocal ticks
            await events.wait_count("slow", 1)  # the call is at the server
            while ticks < 10:
                await asyncio.sleep(0.01)
                ticks += 1
            call.cancel()

        t = asyncio.ensure_future(ticker())
        with pytest.raises(asyncio.CancelledError):
            await call
        await t
        assert ticks == 10
        await events.wait_count("cancelled", 1)


async def test_resources_prompts_refresh_and_tools_for():
    async with mcpmux.AsyncHub.connect(config(demo=demo(), everything=everything())) as hub:
        resources = await hub.list_resources()
        assert {r["server"] for r in resources} == {"demo", "everything"}
        templates = await hub.list_resource_templates("demo")
        assert templates[0]["uriTemplate"] == "demo://item/{id}"
        readme = await hub.read_resource("demo://readme", "demo")
        assert "demo server" in readme["contents"][0]["text"]
        prompts = await hub.list_prompts("everything")
        assert prompts and all(p["server"] == "everything" for p in prompts)
        greet = await hub.get_prompt("greet", {"name": "Grace"}, "demo")
        assert "Grace" in str(greet)
        await hub.refresh("demo")
        assert (await hub.call_tool("mcp_demo_echo", {"text": "r"}))["content"][0]["text"] == "r"
        assert (await hub.tools_for("anthropic"))[0]["name"].startswith("mcp_")


async def test_progress_on_the_loop_thread_sync_and_async_callbacks():
    async with mcpmux.AsyncHub.connect(config(demo=demo())) as hub:
        seen = []
        async_seen = []
        me = threading.get_ident()

        def cb(p, total, message):
            seen.append((p, total, message, threading.get_ident()))

        async def acb(p, total, message):
            async_seen.append(p)

        await hub.call_tool("mcp_demo_slow", {"seconds": 0.3, "steps": 3}, on_progress=cb)
        assert [s[0] for s in seen] == [1, 2, 3]
        assert all(s[3] == me and s[1] == 3 for s in seen)
        await hub.call_tool("mcp_demo_slow", {"seconds": 0.3, "steps": 3}, on_progress=acb)
        await asyncio.sleep(0.05)
        assert async_seen == [1, 2, 3]


def test_one_hub_on_several_loops_one_after_another():
    async def connect():
        return await mcpmux.AsyncHub.connect(config(demo=demo()))

    hub = asyncio.run(connect())
    try:
        for i in range(3):

            async def call(i=i):
                return await hub.call_tool("mcp_demo_echo", {"text": f"loop{i}"})

            assert asyncio.run(call())["content"][0]["text"] == f"loop{i}"
    finally:
        asyncio.run(hub.close())


def test_loops_in_several_threads_at_once():
    hub = asyncio.run(mcpmux.AsyncHub.connect(config(demo=demo())))
    errors = []

    def run(i: int) -> None:
        async def many():
            results = await asyncio.gather(*(hub.call_tool("mcp_demo_echo", {"text": f"{i}-{j}"}) for j in range(50)))
            assert [r["content"][0]["text"] for r in results] == [f"{i}-{j}" for j in range(50)]

        try:
            asyncio.run(many())
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    asyncio.run(hub.close())
    assert not errors


async def test_errors_raise_from_await():
    async with mcpmux.AsyncHub.connect(config(demo=demo())) as hub:
        with pytest.raises(mcpmux.UnknownTool):
            await hub.call_tool("mcp_demo_nope")
        with pytest.raises(mcpmux.Timeout):
            await hub.call_tool("mcp_demo_slow", {"seconds": 5, "steps": 0}, timeout=0.2)
        with pytest.raises(mcpmux.ServerError) as info:
            await hub.read_resource("demo://missing", "demo")
        assert info.value.rpc_code == -32002
        with pytest.raises(mcpmux.InvalidInput):
            await hub.call_tool("mcp_demo_echo", ["not", "a", "dict"])
        with pytest.raises(mcpmux.ConfigInvalid):
            await mcpmux.AsyncHub.connect({"nothing": 1})
