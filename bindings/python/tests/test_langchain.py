"""mcpmux.langchain against the real LangChain packages (pinned in
requirements-frameworks.txt): whole agent turns of ``langchain.agents.create_agent``
and langgraph's ``create_react_agent`` with a fake chat model, over the demo
server, blocking (``invoke``) and asyncio (``ainvoke``)."""

from __future__ import annotations

import asyncio
from typing import Any, List

import pytest

pytest.importorskip("langchain_core")

from langchain.agents import create_agent  # noqa: E402
from langchain_core.callbacks import BaseCallbackHandler  # noqa: E402
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage  # noqa: E402
from langchain_core.tools import BaseTool  # noqa: E402
from langgraph.prebuilt import create_react_agent  # noqa: E402
from pydantic import Field  # noqa: E402

import mcpmux  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:create_react_agent has been moved")
import mcpmux.langchain  # noqa: E402
from frameworks import FIRST_TURN, hang_config, hub_config, wait_for_lines, wait_for_tool  # noqa: E402


class FakeToolModel(GenericFakeChatModel):
    """LangChain's fake chat model, answering the scripted messages in turn;
    it records what each turn was given, and the tools bound to it."""

    seen: List[Any] = Field(default_factory=list)
    bound: List[List[str]] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> "FakeToolModel":
        self.bound.append([t.name for t in tools])
        return self

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def scripted(*turns: AIMessage) -> FakeToolModel:
    return FakeToolModel(messages=iter(list(turns)), disable_streaming=True)


def first_turn() -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[{"id": cid, "name": name, "args": args, "type": "tool_call"} for cid, name, args in FIRST_TURN],
    )


class Progress(BaseCallbackHandler):
    def __init__(self) -> None:
        self.events: List[Any] = []

    def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
        if name == mcpmux.langchain.PROGRESS_EVENT:
            self.events.append(data)


def check_turn(model: FakeToolModel, final: Any, policy: Any) -> None:
    """The model's calls reached the demo server and their results (the
    tool error and the refusal included) came back in its next turn."""
    assert len(model.seen) == 2
    results = {m.tool_call_id: m for m in model.seen[1] if isinstance(m, ToolMessage)}
    assert set(results) == {cid for cid, _, _ in FIRST_TURN}

    echo = results["call_echo"]
    assert echo.status == "success" and "hello from the model" in echo.content
    assert "untrusted-data-" in echo.content  # framed: the call went through the policy
    assert echo.artifact == {"content": [{"type": "text", "text": "hello from the model"}]}

    fail = results["call_fail"]
    assert fail.status == "error" and "boom on purpose" in fail.content

    crash = results["call_crash"]
    assert crash.status == "error"
    assert crash.content.startswith("TOOL_NOT_ALLOWED: ") and "destructive" in crash.content

    slow = results["call_slow"]
    assert slow.status == "success" and "done after 0.2 s" in slow.content

    assert final["messages"][-1].content == "all done"
    statuses = sorted((e["tool"], e["status"]) for e in policy.audit_events())
    assert statuses == sorted([("echo", "ok"), ("fail", "error"), ("crash", "not_allowed"), ("slow", "ok")])


def test_tools_are_the_hubs_callable_tools():
    with mcpmux.Hub.connect(hub_config()) as hub:
        with pytest.warns(RuntimeWarning, match="broken"):
            tools = mcpmux.langchain.tools(hub)
        assert all(isinstance(t, BaseTool) for t in tools)
        listed = hub._native.list_tools()
        assert [t.name for t in tools] == [t["name"] for t in listed if t["server"] == "demo"]
        assert not any(t.name.startswith("mcp_broken_") for t in tools)
        echo = next(t for t in tools if t.name == "mcp_demo_echo")
        schema = next(t for t in listed if t["name"] == "mcp_demo_echo")["input_schema"]
        assert echo.args_schema == schema
        assert echo.response_format == "content_and_artifact"
        assert echo.metadata["mcpmux"]["server"] == "demo"


@pytest.mark.parametrize("factory", [create_agent, create_react_agent], ids=["create_agent", "create_react_agent"])
def test_agent_turn_blocking(factory):
    with mcpmux.Hub.connect(hub_config()) as hub:
        policy = hub.policy()
        model = scripted(first_turn(), AIMessage(content="all done"))
        with pytest.warns(RuntimeWarning):
            tools = mcpmux.langchain.tools(hub, policy=policy)
        agent = factory(model, tools)
        progress = Progress()
        final = agent.invoke(
            {"messages": [HumanMessage("use the tools")]}, config={"callbacks": [progress]}
        )
        check_turn(model, final, policy)
        assert "mcp_demo_echo" in model.bound[0]
        assert [(e["progress"], e["total"]) for e in progress.events] == [(1, 2), (2, 2)]
        assert {e["tool"] for e in progress.events} == {"mcp_demo_slow"}
        # crash was refused: the server was never asked and is still up
        assert hub.call_tool("mcp_demo_echo", {"text": "alive"})["content"][0]["text"] == "alive"


