"""One config-source rule for every front end (core decides): each case of
tests/fixtures/config_sources.json reaches the same servers, or the same
error code, from ``Hub.connect``, ``AsyncHub.connect`` and ``Sessions`` as
from Node, the C ABI and the CLI. And the engine's worker threads: one
variable, ``MCPMUX_WORKER_THREADS``, with ``MCPMUX_ENGINE_THREADS`` kept as
an alias, counted by name in /proc. And ``MCPMUX_STAY_AWAKE_US``, core's
rule for how long a waiting thread stays awake."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, List

import pytest

import mcpmux

from conftest import DEMO, ROOT

FIXTURES = ROOT / "tests" / "fixtures"
CASES = json.loads((FIXTURES / "config_sources.json").read_text())["cases"]


def inputs(case: dict) -> List[Any]:
    """The ways a Python caller passes the case's input."""
    if case["kind"] == "path":
        return [case["input"], Path(case["input"])]
    return [case["input"]]


def check(case: dict, reach) -> None:
    for given in inputs(case):
        if "code" in case:
            with pytest.raises(mcpmux.McpmuxError) as info:
                reach(given)
            assert info.value.code == case["code"], (given, info.value)
            assert case.get("message", "") in info.value.message, (given, info.value)
        else:
            assert reach(given) == case["servers"], given


@pytest.fixture(autouse=True)
def in_fixtures(monkeypatch):
    monkeypatch.chdir(FIXTURES / "config_sources")


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_hub_connect(case):
    def reach(given):
        with mcpmux.Hub.connect(given) as hub:
            return [s["name"] for s in hub.servers()]

    check(case, reach)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_async_hub_connect(case):
    async def connect(given):
        async with mcpmux.AsyncHub.connect(given) as hub:
            return [s["name"] for s in await hub.servers()]

    check(case, lambda given: asyncio.run(connect(given)))


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_sessions(case):
    # A context has no server list: it is made (the config read) or refused.
    def reach(given):
        mcpmux.Sessions(given)
        return case["servers"]

    check(case, reach)


def engine_threads(env: dict, want: int = 0) -> "tuple[int, str]":
    """Starts a Python that connects a hub; returns how many threads named
    ``mcpmux-engine`` it has (``-1`` when connect raised) and its output.
    Threads name themselves once running, so it polls (bounded: only a
    hang fails there) until the count is ``want``."""
    script = (
        "import os, sys, time, mcpmux\n"
        "try:\n"
        "    h = mcpmux.Hub.connect({'mcpServers': {'a': {'command': 'x', 'disabled': True}}})\n"
        "except mcpmux.McpmuxError as e:\n"
        "    print(-1, e.code, e.message)\n"
        "    raise SystemExit(0)\n"
        "def count():\n"
        "    names = [open(f'/proc/self/task/{t}/comm').read().strip() for t in os.listdir('/proc/self/task')]\n"
        "    return names.count('mcpmux-engine')\n"
        "deadline = time.monotonic() + 20\n"
        "while count() != int(sys.argv[1]) and time.monotonic() < deadline:\n"
        "    time.sleep(0.01)\n"
        "print(count())\n"
        "h.close()\n"
    )
    clean = {k: v for k, v in os.environ.items() if "THREADS" not in k}
    out = subprocess.run(
        [sys.executable, "-c", script, str(want)],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return int(out.stdout.split()[0]), out.stdout


def test_worker_threads_variable_and_its_alias():
    assert engine_threads({"MCPMUX_WORKER_THREADS": "3"}, 3)[0] == 3
    assert engine_threads({"MCPMUX_ENGINE_THREADS": "2"}, 2)[0] == 2
    # The new name wins over the old one.
    assert engine_threads({"MCPMUX_WORKER_THREADS": "1", "MCPMUX_ENGINE_THREADS": "4"}, 1)[0] == 1


def test_a_bad_worker_threads_value_is_invalid_input_naming_it():
    n, out = engine_threads({"MCPMUX_WORKER_THREADS": "lots"})
    assert n == -1
    assert "INVALID_INPUT" in out and "MCPMUX_WORKER_THREADS" in out, out


def stay_awake(value: "str | None") -> str:
    """Starts a Python with ``MCPMUX_STAY_AWAKE_US`` set to ``value`` (unset
    for ``None``) that makes blocking and asyncio calls to the demo server;
    returns its output: the microseconds the module took, then ``ok`` or
    the error of connect."""
    script = (
        "import asyncio, mcpmux\n"
        "from mcpmux import _native\n"
        "print(_native.STAY_AWAKE_MICROS)\n"
        "cfg = {'mcpServers': {'demo': {'command': %r}}}\n"
        "try:\n"
        "    h = mcpmux.Hub.connect(cfg)\n"
        "except mcpmux.McpmuxError as e:\n"
        "    print(e.code, e.message)\n"
        "    raise SystemExit(0)\n"
        "for i in range(50):\n"
        "    r = h.call_tool('mcp_demo_echo', {'text': str(i)})\n"
        "    assert r['content'][0]['text'] == str(i), r\n"
        "h.close()\n"
        "async def main():\n"
        "    async with mcpmux.AsyncHub.connect(cfg) as a:\n"
        "        for i in range(50):\n"
        "            r = await a.call_tool('mcp_demo_echo', {'text': str(i)})\n"
        "            assert r['content'][0]['text'] == str(i), r\n"
        "        many = await asyncio.gather(*(a.call_tool('mcp_demo_echo', {'text': str(i)}) for i in range(32)))\n"
        "        assert [r['content'][0]['text'] for r in many] == [str(i) for i in range(32)]\n"
        "asyncio.run(main())\n"
        "print('ok')\n"
    ) % DEMO
    env = {k: v for k, v in os.environ.items() if k != "MCPMUX_STAY_AWAKE_US"}
    if value is not None:
        env["MCPMUX_STAY_AWAKE_US"] = value
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_stay_awake_is_core_s_rule_and_calls_work_with_any_value():
    assert stay_awake(None).split() == ["60", "ok"]
    assert stay_awake("0").split() == ["0", "ok"]
    assert stay_awake("5000").split() == ["5000", "ok"]


def test_a_bad_stay_awake_value_is_invalid_input_naming_it():
    out = stay_awake("soon")
    assert "INVALID_INPUT" in out and "MCPMUX_STAY_AWAKE_US" in out, out
