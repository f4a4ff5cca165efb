"""Shared helpers of the mcpmux Python tests.

Real peers only: the bundled demo server (``target/debug/mcpmux-demo-server``,
built by ci.sh), ``@modelcontextprotocol/server-everything`` over stdio
(installed by tests/setup.sh), and the fault servers of ``tests/servers``.
Processes started by a test carry a unique ``MCPMUX_TEST_MARKER`` in their
environment, so a test can find them in ``/proc`` and check they are gone.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Dict, List, Optional

import pytest

ROOT = Path(__file__).resolve().parents[3]
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
DEMO = os.environ.get("MCPMUX_DEMO_SERVER_DEBUG") or str(TARGET / "debug" / "mcpmux-demo-server")
CLI = os.environ.get("MCPMUX_CLI") or str(TARGET / "debug" / "mcpmux")
EVERYTHING = ROOT / "tests/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
SERVERS = ROOT / "tests" / "servers"
PYTHON = sys.executable


def demo(**extra) -> dict:
    """A JSON config entry for the demo server."""
    return {"command": DEMO, **extra}


def everything(**extra) -> dict:
    """A JSON config entry for server-everything over stdio."""
    return {"command": "node", "args": [str(EVERYTHING), "stdio"], **extra}


def fault(script: str, **extra) -> dict:
    """A JSON config entry for one of tests/servers/*.py."""
    return {"command": PYTHON, "args": [str(SERVERS / script)], **extra}


def config(**servers: dict) -> dict:
    """``{"mcpServers": {...}}`` from keyword entries."""
    return {"mcpServers": servers}


def marked(entry: dict, marker: str) -> dict:
    """``entry`` with ``MCPMUX_TEST_MARKER=marker`` in its environment."""
    env = dict(entry.get("env", {}))
    env["MCPMUX_TEST_MARKER"] = marker
    return {**entry, "env": env}


def new_marker() -> str:
    return f"mcpmux-test-{uuid.uuid4().hex}"


def _alive(pid: str) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
        return state not in (b"Z", b"X")
    except (OSError, IndexError):
        return False


def marked_pids(marker: str) -> List[int]:
    """Live (non-zombie) processes whose environment holds ``marker``."""
    needle = f"MCPMUX_TEST_MARKER={marker}".encode()
    pids = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if needle not in f.read().split(b"\0"):
                    continue
        except OSError:
            continue
        if _alive(pid):
            pids.append(int(pid))
    return pids


def wait_until(predicate, timeout: float = 10.0, interval: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


def threads_named(pid: int, name: str) -> int:
    """How many threads of process ``pid`` are called ``name``."""
    count = 0
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/comm") as f:
                    if f.read().strip() == name:
                        count += 1
            except OSError:
                pass
    except OSError:
        pass
    return count


@pytest.fixture(scope="session", autouse=True)
def _peers_present() -> None:
    missing = [p for p in (DEMO, str(EVERYTHING)) if not Path(p).exists()]
    if missing:
        pytest.exit(f"test peers missing: {missing}; run bash bindings/python/ci.sh", returncode=2)


@pytest.fixture
def marker() -> str:
    return new_marker()


@pytest.fixture
def cancel_log(tmp_path: Path) -> Path:
    return tmp_path / "cancelled.log"


class EventLog:
    """A file a test server appends one line per event to (the demo
    server's ``DEMO_EVENT_LOG``, ``EVENT_LOG`` of ignore_sigterm.py): what
    tests check instead of timings (see docs/testing.md)."""

    #: Only turns a hang into a failure: every event comes far sooner.
    HANG = 60.0

    def __init__(self, path: Path) -> None:
        self.path = path

    def demo_env(self) -> Dict[str, str]:
        """The ``env`` of a demo server entry that logs here."""
        return {"DEMO_EVENT_LOG": str(self.path)}

    def lines(self) -> List[str]:
        try:
            return self.path.read_text().splitlines()
        except FileNotFoundError:
            return []

    def count(self, prefix: str) -> int:
        """How many lines start with ``prefix``."""
        return sum(1 for line in self.lines() if line.startswith(prefix))

    async def wait_count(self, prefix: str, n: int) -> None:
        """Waits until ``n`` lines start with ``prefix``; fails as hung after ``HANG``."""
        deadline = time.monotonic() + self.HANG
        while self.count(prefix) < n:
            assert time.monotonic() < deadline, f"hung: waiting for {n} events {prefix!r}, have {self.lines()}"
            await asyncio.sleep(0.01)


@pytest.fixture
def events(tmp_path: Path) -> EventLog:
    return EventLog(tmp_path / "events.log")


def read_lines(path: Path) -> List[str]:
    try:
        return path.read_text().split()
    except FileNotFoundError:
        return []


Env = Optional[Dict[str, str]]
