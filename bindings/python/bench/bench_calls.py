#!/usr/bin/env python3
"""Calls per second from Python: mcpmux against the official MCP Python SDK.

A benchmark, not a test: it prints figures and ratios and exits 0 whatever
they are (non-zero only when something fails). Both clients call the tool
``echo`` of the same minimal stdio server, the release build of the bundled
demo server (``target/release/mcpmux-demo-server``, built when missing, or
``$MCPMUX_DEMO_SERVER``), in the same run:

* **reference**: the official SDK ``mcp`` — ``ClientSession`` over
  ``stdio_client``, one session, ``await session.call_tool("echo", ...)``;
* **mcpmux**: ``mcpmux.Hub.call_tool`` (blocking) and
  ``mcpmux.AsyncHub.call_tool`` (asyncio) on one hub.

Two shapes: *sequential* (one call at a time) and *16 in flight* (16 asyncio
tasks calling in a loop on one connection; for the blocking API, 16
threads). Reference and mcpmux alternate over a few rounds so that both see
the same machine; the best round of each is reported. Target: mcpmux ≥ 5×
the SDK in both shapes.

Run it with the package installed in release mode (``pip install
./bindings/python``; a debug build is flagged in the output)::

    .deps/venv/bin/python bindings/python/bench/bench_calls.py [--quick] [--rounds N] [--seconds S] [--figures FILE]

``--figures FILE`` (or ``$MCPMUX_BENCH_FIGURES``) also writes the best
calls/s of each client and shape to FILE, one ``<client>.<shape> <calls/s>``
line each (``sdk``, ``sync``, ``async``; ``sequential``, ``in_flight``),
plus ``build <profile>``, for ``benches/run.sh``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Awaitable, Callable, Dict, List, Tuple

ROOT = Path(__file__).resolve().parents[3]
TARGET = 5.0
IN_FLIGHT = 16
ARGS = {"text": "hello from the benchmark"}


def demo_server() -> str:
    env = os.environ.get("MCPMUX_DEMO_SERVER")
    if env:
        return env
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    exe = target / "release" / "mcpmux-demo-server"
    if not exe.exists():
        print(f"building {exe} ...", file=sys.stderr)
        subprocess.run(
            ["cargo", "build", "--release", "-p", "mcpmux-demo-server"],
            cwd=ROOT,
            check=True,
            env={**os.environ, "CARGO_TARGET_DIR": str(target)},
        )
    return str(exe)


# ---------------------------------------------------------------- timing helpers
#
# Each helper returns (calls per second, client CPU microseconds per call):
# the CPU time (user + system, all threads) this process spent, which is
# steadier than wall time on a busy machine. The server's CPU is not in it.

Figure = Tuple[float, float]


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def time_sync(call: Callable[[], object], seconds: float) -> Figure:
    """``call`` run back to back for about ``seconds``."""
    for _ in range(200):
        call()
    n, start, cpu = 0, time.perf_counter(), cpu_seconds()
    while True:
        for _ in range(250):
            call()
        n += 250
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return n / elapsed, (cpu_seconds() - cpu) / n * 1e6


def time_threads(call: Callable[[], object], seconds: float, threads: int) -> Figure:
    """``call`` run by ``threads`` threads for about ``seconds``."""
    counts = [0] * threads
    stop = threading.Event()

    def worker(i: int) -> None:
        while not stop.is_set():
            for _ in range(50):
                call()
            counts[i] += 50

    pool = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    time.sleep(0.2)  # warm up
    base, start, cpu = sum(counts), time.perf_counter(), cpu_seconds()
    time.sleep(seconds)
    done, elapsed, cpu = sum(counts) - base, time.perf_counter() - start, cpu_seconds() - cpu
    stop.set()
    for t in pool:
        t.join()
    return done / elapsed, cpu / max(done, 1) * 1e6


async def time_async(call: Callable[[], Awaitable[object]], seconds: float, tasks: int) -> Figure:
    """``call`` awaited by ``tasks`` tasks in a loop for about ``seconds``."""
    for _ in range(200):
        await call()
    count = 0
    cpu = cpu_seconds()
    deadline = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal count
        while time.perf_counter() < deadline:
            for _ in range(25):
                await call()
            count += 25

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(tasks)))
    return count / (time.perf_counter() - start), (cpu_seconds() - cpu) / count * 1e6


# ---------------------------------------------------------------- the two clients


async def sdk_round(server: str, seconds: float) -> Dict[str, Figure]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=server, args=[])
    with open(os.devnull, "w") as devnull:
        async with stdio_client(params, errlog=devnull) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                result = await session.call_tool("echo", ARGS)
                assert result.content[0].text == ARGS["text"], result

                async def call() -> object:
                    return await session.call_tool("echo", ARGS)

                seq = await time_async(call, seconds, 1)
                par = await time_async(call, seconds, IN_FLIGHT)
    return {"sequential": seq, "in_flight": par}


def mcpmux_config(server: str) -> dict:
    return {"mcpServers": {"demo": {"command": server}}}


def mcpmux_sync_round(server: str, seconds: float) -> Dict[str, Figure]:
    import mcpmux

    with mcpmux.Hub.connect(mcpmux_config(server)) as hub:
        result = hub.call_tool("mcp_demo_echo", ARGS)
        assert result["content"][0]["text"] == ARGS["text"], result
        call_tool = hub.call_tool

        def call() -> object:
            return call_tool("mcp_demo_echo", ARGS)

        seq = time_sync(call, seconds)
        par = time_threads(call, seconds, IN_FLIGHT)
    return {"sequential": seq, "in_flight": par}


async def mcpmux_async_round(server: str, seconds: float) -> Dict[str, Figure]:
    import mcpmux

    async with mcpmux.AsyncHub.connect(mcpmux_config(server)) as hub:
        result = await hub.call_tool("mcp_demo_echo", ARGS)
        assert result["content"][0]["text"] == ARGS["text"], result
        call_tool = hub.call_tool

        def call() -> Awaitable[object]:
            return call_tool("mcp_demo_echo", ARGS)

        seq = await time_async(call, seconds, 1)
        par = await time_async(call, seconds, IN_FLIGHT)
    return {"sequential": seq, "in_flight": par}


# ---------------------------------------------------------------- main


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    quick_env = os.environ.get("MCPMUX_BENCH_QUICK") == "1"
    ap.add_argument("--quick", action="store_true", default=quick_env, help="a short smoke run")
    ap.add_argument("--rounds", type=int, default=None, help="alternating rounds (default 3, quick 1)")
    ap.add_argument("--seconds", type=float, default=None, help="seconds per figure (default 1.5)")
    ap.add_argument(
        "--figures",
        default=os.environ.get("MCPMUX_BENCH_FIGURES") or None,
        help="also write the best calls/s of each client and shape to this file",
    )
    opts = ap.parse_args()
    rounds = opts.rounds or (1 if opts.quick else 3)
    seconds = opts.seconds or (0.3 if opts.quick else 1.5)

    import mcp
    import mcpmux
    from importlib.metadata import version

    server = demo_server()
    build = getattr(mcpmux._native, "BUILD_PROFILE", "?")
    print(f"mcpmux {mcpmux.__version__} (native module: {build} build) vs mcp {version('mcp')} (official SDK)")
    print(f"server: {server} (tool echo); python {sys.version.split()[0]}; {os.cpu_count()} CPUs")
    if build != "release":
        print("note: the native module is not a release build; install with `pip install ./bindings/python` for real figures")
    print(f"{rounds} round(s), {seconds:.1f} s per figure, {IN_FLIGHT} in flight\n")

    results: Dict[str, List[Dict[str, Figure]]] = {"sdk": [], "sync": [], "async": []}

    def short(kind: str) -> str:
        r = results[kind][-1]
        return f"{r['sequential'][0]:,.0f}/{r['in_flight'][0]:,.0f}"

    for r in range(rounds):
        results["sdk"].append(asyncio.run(sdk_round(server, seconds)))
        results["async"].append(asyncio.run(mcpmux_async_round(server, seconds)))
        results["sync"].append(mcpmux_sync_round(server, seconds))
        print(
            f"round {r + 1}: sdk {short('sdk')}  mcpmux async {short('async')}  "
            f"sync {short('sync')}  calls/s (sequential/{IN_FLIGHT} in flight)",
            flush=True,
        )

    def best(kind: str, shape: str) -> float:
        return max(r[shape][0] for r in results[kind])

    def median(kind: str, shape: str) -> float:
        return statistics.median(r[shape][0] for r in results[kind])

    def cpu(kind: str, shape: str) -> float:
        return statistics.median(r[shape][1] for r in results[kind])

    if opts.figures:
        with open(opts.figures, "w") as out:
            out.write(f"build {build}\n")
            for kind in ("sdk", "sync", "async"):
                for shape in ("sequential", "in_flight"):
                    out.write(f"{kind}.{shape} {best(kind, shape):.1f}\n")

    meaningful = build == "release"
    print()
    print(
        f"{'shape':<14}{'client':<36}{'calls/s best':>13}{'median':>9}{'vs SDK':>8}"
        f"{'CPU us/call':>12}{'vs SDK':>8}  target (best, >= {TARGET:.0f}x)"
    )
    met = True
    for shape, label in (("sequential", "sequential"), ("in_flight", f"{IN_FLIGHT} in flight")):
        ref, ref_cpu = best("sdk", shape), cpu("sdk", shape)
        print(
            f"{label:<14}{'official SDK (ClientSession, stdio)':<36}{ref:>13,.0f}{median('sdk', shape):>9,.0f}"
            f"{'1.00x':>8}{ref_cpu:>12,.1f}{'1.00x':>8}"
        )
        rows = (
            ("async", "mcpmux AsyncHub (asyncio)"),
            ("sync", "mcpmux Hub (blocking" + (")" if shape == "sequential" else f", {IN_FLIGHT} threads)")),
        )
        for kind, name in rows:
            value, c = best(kind, shape), cpu(kind, shape)
            ratio = value / ref
            verdict = ("PASS" if ratio >= TARGET else "MISS") if meaningful else "n/a (not a release build)"
            if kind == "async" and ratio < TARGET:
                met = False
            print(
                f"{'':<14}{name:<36}{value:>13,.0f}{median(kind, shape):>9,.0f}{ratio:>7.2f}x"
                f"{c:>12,.1f}{ref_cpu / c:>7.2f}x  {verdict}"
            )
    print()
    print("CPU us/call: this process's CPU time (all threads) per call; 'vs SDK' there is SDK CPU / mcpmux CPU.")
    if meaningful:
        print(f"asyncio target (the SDK's own shape, >= {TARGET:.0f}x in both):", "met" if met else "missed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
