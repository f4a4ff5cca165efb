"""Cancellation: cancelling the awaiting task (or Ctrl-C on a blocking call)
cancels the request on the server."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import mcpmux
from conftest import (
    PYTHON,
    config,
    demo,
    fault,
    marked,
    marked_pids,
    read_lines,
    threads_named,
    wait_until,
)


async def test_cancelling_the_task_sends_notifications_cancelled(cancel_log):
    entry = fault("hang.py", env={"HANG_CANCEL_LOG": str(cancel_log)})
    async with mcpmux.AsyncHub.connect(config(hang=entry)) as hub:
        task = asyncio.ensure_future(hub.call_tool("mcp_hang_wait_forever", timeout=60))
        await asyncio.sleep(0.3)
        assert not task.done()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await asyncio.to_thread(wait_until, lambda: len(read_lines(cancel_log)) == 1, 5)
        # a cancelled call leaves the hub usable; the next one is cancelled too
        task = asyncio.ensure_future(hub.call_tool("mcp_hang_wait_forever"))
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await asyncio.to_thread(wait_until, lambda: len(read_lines(cancel_log)) == 2, 5)
        ids = read_lines(cancel_log)
        assert ids[0] != ids[1]


async def test_wait_for_timeout_cancels_the_request(cancel_log):
    entry = fault("hang.py", env={"HANG_CANCEL_LOG": str(cancel_log)})
    async with mcpmux.AsyncHub.connect(config(hang=entry)) as hub:
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(hub.call_tool("mcp_hang_wait_forever"), 0.3)
        assert await asyncio.to_thread(wait_until, lambda: len(read_lines(cancel_log)) == 1, 5)


async def test_cancelled_slow_call_stops_in_the_demo_server(marker):
    async with mcpmux.AsyncHub.connect(config(demo=marked(demo(), marker))) as hub:
        [pid] = marked_pids(marker)
        tasks = [
            asyncio.ensure_future(hub.call_tool("mcp_demo_slow", {"seconds": 30, "steps": 30}))
            for _ in range(3)
        ]
        ok = await asyncio.to_thread(wait_until, lambda: threads_named(pid, "slow") == 3, 5)
        assert ok, "the slow calls never started"
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        # The server's slow threads end when it gets notifications/cancelled.
        assert await asyncio.to_thread(wait_until, lambda: threads_named(pid, "slow") == 0, 5)
        assert (await hub.call_tool("mcp_demo_echo", {"text": "still here"}))["content"][0]["text"] == "still here"


async def test_cancelling_one_of_many_leaves_the_others(marker):
    async with mcpmux.AsyncHub.connect(config(demo=demo())) as hub:
        slow = asyncio.ensure_future(hub.call_tool("mcp_demo_slow", {"seconds": 30, "steps": 0}))
        others = [asyncio.ensure_future(hub.call_tool("mcp_demo_slow", {"seconds": 0.3, "steps": 0})) for _ in range(5)]
        await asyncio.sleep(0.1)
        slow.cancel()
        results = await asyncio.gather(*others)
        assert all(r["content"][0]["text"].startswith("done") for r in results)
        assert slow.cancelled()


async def test_cancel_during_connect_kills_the_server(marker):
    slow = marked(fault("slow_init.py", env={"INIT_DELAY_MS": "3000"}), marker)
    task = asyncio.ensure_future(mcpmux.AsyncHub.connect(config(s=slow)))
    ok = await asyncio.to_thread(wait_until, lambda: len(marked_pids(marker)) == 1, 5)
    assert ok
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(wait_until, lambda: marked_pids(marker) == [], 5)


# The script of the Ctrl-C tests: connects, then makes a blocking call while
# SIGINT is sent to the process `offset` seconds after the call begins
# (from a thread, so it can land before, as and after the call starts) or,
# with `nested`, from inside a progress callback that makes a blocking call
# of its own. `try` covers the whole window, so a signal that Python handles
# before the call is caught too: only a lost signal leaves it waiting.
CTRL_C_SCRIPT = textwrap.dedent(
    """
    import os, signal, sys, threading, time, mcpmux
    hub = mcpmux.Hub.connect(CONFIG)
    mode, offset = sys.argv[1], float(sys.argv[2])

    def interrupt():
        # Busy-wait: time.sleep cannot time sub-millisecond offsets.
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < offset:
            pass
        os.kill(os.getpid(), signal.SIGINT)

    def nested(progress, total, message):
        if not hasattr(nested, "once"):
            nested.once = True
            threading.Thread(target=interrupt).start()
            hub.call_tool("mcp_hang_wait_forever", timeout=60)

    start = time.monotonic()
    try:
        if mode == "nested":
            hub.call_tool("mcp_demo_slow", {"seconds": 60, "steps": 60}, on_progress=nested, timeout=60)
        else:
            threading.Thread(target=interrupt).start()
            hub.call_tool("mcp_hang_wait_forever", timeout=60)
    except KeyboardInterrupt:
        print("interrupted after %.1f s" % (time.monotonic() - start), flush=True)
        hub.close()
        sys.exit(0)
    sys.exit(1)
    """
)


def ctrl_c(cancel_log, mode: str, offset: float) -> str:
    """Runs CTRL_C_SCRIPT; the call must be interrupted, not time out (60 s)."""
    cfg = config(hang=fault("hang.py", env={"HANG_CANCEL_LOG": str(cancel_log)}), demo=demo())
    script = CTRL_C_SCRIPT.replace("CONFIG", repr(cfg))
    proc = subprocess.Popen([PYTHON, "-c", script, mode, str(offset)], stdout=subprocess.PIPE, text=True)
    try:
        # Generous: only a lost signal (a wait for the 60 s timeout) exceeds it.
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0 and "interrupted after" in out, (mode, offset, proc.returncode, out)
    return out


@pytest.mark.parametrize("offset", [0.0, 0.00005, 0.0002, 0.001, 0.005, 0.05, 0.3])
def test_ctrl_c_interrupts_a_blocking_call(cancel_log, offset):
    ctrl_c(cancel_log, "thread", offset)
    # At most one request reached the server (none when the signal came
    # first), and one that did was cancelled there.
    assert len(read_lines(cancel_log)) <= 1


def test_ctrl_c_interrupts_a_blocking_call_made_from_a_progress_callback(cancel_log):
    # The inner call waits inside the outer call's wait, on a thread that is
    # already in the engine's runtime; its signal checks must still run on
    # the calling (main) thread, the only one Python handles signals on.
    ctrl_c(cancel_log, "nested", 0.3)
    assert wait_until(lambda: len(read_lines(cancel_log)) == 1, 10)
