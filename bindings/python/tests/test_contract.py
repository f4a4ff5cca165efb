"""The session contract from Python: every field core's session verbs accept
(read from core itself, ``_native.Sessions.schemas()``, generated from its
parameter types) is a parameter of ``Sessions`` and ``AsyncSessions``
methods and of their ``.pyi`` stubs (the drift test), and the session
limits passed to ``begin`` reach the session (end to end)."""

from __future__ import annotations

import ast
import asyncio
import inspect
import json
import time
from pathlib import Path
from typing import Any, Dict, List, Set

import mcpmux
from mcpmux import _native

PLAN_INPUT = "---\nUSER_REQUEST: limits\n---\n## PLAN\n1. Write hello.py\n"
STUB = Path(mcpmux.__file__).with_name("__init__.pyi")


def core_fields() -> Dict[str, List[str]]:
    schemas = json.loads(_native.Sessions.schemas())
    fields = {verb: list(schema["properties"]) for verb, schema in schemas.items()}
    assert set(fields) == {"begin", "wait", "reply", "end"}, fields
    assert "max_turns" in fields["begin"] and "session_dir" in fields["wait"], fields
    return fields


def stub_parameters(cls: str, method: str) -> Set[str]:
    tree = ast.parse(STUB.read_text())
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == method:
                    a = item.args
                    return {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs} - {"self"}
    raise AssertionError(f"{cls}.{method} is not in {STUB}")


def test_every_core_field_is_a_python_parameter() -> None:
    missing = []
    for verb, fields in core_fields().items():
        for cls in (mcpmux.Sessions, mcpmux.AsyncSessions):
            have = set(inspect.signature(getattr(cls, verb)).parameters) - {"self"}
            missing += [f"{cls.__name__}.{verb}({f}=)" for f in fields if f not in have]
            stub = stub_parameters(cls.__name__, verb)
            missing += [f"stub {cls.__name__}.{verb}({f}=)" for f in fields if f not in stub]
    assert not missing, f"core accepts these, Python does not: {missing}"


def read_settings(session_dir: str) -> Dict[str, Any]:
    return json.loads((Path(session_dir) / "session.json").read_text())["settings"]


def test_begin_limits_reach_the_session(tmp_path: Path) -> None:
    requests: List[Dict[str, Any]] = []

    def always_a_tool(request: Dict[str, Any]) -> Dict[str, Any]:
        # Never answers with a review: only max_turns ends the round.
        requests.append(request)
        return {"text": "again", "tool_calls": [{"id": f"c{len(requests)}", "name": "nope", "arguments": {}}]}

    sessions = mcpmux.Sessions({"session": {"max_turns": 6}}, host=always_a_tool)
    begun = sessions.begin(
        skill="review-plan",
        reviewer="host",
        input=PLAN_INPUT,
        working_dir=tmp_path,
        max_turns=1,
        max_tool_calls=0,
        call_timeout_seconds=7.5,
        max_output_bytes=4096,
        scope="staging",
    )
    deadline = time.monotonic() + 60
    status = sessions.wait(begun["session_dir"], max_wait_seconds=2)
    while status["status"] == "running" and time.monotonic() < deadline:
        status = sessions.wait(begun["session_dir"], max_wait_seconds=2)
    assert (status["status"], status["failure_reason"]) == ("failed", "max_turns"), status
    # One turn plus the last one that asks for the review (not the config's 6).
    assert len(requests) == 2, requests
    s = read_settings(begun["session_dir"])
    assert (s["max_turns"], s["max_tool_calls"], s["call_timeout_seconds"], s["max_output_bytes"], s["scope"]) == (
        1,
        0,
        7.5,
        4096,
        "staging",
    ), s
    sessions.end(begun["session_dir"])


def test_async_begin_takes_the_limits(tmp_path: Path) -> None:
    async def main() -> Dict[str, Any]:
        sessions = mcpmux.AsyncSessions(host=lambda request: {"text": "no review"})
        begun = await sessions.begin(
            skill="review-plan",
            reviewer="host",
            input=PLAN_INPUT,
            working_dir=tmp_path,
            max_turns=2,
            max_tool_calls=3,
            call_timeout_seconds=4,
            max_output_bytes=500,
            scope="dev",
        )
        await sessions.end(begun["session_dir"])
        return read_settings(begun["session_dir"])

    s = asyncio.run(main())
    assert (s["max_turns"], s["max_tool_calls"], s["call_timeout_seconds"], s["max_output_bytes"], s["scope"]) == (
        2,
        3,
        4.0,
        500,
        "dev",
    ), s


def test_unknown_and_wrong_parameters_are_named(tmp_path: Path) -> None:
    sessions = mcpmux.Sessions(host=lambda request: {"text": "x"})
    try:
        sessions._native.call("begin", {"skill": "review-plan", "input": PLAN_INPUT, "colour": 1})
    except mcpmux.InvalidInput as e:
        assert "colour" in str(e) and "max_output_bytes" in str(e), e
    else:
        raise AssertionError("an unknown parameter was accepted")
    try:
        sessions.begin(skill="review-plan", reviewer="host", input=PLAN_INPUT, working_dir=tmp_path, max_turns="ten")  # type: ignore[arg-type]
    except mcpmux.InvalidInput as e:
        assert "max_turns" in str(e), e
    else:
        raise AssertionError("a wrong type was accepted")
