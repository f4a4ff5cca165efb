"""mcpmux.pydantic_ai against the real Pydantic AI (pydantic-ai-slim, pinned
in requirements-frameworks.txt): whole ``Agent.run`` turns with its
``FunctionModel`` (no network, no key) over the demo server."""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Dict, List

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ToolCallPart  # noqa: E402
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402
from pydantic_ai.models.test import TestModel  # noqa: E402
from pydantic_ai.toolsets import AbstractToolset  # noqa: E402

import mcpmux  # noqa: E402
from mcpmux.pydantic_ai import HubProgress, HubToolset  # noqa: E402
from frameworks import FIRST_TURN, hang_config, hub_config, wait_for_lines, wait_for_tool  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:mcpmux. tools of failed servers:RuntimeWarning")


class Script:
    """A ``FunctionModel`` function: ``turns[i](messages)`` answers turn i;
    it records each turn's tool names and messages."""

    def __init__(self, *turns: Callable[..., Any]) -> None:
        self.turns = turns
        self.tools: List[List[str]] = []
        self.messages: List[List[Any]] = []

    async def __call__(self, messages: List[Any], info: AgentInfo) -> ModelResponse:
        self.tools.append([t.name for t in info.function_tools])
        self.messages.append(list(messages))
        answer = self.turns[len(self.messages) - 1](messages)
        if asyncio.iscoroutine(answer):
            answer = await answer
        return answer


def call(*items: Any) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart(tool_name=name, args=args, tool_call_id=cid) for cid, name, args in items])


def done(_: Any = None) -> ModelResponse:
    return ModelResponse(parts=[TextPart("all done")])


def returned(messages: List[Any]) -> Dict[str, Any]:
    """``tool_call_id -> (part kind, content text)`` of the last request."""
    request = messages[-1]
    assert isinstance(request, ModelRequest)
    found = {}
    for part in request.parts:
        if getattr(part, "tool_call_id", None):
            content = part.content if isinstance(part.content, str) else str(part.content)
            found[part.tool_call_id] = (part.part_kind, getattr(part, "outcome", None), content)
    return found


async def test_hub_toolset_offers_the_hubs_tools():
    async with mcpmux.AsyncHub.connect(hub_config()) as hub:
        toolset = HubToolset(hub)
        assert isinstance(toolset, AbstractToolset) and toolset.id == "mcpmux"
        # TestModel calls every tool it is given once with generated args; just list them here.
        script = Script(done)
        await Agent(FunctionModel(script), toolsets=[toolset]).run("list")
        assert script.tools[0] == [t["name"] for t in hub._native.list_tools() if t["server"] == "demo"]


@pytest.mark.parametrize("blocking", [False, True], ids=["AsyncHub", "Hub"])
async def test_agent_turn(blocking):
    hub = mcpmux.Hub.connect(hub_config()) if blocking else await mcpmux.AsyncHub.connect(hub_config())
    try:
        policy = hub.policy()
        script = Script(lambda _: call(*FIRST_TURN), done)
        agent = Agent(FunctionModel(script), toolsets=[HubToolset(hub, policy=policy)])
        progress: List[Any] = []
        async with agent.iter("use the tools") as run:
            async for node in run:
                if Agent.is_call_tools_node(node):  # its events: tool calls, results, custom events
                    async with node.stream(run.ctx) as events:
                        progress += [e async for e in events if isinstance(e, HubProgress)]
        result = run.result
        assert result.output == "all done"
        assert len(script.messages) == 2
        assert not any(name.startswith("mcp_broken_") for name in script.tools[0])
        got = returned(script.messages[1])
        assert set(got) == {cid for cid, _, _ in FIRST_TURN}
        kind, outcome, content = got["call_echo"]
        assert kind == "tool-return" and outcome in (None, "success")
        assert "hello from the model" in content and "untrusted-data-" in content
        assert "boom on purpose" in got["call_fail"][2]  # isError -> ModelRetry
        assert got["call_fail"][0] == "retry-prompt" or got["call_fail"][1] == "retried"
        assert "TOOL_NOT_ALLOWED: " in got["call_crash"][2] and "destructive" in got["call_crash"][2]
        assert "done after 0.2 s" in got["call_slow"][2]
        assert [(p.progress, p.total, p.tool_name) for p in progress] == [
            (1, 2, "mcp_demo_slow"),
            (2, 2, "mcp_demo_slow"),
        ]
        statuses = sorted((e["tool"], e["status"]) for e in policy.audit_events())
        assert statuses == sorted([("echo", "ok"), ("fail", "error"), ("crash", "not_allowed"), ("slow", "ok")])
        assert hub._native.servers()[0]["state"] == "connected"
    finally:
        if blocking:
            hub.close()
        else:
            await hub.close()


async def test_with_test_model():
    """Pydantic AI's TestModel calls each tool it is given (here only echo)."""
    async with mcpmux.AsyncHub.connect(hub_config()) as hub:
        toolset = HubToolset(hub).filtered(lambda ctx, tool_def: tool_def.name == "mcp_demo_echo")
        result = await Agent(TestModel(), toolsets=[toolset]).run("echo")
        assert "mcp_demo_echo" in result.output


async def test_tool_list_follows_tools_changed():
    async with mcpmux.AsyncHub.connect(hub_config()) as hub:

        async def grown(_: Any) -> ModelResponse:
            await wait_for_tool(hub, "mcp_demo_extra_1")
            return call(("e", "mcp_demo_echo", {"text": "x"}))

        script = Script(
            lambda _: call(("g", "mcp_demo_grow", {})),
            grown,
            lambda _: call(("x", "mcp_demo_extra_1", {"text": "from the new tool"})),
            done,
        )
        result = await Agent(FunctionModel(script), toolsets=[HubToolset(hub)]).run("grow")
        assert result.output == "all done"
        assert "mcp_demo_extra_1" not in script.tools[0]
        assert "mcp_demo_extra_1" in script.tools[2]
        assert "from the new tool" in returned(script.messages[3])["x"][2]


async def test_limit_refusal_reaches_the_model_without_ending_the_run():
    async with mcpmux.AsyncHub.connect(hub_config()) as hub:
        policy = hub.policy(max_tool_calls=1)
        script = Script(
            lambda _: call(("a", "mcp_demo_echo", {"text": "one"})),
            lambda _: call(("b", "mcp_demo_echo", {"text": "two"})),
            lambda _: call(("c", "mcp_demo_echo", {"text": "three"})),
            done,
        )
        result = await Agent(FunctionModel(script), toolsets=[HubToolset(hub, policy=policy)]).run("go")
        assert result.output == "all done"
        for turn, cid in ((2, "b"), (3, "c")):  # refusals spend no retry
            assert "LIMIT_EXCEEDED: " in returned(script.messages[turn])[cid][2]


async def test_cancelling_the_run_cancels_the_mcp_call(tmp_path):
    cancel_log = tmp_path / "cancelled.log"
    async with mcpmux.AsyncHub.connect(hang_config(cancel_log)) as hub:
        script = Script(lambda _: call(("h", "mcp_hang_wait_forever", {})), done)
        task = asyncio.ensure_future(Agent(FunctionModel(script), toolsets=[HubToolset(hub)]).run("go"))
        await asyncio.sleep(0.5)
        assert not task.done()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert len(await wait_for_lines(cancel_log, 1)) == 1
        assert (await hub.call_tool("mcp_demo_echo", {"text": "still up"}))["content"][0]["text"] == "still up"
