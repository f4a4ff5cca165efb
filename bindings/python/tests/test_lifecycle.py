"""Lifecycle: crashes mid-call, close, use after close, garbage collection,
interpreter exit with hubs still open, fork."""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
import textwrap
import time
import warnings

import pytest

import mcpmux
from conftest import PYTHON, config, demo, everything, fault, marked, marked_pids, wait_until


def test_crash_mid_call_fails_that_call_and_spares_the_others(marker):
    cfg = config(crash=fault("crash_mid_call.py", restart="never"), demo=demo())
    with mcpmux.Hub.connect(cfg) as hub:
        # The server never answers: TransportClosed (not the Timeout that
        # waiting out the 30 s gives) shows the call ended with the process.
        with pytest.raises(mcpmux.TransportClosed) as info:
            hub.call_tool("mcp_crash_work", timeout=30)
        assert "simulated crash" in info.value.message  # the server's stderr
        assert hub.call_tool("mcp_demo_echo", {"text": "ok"})["content"][0]["text"] == "ok"
        status = {s["name"]: s for s in hub.servers()}
        assert status["crash"]["state"] == "failed"


async def test_crash_mid_call_fails_every_call_in_flight():
    async with mcpmux.AsyncHub.connect(config(demo=demo())) as hub:
        slow = [asyncio.ensure_future(hub.call_tool("mcp_demo_slow", {"seconds": 30, "steps": 0})) for _ in range(10)]
        await asyncio.sleep(0.1)
        with pytest.raises(mcpmux.TransportClosed):
            await hub.call_tool("mcp_demo_crash")
        results = await asyncio.wait_for(asyncio.gather(*slow, return_exceptions=True), 5)
        assert all(isinstance(r, mcpmux.TransportClosed) for r in results), results


def test_use_after_close_raises_a_clear_error():
    hub = mcpmux.Hub.connect(config(demo=demo()))
    hub.close()
    assert hub.closed
    hub.close()  # idempotent
    calls = [
        lambda: hub.call_tool("mcp_demo_echo", {"text": "x"}),
        hub.servers,
        hub.list_tools,
        lambda: hub.tools_for("mcp"),
        hub.list_resources,
        hub.list_resource_templates,
        lambda: hub.read_resource("demo://readme"),
        hub.list_prompts,
        lambda: hub.get_prompt("greet", {"name": "x"}),
        lambda: hub.refresh("demo"),
    ]
    for call in calls:
        with pytest.raises(mcpmux.TransportClosed, match="the hub is closed"):
            call()
    assert repr(hub) == "<mcpmux.Hub closed>"


async def test_async_use_after_close_and_close_with_calls_in_flight():
    hub = await mcpmux.AsyncHub.connect(config(demo=demo()))
    slow = asyncio.ensure_future(hub.call_tool("mcp_demo_slow", {"seconds": 30, "steps": 0}))
    await asyncio.sleep(0.1)
    await hub.close()
    with pytest.raises(mcpmux.TransportClosed):
        await asyncio.wait_for(slow, 5)
    for coro in (hub.call_tool("mcp_demo_echo"), hub.list_tools(), hub.servers(), hub.list_prompts()):
        with pytest.raises(mcpmux.TransportClosed, match="the hub is closed"):
            await coro
    await hub.close()


def test_close_stops_the_servers(marker):
    hub = mcpmux.Hub.connect(config(demo=marked(demo(), marker), everything=marked(everything(), marker)))
    assert len(marked_pids(marker)) == 2
    hub.close()
    assert marked_pids(marker) == []


def test_close_kills_a_server_that_ignores_sigterm(marker, tmp_path):
    child = tmp_path / "child.pid"
    events = tmp_path / "events.log"
    env = {"CHILD_PID_FILE": str(child), "EVENT_LOG": str(events)}
    entry = marked(fault("ignore_sigterm.py", env=env), marker)
    hub = mcpmux.Hub.connect(config(stubborn=entry))
    assert wait_until(child.exists, 5)
    assert len(marked_pids(marker)) == 2  # the server and its `sleep` child
    # The server outlives stdin EOF and SIGTERM: close() returns (the
    # pytest-timeout guard catches a hang) only by going on to SIGKILL.
    hub.close()
    assert wait_until(lambda: marked_pids(marker) == [], 5)
    # stdin closed, then SIGTERM (ignored), then SIGKILL: the server saw the
    # first two steps in that order, and only the last one ended it.
    assert events.read_text().splitlines() == ["stdin eof", "SIGTERM"]


