#!/usr/bin/env python3
"""Calls per second from Python: mcpmux against the official MCP Python SDK and the raw pipe floors.

A benchmark, not a test: it prints figures and ratios and exits 0 whatever
they are (non-zero only when something fails). Every client calls the tool
``echo`` of the same stdio server, the release build of the bundled demo
server (``target/release/mcpmux-demo-server``, built when missing, or
``$MCPMUX_DEMO_SERVER``), in the same run:

* **floors**: ``mcpmux-bench-floor`` (benches/echo-server; built when
  missing, or ``$MCPMUX_BENCH_FLOOR``), a raw client with no MCP library
  that writes one request line and reads one response line per call, either
  blocking in ``read`` (*blocking floor*) or busy-polling the pipe
  (*spinning floor*);
* **SDK**: the official ``mcp`` — ``ClientSession`` over ``stdio_client``;
* **mcpmux**: ``mcpmux.Hub.call_tool`` (blocking) and
  ``mcpmux.AsyncHub.call_tool`` (asyncio).

Every connection stays open for the whole run, and the sides interleave:
``--rounds`` rounds (10, quick 3), each running every side for a block of
about ``--seconds`` (1 s, quick 0.25 s) in rotating order, so that a
machine whose speed moves affects them alike. Each row is the median of the
per-round ratios and their range (min-max):

* ``Hub`` sequential latency vs the blocking floor (target <= 1.0x; the
  overhead above it in µs) and vs the spinning floor;
* ``AsyncHub`` sequential calls/s vs the SDK, and with 16 asyncio tasks in
  flight on one connection vs the SDK (information).

Run it with the package installed in release mode (``pip install
./bindings/python``; a debug build is flagged in the output)::

    .deps/venv/bin/python bindings/python/bench/bench_calls.py [--quick] [--rounds N] [--seconds S]

``$MCPMUX_BENCH_ROWS`` appends the rows to that file in the tab-separated
format of ``benches/run.sh`` (``core/benches/stdio/report.rs`` documents
it); ``$MCPMUX_BENCH_LABEL`` names the server there.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Awaitable, Callable, Dict, List, Tuple

ROOT = Path(__file__).resolve().parents[3]
IN_FLIGHT = 16
ARGS = {"text": "hello from the mcpmux benchmark"}


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


# ---------------------------------------------------------------- blocks
#
# Each block runs one side for about ``seconds`` and returns its calls/s.


def block_sync(call: Callable[[], object], seconds: float) -> float:
    n, start = 0, time.perf_counter()
    while True:
        for _ in range(16):
            call()
        n += 16
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return n / elapsed


async def block_async(call: Callable[[], Awaitable[object]], seconds: float, tasks: int) -> float:
    count = 0
    start = time.perf_counter()
    deadline = start + seconds

    async def worker() -> None:
        nonlocal count
        while time.perf_counter() < deadline:
            for _ in range(8):
                await call()
            count += 8

    await asyncio.gather(*(worker() for _ in range(tasks)))
    return count / (time.perf_counter() - start)


class Floor:
    """The raw floors, driven over ``mcpmux-bench-floor``'s stdin."""

    def __init__(self, server: str) -> None:
        self.proc = subprocess.Popen(
            [floor_binary(), server], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )

    def run(self, mode: str, seconds: float) -> float:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(f"{mode} {seconds}\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"mcpmux-bench-floor exited ({self.proc.wait()})")
        calls, ns = line.split()
        return int(calls) / (int(ns) / 1e9)

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.close()
        if self.proc.wait() != 0:
            raise RuntimeError(f"mcpmux-bench-floor exited with {self.proc.returncode}")


def floor_binary() -> str:
    env = os.environ.get("MCPMUX_BENCH_FLOOR")
    if env:
        return env
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    exe = target / "release" / "mcpmux-bench-floor"
    if not exe.exists():
        print(f"building {exe} ...", file=sys.stderr)
        subprocess.run(
            ["cargo", "build", "--release", "--manifest-path", str(ROOT / "benches/echo-server/Cargo.toml")],
            cwd=ROOT,
            check=True,
            env={**os.environ, "CARGO_TARGET_DIR": str(target)},
        )
    return str(exe)


def spread(values: List[float]) -> Tuple[float, float, float]:
    return statistics.median(values), min(values), max(values)


# ---------------------------------------------------------------- the run


async def measure(server: str, rounds: int, seconds: float) -> Dict[str, List[float]]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    import mcpmux

    config = {"mcpServers": {"demo": {"command": server}}}
    params = StdioServerParameters(command=server, args=[])
    floor = Floor(server)
    rates: Dict[str, List[float]] = {}
    with open(os.devnull, "w") as devnull, mcpmux.Hub.connect(config) as hub:
        async with stdio_client(params, errlog=devnull) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            async with mcpmux.AsyncHub.connect(config) as ahub:
                sdk_result = await session.call_tool("echo", ARGS)
                assert sdk_result.content[0].text == ARGS["text"], sdk_result
                result = hub.call_tool("mcp_demo_echo", ARGS)
                assert result["content"][0]["text"] == ARGS["text"], result
                sync_call, async_call = hub.call_tool, ahub.call_tool

                def hub_call() -> object:
                    return sync_call("mcp_demo_echo", ARGS)

                def ahub_call() -> Awaitable[object]:
                    return async_call("mcp_demo_echo", ARGS)

                def sdk_call() -> Awaitable[object]:
                    return session.call_tool("echo", ARGS)

                async def side(name: str, s: float) -> float:
                    if name == "floor":
                        return floor.run("blocking", s)
                    if name == "spin":
                        return floor.run("spin", s)
                    if name == "sync.sequential":
                        return block_sync(hub_call, s)
                    call = ahub_call if name.startswith("async.") else sdk_call
                    return await block_async(call, s, IN_FLIGHT if name.endswith("in_flight") else 1)

                groups = [
                    ["floor", "spin", "sync.sequential", "async.sequential", "sdk.sequential"],
                    ["async.in_flight", "sdk.in_flight"],
                ]
                for group in groups:  # warm-up
                    for name in group:
                        await side(name, seconds / 4)
                for r in range(rounds):
                    for group in groups:
                        for i in range(len(group)):
                            name = group[(r + i) % len(group)]
                            rates.setdefault(name, []).append(await side(name, seconds))
                    print(
                        f"round {r + 1}: " + "  ".join(f"{k} {v[-1]:,.0f}" for k, v in rates.items()) + " calls/s",
                        flush=True,
                    )
    floor.close()
    return rates


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    quick_env = os.environ.get("MCPMUX_BENCH_QUICK") == "1"
    ap.add_argument("--quick", action="store_true", default=quick_env, help="a short smoke run")
    ap.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 10, quick 3)")
    ap.add_argument("--seconds", type=float, default=None, help="seconds per block (default 1, quick 0.25)")
    opts = ap.parse_args()
    rounds = opts.rounds or int(os.environ.get("MCPMUX_BENCH_ROUNDS") or 0) or (3 if opts.quick else 10)
    seconds = opts.seconds or (0.25 if opts.quick else 1.0)

    import mcpmux
    from importlib.metadata import version

    server = demo_server()
    build = getattr(mcpmux._native, "BUILD_PROFILE", "?")
    print(f"mcpmux {mcpmux.__version__} (native module: {build} build) vs mcp {version('mcp')} (official SDK)")
    print(f"server: {server} (tool echo); python {sys.version.split()[0]}; {os.cpu_count()} CPUs")
    if build != "release":
        print("note: the native module is not a release build; install with `pip install ./bindings/python` for real figures")
    print(f"{rounds} interleaved round(s) of ~{seconds:.2f} s per side, {IN_FLIGHT} in flight\n")

    rates = asyncio.run(measure(server, rounds, seconds))

    def us(name: str) -> List[float]:
        return [1e6 / r for r in rates[name]]

    rows = []

    def row(figure: str, ours: List[float], ref: List[float], kind: str, target: str, latency: bool) -> None:
        ratios = [a / b for a, b in zip(ours, ref)]
        m, lo, hi = spread(ratios)
        overhead = statistics.median(a - b for a, b in zip(ours, ref)) if latency else None
        if target == "-":
            held = "info"
        else:
            x = float(target[2:])
            held = "PASS" if (m <= x if target.startswith("<=") else m >= x) else "MISS"
        rows.append((figure, statistics.median(ours), statistics.median(ref), kind, m, lo, hi, target, overhead, held))

    row("Python Hub (blocking): sequential latency, mean (µs)", us("sync.sequential"), us("floor"), "blocking floor", "<=1", True)
    row("Python Hub (blocking): sequential latency, mean (µs)", us("sync.sequential"), us("spin"), "spinning floor", "-", True)
    row("Python AsyncHub: sequential latency, mean (µs)", us("async.sequential"), us("floor"), "blocking floor", "-", True)
    row("Python AsyncHub: calls/s, sequential", rates["async.sequential"], rates["sdk.sequential"], "Python SDK", "-", False)
    row(f"Python AsyncHub: calls/s, {IN_FLIGHT} in flight", rates["async.in_flight"], rates["sdk.in_flight"], "Python SDK", "-", False)

    print()
    print(f"{'figure':<54}{'mcpmux':>11}{'reference':>11}  {'(reference is)':<16}{'median':>8}{'range':>15}{'+µs':>8}  target  result")
    for figure, ours, ref, kind, m, lo, hi, target, overhead, held in rows:
        o = "-" if overhead is None else f"{overhead:.2f}"
        print(f"{figure:<54}{ours:>11,.2f}{ref:>11,.2f}  {kind:<16}{m:>7.2f}x{f'{lo:.2f}-{hi:.2f}x':>15}{o:>8}  {target:<6}  {held}")
    if build != "release":
        print("(not a release build: the figures mean little)")
    path = os.environ.get("MCPMUX_BENCH_ROWS")
    if path:
        label = os.environ.get("MCPMUX_BENCH_LABEL") or Path(server).name
        with open(path, "a") as out:
            for figure, ours, ref, kind, m, lo, hi, target, overhead, _ in rows:
                o = "-" if overhead is None else f"{overhead:.3f}"
                out.write(f"{figure}\t{label}\t{ours:.3f}\t{ref:.3f}\t{kind}\t{m:.4f}\t{lo:.4f}\t{hi:.4f}\tx\t{target}\t{o}\t{rounds}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
