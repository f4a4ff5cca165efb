"""The call-options contract from Python (core's ``mcpmux_core::contract``,
read from core itself with ``_native.contract()``): every call option is a
keyword of ``Hub.call_tool`` / ``AsyncHub.call_tool`` and of their ``.pyi``
stubs, ``task_ttl`` one of the task calls, every policy option a keyword of
``Hub.policy`` / ``AsyncHub.policy``, every search field a parameter of
``search_tools`` (the drift tests); and the rows of the drift table: core's
timeout cap on every duration, ``max_total_timeout`` ending a call that
progress keeps alive, ``task_ttl`` reaching the server, a server error's
``data``, and a search limit of 0 finding nothing."""

from __future__ import annotations

import asyncio
import ast
import inspect
import json
from pathlib import Path
from typing import Dict, List, Set

import pytest

import mcpmux
from mcpmux import _native
from conftest import SERVERS, config, demo, fault

STUB = Path(mcpmux.__file__).with_name("__init__.pyi")
SLOW = "mcp_demo_slow"


def contract() -> Dict:
    c = json.loads(_native.contract())
    assert set(c["names"]) == {"call_options", "policy_options", "search"}, c
    return c


def python_names(part: str) -> List[str]:
    return [n["python"] for n in contract()["names"][part]]


def stub_parameters(cls: str, method: str) -> Set[str]:
    tree = ast.parse(STUB.read_text())
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == method:
                    a = item.args
                    return {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs} - {"self"}
    raise AssertionError(f"{cls}.{method} is not in {STUB}")


def missing_in(method: str, names: List[str]) -> List[str]:
    missing = []
    for cls in (mcpmux.Hub, mcpmux.AsyncHub):
        have = set(inspect.signature(getattr(cls, method)).parameters)
        missing += [f"{cls.__name__}.{method}({n}=)" for n in names if n not in have]
        stub = stub_parameters(cls.__name__, method)
        missing += [f"stub {cls.__name__}.{method}({n}=)" for n in names if n not in stub]
    return missing


def test_every_call_option_is_a_keyword_of_call_tool() -> None:
    names = python_names("call_options")
    assert {"timeout", "max_total_timeout", "task_ttl", "on_progress"} <= set(names), names
    missing = missing_in("call_tool", names)
    missing += missing_in("call_tool_as_task", ["timeout", "task_ttl"])
    assert not missing, f"core has these, Python does not: {missing}"


def test_every_policy_option_and_search_field_is_a_parameter() -> None:
    missing = missing_in("policy", python_names("policy_options"))
    missing += missing_in("search_tools", python_names("search"))
    assert not missing, f"core has these, Python does not: {missing}"


def test_every_duration_has_cores_cap() -> None:
    cap = contract()["max_timeout_seconds"]
    assert cap == 1e9
    with mcpmux.Hub.connect(config(demo=demo())) as hub:
        for arg in ("timeout", "max_total_timeout", "task_ttl"):
            with pytest.raises(mcpmux.InvalidInput, match=f"'{arg}'.*at most 1000000000"):
                hub.call_tool("mcp_demo_echo", {"text": "x"}, **{arg: cap * 2})
            with pytest.raises(mcpmux.InvalidInput, match=f"'{arg}'"):
                hub.call_tool("mcp_demo_echo", {"text": "x"}, **{arg: 0})
        with pytest.raises(mcpmux.InvalidInput, match="'task_ttl'"):
            hub.call_tool_as_task("mcp_demo_echo", {"text": "x"}, task_ttl=cap * 2)
        result = hub.call_tool("mcp_demo_echo", {"text": "capped"}, timeout=cap, max_total_timeout=cap)
        assert result["content"][0]["text"] == "capped", result


def test_max_total_timeout_ends_a_call_that_progress_keeps_alive() -> None:
    progress: List[float] = []
    with mcpmux.Hub.connect(config(demo=demo())) as hub:
        # 300 steps over 30 s: every step resets `timeout`; only the total
        # bound can end it early.
        with pytest.raises(mcpmux.Timeout):
            hub.call_tool(
                SLOW,
                {"seconds": 30, "steps": 300},
                timeout=20,
                max_total_timeout=0.5,
                on_progress=lambda p, t, m: progress.append(p),
            )

        async def main() -> None:
            hub = await mcpmux.AsyncHub.connect(config(demo=demo()))
            try:
                with pytest.raises(mcpmux.Timeout):
                    await hub.call_tool(SLOW, {"seconds": 30, "steps": 300}, timeout=20, max_total_timeout=0.5)
            finally:
                await hub.close()

        asyncio.run(main())


def test_task_ttl_reaches_the_server() -> None:
    # task_server.py reports the ttl each task call asked for.
    with mcpmux.Hub.connect(config(tasks=fault("task_server.py", args=[str(SERVERS / "task_server.py"), "hostile"]))) as hub:
        handle = hub.call_tool_as_task("mcp_tasks_needs_task", task_ttl=7.5)
        task = hub.task(handle["server"], handle["task_id"])
        assert task.get("ttl_ms") == 7500, {k: v for k, v in task.items() if k != "message"}
        other = hub.call_tool_as_task("mcp_tasks_needs_task")
        assert hub.task(other["server"], other["task_id"]).get("ttl_ms") == 60000


def test_server_error_data_and_search_limit_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    # Inherited by the server (a value written in the config is a secret, redacted).
    monkeypatch.setenv("LEAKY_SECRET", "visible-token")
    with mcpmux.Hub.connect(config(leaky=fault("leaky.py"), demo=demo())) as hub:
        with pytest.raises(mcpmux.ServerError) as e:
            hub.call_tool("mcp_leaky_fail")
        assert e.value.data == {"token": "visible-token"}, e.value
        assert hub.search_tools("echo", 0) == []
        assert [t["name"] for t in hub.search_tools("echo", 1)] == ["mcp_demo_echo"]
        default = inspect.signature(mcpmux.Hub.search_tools).parameters["limit"].default
        assert default == contract()["search_default_limit"]