def test_garbage_collected_hub_closes_its_servers(marker):
    hub = mcpmux.Hub.connect(config(demo=marked(demo(), marker)))
    assert len(marked_pids(marker)) == 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del hub
        gc.collect()
    assert any(issubclass(w.category, ResourceWarning) for w in caught)
    del caught  # the warning holds the hub (its source)
    gc.collect()
    assert wait_until(lambda: marked_pids(marker) == [], 10)


EXIT_SCRIPT = """
import asyncio, os, sys, threading, mcpmux
cfg = {cfg!r}
hub = mcpmux.Hub.connect(cfg)
assert hub.call_tool("mcp_demo_echo", {{"text": "x"}})["content"][0]["text"] == "x"
async def open_async():
    h = await mcpmux.AsyncHub.connect(cfg)
    # leave a call in flight, too
    asyncio.ensure_future(h.call_tool("mcp_demo_slow", {{"seconds": 60, "steps": 0}}))
    await asyncio.sleep(0.1)
    return h
ahub = asyncio.run(open_async())
# a daemon thread blocked in a call
threading.Thread(target=lambda: hub.call_tool("mcp_demo_slow", {{"seconds": 60, "steps": 0}}), daemon=True).start()
print("ready", flush=True)
{ending}
"""


@pytest.mark.parametrize(
    "ending, grandchildren_die",
    [
        ("", True),  # falls off the end: atexit closes the hubs
        ("sys.exit(3)", True),
        ("raise SystemExit('bye')", True),
        ("os._exit(0)", False),  # no atexit: the kernel kills direct children
    ],
)
def test_interpreter_exit_with_open_hubs_leaves_no_process(marker, tmp_path, ending, grandchildren_die):
    child_pid = tmp_path / "child.pid"
    cfg = config(
        demo=marked(demo(), marker),
        everything=marked(everything(), marker),
        stubborn=marked(fault("ignore_sigterm.py", env={"CHILD_PID_FILE": str(child_pid)}), marker),
    )
    script = EXIT_SCRIPT.format(cfg=cfg, ending=ending)
    proc = subprocess.Popen([PYTHON, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("the interpreter hung at exit")
    assert "ready" in out, err
    # two hubs: demo, node, python (+ its sleep child) each
    remaining = lambda: marked_pids(marker)  # noqa: E731
    if grandchildren_die:
        assert wait_until(lambda: remaining() == [], 10), remaining()
    else:
        # Only the `sleep` grandchildren of ignore_sigterm.py (one per hub) may
        # survive: the kernel kills direct children only.
        def is_sleep(pid: int) -> bool:
            try:
                return open(f"/proc/{pid}/cmdline").read().split("\0")[0] == "sleep"
            except OSError:
                return True

        assert wait_until(lambda: all(is_sleep(p) for p in remaining()), 10), remaining()
        for pid in remaining():
            os.kill(pid, 9)


def test_host_killed_by_sigkill_takes_its_servers_along(marker):
    script = textwrap.dedent(
        f"""
        import threading, time, mcpmux
        hubs = []
        def connect():
            hubs.append(mcpmux.Hub.connect({config(demo=marked(demo(), marker))!r}))
        t = threading.Thread(target=connect); t.start(); t.join()
        print("ready", flush=True)
        time.sleep(60)
        """
    )
    proc = subprocess.Popen([PYTHON, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        assert len(marked_pids(marker)) == 1
        proc.kill()
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert wait_until(lambda: marked_pids(marker) == [], 10)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_fork_child_cannot_use_or_kill_the_parents_servers(marker):
    hub = mcpmux.Hub.connect(config(demo=marked(demo(), marker)))
    try:
        pid = os.fork()
        if pid == 0:  # child
            code = 0
            try:
                hub.call_tool("mcp_demo_echo", {"text": "from the child"})
                code = 1
            except mcpmux.TransportClosed as e:
                code = 0 if "fork" in e.message else 2
            except BaseException:
                code = 3
            try:
                # the child's own hub works
                with mcpmux.Hub.connect(config(demo=demo())) as mine:
                    if mine.call_tool("mcp_demo_echo", {"text": "c"})["content"][0]["text"] != "c":
                        code = 4
                # dropping the parent's hub here must not close the parent's servers
                del hub
                gc.collect()
                time.sleep(0.2)
            except BaseException:
                code = 5
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.WEXITSTATUS(status) == 0, status
        assert hub.call_tool("mcp_demo_echo", {"text": "parent"})["content"][0]["text"] == "parent"
        assert len(marked_pids(marker)) == 1
    finally:
        hub.close()
