"""Review sessions from Python: begin -> wait -> reply -> wait -> end with a
host reviewer (a Python callable) that calls the demo server's echo tool
and then answers with a fenced JSON verdict; the error classes of the
session verbs; a host reviewer that raises; the asyncio API."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest

import mcpmux
from conftest import DEMO

CHANGES = (
    "I checked the tool.\n\n```json\n"
    + json.dumps({"verdict": "REQUEST_CHANGES", "blocks": [{"title": "Missing tests", "body": "Step 2 has no test."}]})
    + "\n```\n"
)
APPROVE = 'Looks good now.\n\n```json\n{"verdict": "APPROVE", "blocks": []}\n```\n'
PLAN_INPUT = "---\nUSER_REQUEST: {request}\n---\n## PLAN\n1. Write hello.py\n2. Ship it\n"


def session_config() -> Dict[str, Any]:
    return {
        "mcpServers": {"demo": {"command": DEMO, "allow_tools": ["echo"]}},
        "session": {"max_turns": 4},
    }


class ScriptedHost:
    """A host reviewer: turn 1 calls echo, turn 2 requests changes, later turns approve."""

    def __init__(self) -> None:
        self.requests: List[Dict[str, Any]] = []
        self.threads: List[int] = []
        self.lock = threading.Lock()

    def __call__(self, request: Dict[str, Any]) -> Any:
        with self.lock:
            self.requests.append(request)
            self.threads.append(threading.get_ident())
            n = len(self.requests)
        if n == 1:
            return {
                "text": "Let me check.",
                "tool_calls": [{"id": "call-1", "name": "mcp_demo_echo", "arguments": {"text": "ping from python"}}],
            }
        return CHANGES if n == 2 else APPROVE


def wait_done(sessions: Any, session_dir: str) -> Dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        status = sessions.wait(session_dir, max_wait_seconds=2)
        if status["status"] != "running" or time.monotonic() > deadline:
            return status


def test_cycle_with_host_reviewer(tmp_path: Path) -> None:
    host = ScriptedHost()
    sessions = mcpmux.Sessions(session_config(), host=host)
    begun = sessions.begin(
        skill="review-plan", reviewer="host", input=PLAN_INPUT.format(request="Add a greeting"), working_dir=tmp_path
    )
    assert begun["round"] == 1 and begun["status"] == "running"
    session_dir = Path(begun["session_dir"])
    assert session_dir.parent == tmp_path / ".mcpmux" / "sessions"
    assert session_dir.name.startswith("review-plan-")

    first = wait_done(sessions, str(session_dir))
    assert first["status"] == "completed", first
    assert first["round"] == 1
    assert first["review"]["verdict"] == "REQUEST_CHANGES"
    assert [b["title"] for b in first["review"]["blocks"]] == ["Missing tests"]
    assert (first["next"], first["next_reason"]) == ("respond", "open_issues")
    assert isinstance(first["activities"], list)

    # The second request carried the echo result back to the reviewer.
    assert len(host.requests) == 2
    second_request = host.requests[1]
    results = [r for m in second_request["messages"] for r in m.get("tool_results", [])]
    assert [r["call_id"] for r in results] == ["call-1"]
    assert "ping from python" in results[0]["content"]
    assert not results[0]["is_error"]
    assert any(t["name"] == "mcp_demo_echo" for t in host.requests[0]["tools"])
    assert threading.get_ident() not in host.threads  # an engine thread calls the host

    replied = sessions.reply(str(session_dir), "---\nRESPONSE: Added a test for step 2.\n---\n")
    assert replied["status"] == "started" and replied["round"] == 2
    assert replied["session_dir"] == str(session_dir)

    second = wait_done(sessions, session_dir)
    assert second["status"] == "completed" and second["round"] == 2
    assert second["review"]["verdict"] == "APPROVE"
    assert (second["next"], second["next_reason"]) == ("done", "approved")

    ended = sessions.end(session_dir)
    assert ended["status"] == "ended" and ended["finalized"] is True
    assert ended["verdict"] == "APPROVE"

    for name in ["session.json", "thread.json", "round-001/input.md", "round-001/result.json",
                 "round-002/input.md", "meta.json"]:
        assert (session_dir / name).is_file(), name
    thread = json.loads((session_dir / "thread.json").read_text())
    assert "ping from python" in json.dumps(thread)


def test_errors_have_their_classes(tmp_path: Path) -> None:
    sessions = mcpmux.Sessions(host=ScriptedHost())
    with pytest.raises(mcpmux.UnknownSkill) as e:
        sessions.begin(skill="no-such-skill", reviewer="host", input="x", working_dir=tmp_path)
    assert e.value.code == "UNKNOWN_SKILL" and "no-such-skill" in str(e.value)
    with pytest.raises(mcpmux.InvalidInput) as e:
        sessions.begin(skill="review-plan", reviewer="host", input="---\nUSER_REQUEST: x\n---\n", working_dir=tmp_path)
    assert e.value.code == "INVALID_INPUT" and "PLAN" in str(e.value)
    with pytest.raises(mcpmux.InvalidSession) as e:
        sessions.wait(tmp_path / "not-a-session", max_wait_seconds=1)
    assert e.value.code == "INVALID_SESSION"
    with pytest.raises(mcpmux.ReviewerNotFound):
        mcpmux.Sessions().begin(
            skill="review-plan", reviewer="host", input=PLAN_INPUT.format(request="x"), working_dir=tmp_path
        )
    with pytest.raises(mcpmux.ConfigInvalid):
        mcpmux.Sessions("this = = is not a config\n")
    with pytest.raises(mcpmux.InvalidInput):
        mcpmux.Sessions(host=42)  # type: ignore[arg-type]


def test_reply_while_running(tmp_path: Path) -> None:
    release = threading.Event()
    entered = threading.Event()

    def slow(request: Dict[str, Any]) -> str:
        entered.set()
        release.wait(30)
        return APPROVE

    sessions = mcpmux.Sessions(host=slow)
    begun = sessions.begin(skill="review-plan", reviewer="host", input=PLAN_INPUT.format(request="s"), working_dir=tmp_path)
    assert entered.wait(30)
    running = sessions.wait(begun["session_dir"], max_wait_seconds=1)
    assert (running["status"], running["next"]) == ("running", "running")
    with pytest.raises(mcpmux.RoundStillRunning) as e:
        sessions.reply(begun["session_dir"], "---\nRESPONSE: too early\n---\n")
    assert e.value.code == "ROUND_STILL_RUNNING"
    release.set()
    done = wait_done(sessions, begun["session_dir"])
    assert done["review"]["verdict"] == "APPROVE"


def test_host_that_raises_fails_the_round(tmp_path: Path) -> None:
    def broken(request: Dict[str, Any]) -> str:
        raise ValueError("the host model exploded")

    sessions = mcpmux.Sessions(host=broken)
    begun = sessions.begin(skill="review-plan", reviewer="host", input=PLAN_INPUT.format(request="f"), working_dir=tmp_path)
    status = wait_done(sessions, begun["session_dir"])
    assert status["status"] == "failed", status
    assert "the host model exploded" in json.dumps(status)
    assert status["next"] == "stopped"


def test_async_api_with_async_host(tmp_path: Path) -> None:
    seen_loops: List[Any] = []

    async def host(request: Dict[str, Any]) -> Dict[str, Any]:
        seen_loops.append(asyncio.get_running_loop())
        await asyncio.sleep(0.01)
        return {"text": APPROVE}

    async def main() -> None:
        sessions = mcpmux.AsyncSessions(host=host)
        begun = await sessions.begin(
            skill="review-plan", reviewer="host", input=PLAN_INPUT.format(request="a"), working_dir=tmp_path
        )
        status = begun
        for _ in range(60):
            status = await sessions.wait(begun["session_dir"], max_wait_seconds=2)
            if status["status"] != "running":
                break
        assert status["review"]["verdict"] == "APPROVE", status
        assert (status["next"], status["next_reason"]) == ("done", "approved")
        ended = await sessions.end(begun["session_dir"])
        assert ended["status"] == "ended"
        with pytest.raises(mcpmux.InvalidSession):
            await sessions.wait(str(tmp_path / "nope"))
        assert seen_loops == [asyncio.get_running_loop()]

    asyncio.run(main())


def test_sessions_can_be_collected() -> None:
    import gc
    import weakref

    for cls in (mcpmux.Sessions, mcpmux.AsyncSessions):
        sessions = cls(host=lambda request: APPROVE)
        ref = weakref.ref(sessions)
        del sessions
        gc.collect()
        assert ref() is None, cls


def test_blocking_sessions_with_async_host(tmp_path: Path) -> None:
    async def host(request: Dict[str, Any]) -> str:
        await asyncio.sleep(0.01)
        return APPROVE

    sessions = mcpmux.Sessions(host=host)
    begun = sessions.begin(skill="review-plan", reviewer="host", input=PLAN_INPUT.format(request="b"), working_dir=tmp_path)
    status = wait_done(sessions, begun["session_dir"])
    assert status["review"]["verdict"] == "APPROVE", status


def test_host_with_a_bad_answer_fails_the_round(tmp_path: Path) -> None:
    sessions = mcpmux.Sessions(host=lambda request: 42)
    begun = sessions.begin(skill="review-plan", reviewer="host", input=PLAN_INPUT.format(request="c"), working_dir=tmp_path)
    status = wait_done(sessions, begun["session_dir"])
    assert status["status"] == "failed", status
    assert "must return a dict" in json.dumps(status)
