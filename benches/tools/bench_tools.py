#!/usr/bin/env python3
"""`mcpmux tools` over nine public MCP servers against the official Python SDK listing them concurrently.

A benchmark, not a test: it prints figures and ratios and exits 0 whatever
they are (non-zero only when something fails). The servers are the public
ones from npm and PyPI that ``benches/tools/setup.sh`` installs: filesystem,
memory, sequential-thinking, everything (npm), time, git, fetch, sqlite and
calculator (PyPI). Each side starts all nine, lists every tool and stops
them:

* **mcpmux**: the command ``mcpmux tools --json --config <file>``, timed from
  its start to its exit (process start and shutdown included);
* **SDK**: the official ``mcp`` package in this process: nine
  ``stdio_client`` + ``ClientSession`` (initialize, ``list_tools``, every
  page) run concurrently with ``asyncio.gather``, timed around the gather
  (the interpreter and its imports are not counted).

The sides interleave: ``--rounds`` rounds (10, quick 3), each running both
sides once in alternating order, so that a machine whose speed moves affects
them alike. The row is the median of the per-round ratios mcpmux / SDK and
their range (target <= 1.0). Both sides must list the same tool names.

    .deps/venv/bin/python benches/tools/bench_tools.py --mcpmux target/release/mcpmux [--quick] [--rounds N]

``$MCPMUX_BENCH_ROWS`` appends the row to that file in the tab-separated
format of ``benches/run.sh`` (``core/benches/stdio/report.rs`` documents it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Set

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
NODE_MODULES = HERE / "node_modules" / "@modelcontextprotocol"
VENV = ROOT / ".deps" / "bench-tools-venv" / "bin"
MCP1_VENV = ROOT / ".deps" / "bench-tools-mcp1-venv" / "bin"


def servers(work: Path) -> Dict[str, dict]:
    """The nine servers as `mcpServers` entries, their state under `work`."""
    files = work / "files"
    files.mkdir()
    (files / "hello.txt").write_text("hello\n")
    repo = work / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    node = "node"

    def npm(name: str, *args: str) -> dict:
        return {"command": node, "args": [str(NODE_MODULES / name / "dist" / "index.js"), *args]}

    entries = {
        "filesystem": npm("server-filesystem", str(files)),
        "memory": {**npm("server-memory"), "env": {"MEMORY_FILE_PATH": str(work / "memory.jsonl")}},
        "sequential-thinking": npm("server-sequential-thinking"),
        "everything": npm("server-everything", "stdio"),
        "time": {"command": str(VENV / "mcp-server-time")},
        "git": {"command": str(VENV / "mcp-server-git"), "args": ["--repository", str(repo)]},
        "fetch": {"command": str(VENV / "mcp-server-fetch")},
        "sqlite": {"command": str(MCP1_VENV / "mcp-server-sqlite"), "args": ["--db-path", str(work / "bench.db")]},
        "calculator": {"command": str(MCP1_VENV / "mcp-server-calculator")},
    }
    for name, entry in entries.items():
        program = Path(entry["args"][0] if entry["command"] == node else entry["command"])
        if not program.exists():
            sys.exit(f"bench_tools: {name}: {program} is missing; run `bash benches/tools/setup.sh`")
    return entries


def run_mcpmux(binary: str, config: Path) -> tuple[float, Set[str]]:
    """Seconds `mcpmux tools` took, and the tool names it listed (unprefixed)."""
    start = time.perf_counter()
    done = subprocess.run(
        [binary, "tools", "--json", "--config", str(config)],
        capture_output=True,
        text=True,
        env={**os.environ, "MCPMUX_LOG": "error"},
    )
    took = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"bench_tools: mcpmux tools failed ({done.returncode}): {done.stderr[-2000:]}")
    listed = json.loads(done.stdout)
    tools = listed["tools"] if isinstance(listed, dict) else listed
    return took, {f"{t['server']}/{t['tool']}" for t in tools}


async def run_sdk(entries: Dict[str, dict]) -> tuple[float, Set[str]]:
    """Seconds the SDK took to list the nine concurrently, and the names."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def one(name: str, entry: dict) -> List[str]:
        params = StdioServerParameters(
            command=entry["command"],
            args=entry.get("args", []),
            env={**os.environ, **entry.get("env", {})},
        )
        with open(os.devnull, "w") as devnull:
            async with stdio_client(params, errlog=devnull) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                names: List[str] = []
                cursor = None
                while True:
                    page = await session.list_tools(cursor=cursor) if cursor else await session.list_tools()
                    names.extend(f"{name}/{t.name}" for t in page.tools)
                    cursor = page.nextCursor
                    if not cursor:
                        return names

    start = time.perf_counter()
    lists = await asyncio.gather(*(one(n, e) for n, e in entries.items()))
    took = time.perf_counter() - start
    return took, {name for names in lists for name in names}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    quick_env = os.environ.get("MCPMUX_BENCH_QUICK") == "1"
    ap.add_argument("--mcpmux", required=True, help="the mcpmux command to time (a release build)")
    ap.add_argument("--quick", action="store_true", default=quick_env, help="a short smoke run")
    ap.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 10, quick 3)")
    opts = ap.parse_args()
    rounds = opts.rounds or int(os.environ.get("MCPMUX_BENCH_ROUNDS") or 0) or (3 if opts.quick else 10)

    from importlib.metadata import version

    with tempfile.TemporaryDirectory(prefix="mcpmux-bench-tools-") as tmp:
        work = Path(tmp)
        entries = servers(work)
        config = work / "mcpmux.json"
        config.write_text(json.dumps({"mcpServers": entries}))
        print(f"mcpmux tools ({opts.mcpmux}) vs mcp {version('mcp')} (official SDK), nine servers; {os.cpu_count()} CPUs")
        print(f"{rounds} interleaved round(s), one run of each side per round\n")
        # Warm-up: page caches, .pyc files, the first npm resolution.
        _, ours_names = run_mcpmux(opts.mcpmux, config)
        _, sdk_names = asyncio.run(run_sdk(entries))
        if ours_names != sdk_names:
            sys.exit(
                "bench_tools: the sides listed different tools: "
                f"only mcpmux {sorted(ours_names - sdk_names)[:10]}, only SDK {sorted(sdk_names - ours_names)[:10]}"
            )
        ours: List[float] = []
        ref: List[float] = []
        for r in range(rounds):
            for side in (["mcpmux", "sdk"] if r % 2 == 0 else ["sdk", "mcpmux"]):
                if side == "mcpmux":
                    ours.append(run_mcpmux(opts.mcpmux, config)[0] * 1e3)
                else:
                    ref.append(asyncio.run(run_sdk(entries))[0] * 1e3)
            print(f"round {r + 1}: mcpmux {ours[-1]:.0f} ms  SDK {ref[-1]:.0f} ms  ({len(ours_names)} tools)", flush=True)

    ratios = [a / b for a, b in zip(ours, ref)]
    m, lo, hi = statistics.median(ratios), min(ratios), max(ratios)
    held = "PASS" if m <= 1.0 else "MISS"
    figure = "`mcpmux tools`, nine public servers: wall time (ms)"
    print(f"\n{figure}: mcpmux {statistics.median(ours):.1f} ms, SDK {statistics.median(ref):.1f} ms, "
          f"median ratio {m:.2f}x (range {lo:.2f}-{hi:.2f}x), target <= 1.0: {held}")
    path = os.environ.get("MCPMUX_BENCH_ROWS")
    if path:
        with open(path, "a") as out:
            out.write(
                f"{figure}\tnine public\t{statistics.median(ours):.3f}\t{statistics.median(ref):.3f}\t"
                f"Python SDK, concurrent\t{m:.4f}\t{lo:.4f}\t{hi:.4f}\tx\t<=1\t-\t{rounds}\n"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