@pytest.mark.parametrize("factory", [create_agent, create_react_agent], ids=["create_agent", "create_react_agent"])
async def test_agent_turn_async(factory):
    async with mcpmux.AsyncHub.connect(hub_config()) as hub:
        policy = hub.policy()
        model = scripted(first_turn(), AIMessage(content="all done"))
        with pytest.warns(RuntimeWarning):
            tools = await mcpmux.langchain.tools(hub, policy=policy)
        agent = factory(model, tools)
        progress = Progress()
        final = await agent.ainvoke(
            {"messages": [HumanMessage("use the tools")]}, config={"callbacks": [progress]}
        )
        check_turn(model, final, policy)
        assert [(e["progress"], e["total"]) for e in progress.events] == [(1, 2), (2, 2)]
        assert (await hub.call_tool("mcp_demo_echo", {"text": "alive"}))["content"][0]["text"] == "alive"


async def test_progress_reaches_the_langgraph_custom_stream():
    async with mcpmux.AsyncHub.connect(hub_config()) as hub:
        call = AIMessage(content="", tool_calls=[{"id": "s", "name": "mcp_demo_slow", "args": {"seconds": 0.1, "steps": 3}}])
        with pytest.warns(RuntimeWarning):
            agent = create_agent(scripted(call, AIMessage(content="all done")), mcpmux.langchain.tools(hub))
        chunks = [c async for c in agent.astream({"messages": [HumanMessage("go")]}, stream_mode="custom")]
        progress = [c[mcpmux.langchain.PROGRESS_EVENT] for c in chunks if mcpmux.langchain.PROGRESS_EVENT in c]
        assert [(p["progress"], p["total"], p["message"]) for p in progress] == [
            (1, 3, "step 1"),
            (2, 3, "step 2"),
            (3, 3, "step 3"),
        ]


def test_limit_refusal_and_engine_error_reach_the_model():
    with mcpmux.Hub.connect(hub_config()) as hub:
        policy = hub.policy(max_tool_calls=1)
        calls = [
            {"id": "a", "name": "mcp_demo_echo", "args": {"text": "one"}},
            {"id": "b", "name": "mcp_demo_echo", "args": {"text": "two"}},
        ]
        model = scripted(AIMessage(content="", tool_calls=calls[:1]), AIMessage(content="", tool_calls=calls[1:]), AIMessage(content="all done"))
        with pytest.warns(RuntimeWarning):
            agent = create_agent(model, mcpmux.langchain.tools(hub, policy=policy))
        final = agent.invoke({"messages": [HumanMessage("go")]})
        assert final["messages"][-1].content == "all done"
        second = [m for m in model.seen[2] if isinstance(m, ToolMessage)][-1]
        assert second.status == "error" and second.content.startswith("LIMIT_EXCEEDED: ")


async def test_cancelling_the_agent_cancels_the_mcp_call(tmp_path):
    cancel_log = tmp_path / "cancelled.log"
    async with mcpmux.AsyncHub.connect(hang_config(cancel_log)) as hub:
        call = AIMessage(content="", tool_calls=[{"id": "h", "name": "mcp_hang_wait_forever", "args": {}}])
        agent = create_agent(scripted(call, AIMessage(content="never")), await mcpmux.langchain.tools(hub))
        task = asyncio.ensure_future(agent.ainvoke({"messages": [HumanMessage("go")]}))
        await asyncio.sleep(0.5)
        assert not task.done()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert len(await wait_for_lines(cancel_log, 1)) == 1
        assert (await hub.call_tool("mcp_demo_echo", {"text": "still up"}))["content"][0]["text"] == "still up"


async def test_tools_called_again_follow_tools_changed():
    async with mcpmux.AsyncHub.connect(hub_config()) as hub:
        with pytest.warns(RuntimeWarning):
            before = {t.name for t in await mcpmux.langchain.tools(hub)}
        await hub.call_tool("mcp_demo_grow")
        await wait_for_tool(hub, "mcp_demo_extra_1")
        with pytest.warns(RuntimeWarning):
            after = {t.name for t in await mcpmux.langchain.tools(hub)}
        assert after - before == {"mcp_demo_extra_1"}


async def test_each_tool_has_invoke_and_ainvoke_for_either_hub():
    call = {"type": "tool_call", "id": "1", "name": "mcp_demo_echo", "args": {"text": "both ways"}}
    with mcpmux.Hub.connect(hub_config()) as hub:
        with pytest.warns(RuntimeWarning):
            echo = next(t for t in mcpmux.langchain.tools(hub) if t.name == "mcp_demo_echo")
        assert (await echo.ainvoke(call)).content == "both ways"  # on the loop, cancellable
    async with mcpmux.AsyncHub.connect(hub_config()) as hub:
        with pytest.warns(RuntimeWarning):
            echo = next(t for t in await mcpmux.langchain.tools(hub) if t.name == "mcp_demo_echo")
        assert (await asyncio.to_thread(echo.invoke, call)).content == "both ways"
