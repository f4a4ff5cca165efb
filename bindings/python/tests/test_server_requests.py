"""Requests servers send to the host, answered from Python: elicitation,
sampling and roots, against server-everything (which offers its
``trigger-elicitation-request``, ``trigger-sampling-request`` and
``get-roots-list`` tools only to a client declaring that capability) and the
``asks_client.py`` fault server (which sends any request and reports the
client's declared capabilities)."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import pytest

import mcpmux
from conftest import config, everything, fault

TRIGGERS = {
    "mcp_every_trigger-elicitation-request",
    "mcp_every_trigger-sampling-request",
    "mcp_every_get-roots-list",
}


def text(result) -> str:
    return "\n".join(c.get("text", "") for c in result["content"])


def tool_names(hub) -> set:
    return {t["name"] for t in hub.list_tools()}


def ask(hub, method, params=None, timeout=None):
    result = hub.call_tool(
        "mcp_asker_ask", {"method": method, "params": params or {}}, timeout=timeout
    )
    return json.loads(result["content"][0]["text"])


def declared(hub) -> dict:
    result = hub.call_tool("mcp_asker_client_capabilities")
    return json.loads(result["content"][0]["text"])


def test_without_handlers_nothing_is_declared_and_the_triggers_are_not_offered():
    with mcpmux.Hub.connect(config(every=everything(), asker=fault("asks_client.py"))) as hub:
        assert not TRIGGERS & tool_names(hub)
        assert declared(hub) == {}


def test_only_the_given_handlers_are_declared():
    with mcpmux.Hub.connect(
        config(asker=fault("asks_client.py")), on_sampling=lambda p: {}
    ) as hub:
        assert declared(hub) == {"sampling": {}}
    with mcpmux.Hub.connect(config(asker=fault("asks_client.py")), roots=[]) as hub:
        assert declared(hub) == {"roots": {"listChanged": True}}


def test_an_elicitation_reaches_the_handler_and_its_answer_the_server():
    seen = []

    def on_elicitation(params):
        seen.append((params, threading.current_thread() is threading.main_thread()))
        return {"action": "accept", "content": {"name": "Ada Lovelace", "check": True}}

    with mcpmux.Hub.connect(config(every=everything()), on_elicitation=on_elicitation) as hub:
        assert "mcp_every_trigger-elicitation-request" in tool_names(hub)
        result = hub.call_tool("mcp_every_trigger-elicitation-request")
    out = text(result)
    assert "User provided the requested information" in out, out
    assert "- Name: Ada Lovelace" in out, out
    params, on_main = seen[0]
    assert params["message"].startswith("Please provide inputs")
    assert "name" in params["requestedSchema"]["properties"]
    assert not on_main, "handlers run on an engine thread"


def test_a_sampling_request_is_answered_with_the_handlers_create_message_result():
    def on_sampling(params):
        prompt = params["messages"][0]["content"]["text"]
        return {
            "role": "assistant",
            "model": "test-model",
            "stopReason": "endTurn",
            "content": {"type": "text", "text": f"echo: {prompt} / {params['maxTokens']}"},
        }

    with mcpmux.Hub.connect(config(every=everything()), on_sampling=on_sampling) as hub:
        result = hub.call_tool(
            "mcp_every_trigger-sampling-request", {"prompt": "hello", "maxTokens": 9}
        )
    out = text(result)
    assert "test-model" in out and "hello / 9" in out, out


def test_a_handler_that_raises_answers_the_server_with_an_error():
    def on_elicitation(params):
        raise RuntimeError("the person is away")

    with mcpmux.Hub.connect(
        config(asker=fault("asks_client.py")), on_elicitation=on_elicitation
    ) as hub:
        answer = ask(hub, "elicitation/create", {"message": "?"})
    assert answer["error"]["code"] == -32603, answer
    assert "the person is away" in answer["error"]["message"], answer


def test_a_handler_returning_no_dict_answers_with_an_error():
    with mcpmux.Hub.connect(
        config(asker=fault("asks_client.py")), on_sampling=lambda p: "nope"
    ) as hub:
        answer = ask(hub, "sampling/createMessage", {"messages": [], "maxTokens": 1})
    assert "not a dict" in answer["error"]["message"], answer


def test_a_slow_handler_is_bounded_by_the_servers_timeout():
    release = threading.Event()

    def on_elicitation(params):
        release.wait(20)
        return {"action": "decline"}

    try:
        with mcpmux.Hub.connect(
            config(asker=fault("asks_client.py", timeout_seconds=1)),
            on_elicitation=on_elicitation,
        ) as hub:
            answer = ask(hub, "elicitation/create", {"message": "?"}, timeout=30)
    finally:
        release.set()
    assert "did not answer elicitation/create" in answer["error"]["message"], answer


def test_roots_reach_server_everything_and_set_roots_tells_it(tmp_path: Path):
    first = tmp_path / "first"
    with mcpmux.Hub.connect(config(every=everything()), roots=[first]) as hub:
        assert hub.roots == [{"uri": first.as_uri(), "name": "first"}]
        out = text(hub.call_tool("mcp_every_get-roots-list"))
        assert first.as_uri() in out, out
        hub.set_roots(["file:///srv/second"])
        for _ in range(200):
            out = text(hub.call_tool("mcp_every_get-roots-list"))
            if "second" in out:
                break
            threading.Event().wait(0.05)
        assert "file:///srv/second" in out and "first" not in out, out


def test_bad_arguments_are_invalid_input():
    with pytest.raises(mcpmux.InvalidInput, match="on_elicitation"):
        mcpmux.Hub.connect(config(every=everything()), on_elicitation=5)
    with pytest.raises(mcpmux.InvalidInput, match="roots"):
        mcpmux.Hub.connect(config(every=everything()), roots="/one/string")
    with pytest.raises(mcpmux.InvalidInput, match="file://"):
        mcpmux.Hub.connect(config(every=everything()), roots=["https://example.com/"])
    with mcpmux.Hub.connect(config(asker=fault("asks_client.py"))) as hub:
        with pytest.raises(mcpmux.InvalidInput, match="connected without roots"):
            hub.set_roots(["/a"])


def test_async_hub_runs_an_async_handler_on_its_loop(tmp_path: Path):
    async def main():
        loop = asyncio.get_running_loop()
        seen = []

        async def on_elicitation(params):
            seen.append(asyncio.get_running_loop() is loop)
            await asyncio.sleep(0.01)
            return {"action": "accept", "content": {"name": "Grace"}}

        async with mcpmux.AsyncHub.connect(
            config(every=everything()), on_elicitation=on_elicitation, roots=[tmp_path]
        ) as hub:
            result = await hub.call_tool("mcp_every_trigger-elicitation-request")
            roots = text(await hub.call_tool("mcp_every_get-roots-list"))
            await hub.set_roots([tmp_path / "b"])
            assert hub.roots[0]["name"] == "b"
        return text(result), roots, seen

    out, roots, seen = asyncio.run(main())
    assert "- Name: Grace" in out, out
    assert tmp_path.as_uri() in roots, roots
    assert seen == [True]
