"""mcpmux.openai_agents against the real OpenAI Agents SDK (pinned in
requirements-frameworks.txt): whole ``Runner.run`` turns with a fake
``Model`` (no network, no key) over the demo server."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Callable, List

import pytest

pytest.importorskip("agents")

from agents import Agent, RunConfig, Runner  # noqa: E402
from agents.items import ModelResponse  # noqa: E402
from agents.mcp import MCPServer  # noqa: E402
from agents.models.interface import Model  # noqa: E402
from agents.usage import Usage  # noqa: E402
from openai.types.responses import (  # noqa: E402
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

import mcpmux  # noqa: E402
from mcpmux.openai_agents import HubServer  # noqa: E402
from frameworks import FIRST_TURN, hang_config, hub_config, wait_for_lines, wait_for_tool  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:mcpmux. tools of failed servers:RuntimeWarning")

RUN = RunConfig(tracing_disabled=True)


def calls(*items: Any) -> List[Any]:
    return [
        ResponseFunctionToolCall(
            type="function_call", call_id=cid, name=name, arguments=json.dumps(args), id=f"fc_{cid}", status="completed"
        )
        for cid, name, args in items
    ]


def text(value: str) -> List[Any]:
    return [
        ResponseOutputMessage(
            id="msg_1",
            type="message",
            role="assistant",
            status="completed",
            content=[ResponseOutputText(type="output_text", text=value, annotations=[])],
        )
    ]


class FakeModel(Model):
    """A scripted model: each turn, ``script(turn, input, tool_names)`` gives
    the output items; every turn's input and tool names are recorded."""

    def __init__(self, script: Callable[..., Any]) -> None:
        self.script = script
        self.inputs: List[Any] = []
        self.tools: List[List[str]] = []

    async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs, tracing, **kwargs):  # noqa: D401
        self.inputs.append(input)
        self.tools.append([t.name for t in tools])
        output = self.script(len(self.inputs) - 1)
        if asyncio.iscoroutine(output):
            output = await output
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:  # not used: Runner.run does not stream
        raise NotImplementedError


def outputs(model_input: Any) -> dict:
    """``call_id -> output text`` of the function call outputs the model got."""
    found = {}
    for item in model_input:
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            out = item["output"]
            found[item["call_id"]] = out if isinstance(out, str) else json.dumps(out)
    return found


async def test_hub_server_is_an_mcp_server_with_the_hubs_tools():
    async with mcpmux.AsyncHub.connect(hub_config()) as hub:
        server = HubServer(hub)
        assert isinstance(server, MCPServer) and server.name == "mcpmux"
        assert HubServer(hub, name="tools").name == "tools"
        tools = await server.list_tools()
        assert [t.name for t in tools] == [t["name"] for t in hub._native.list_tools() if t["server"] == "demo"]
        echo = next(t for t in tools if t.name == "mcp_demo_echo")
        assert echo.inputSchema["properties"]["text"]["type"] == "string"
        assert echo.annotations.readOnlyHint is True


@pytest.mark.parametrize("blocking", [False, True], ids=["AsyncHub", "Hub"])
async def test_agent_turn(blocking):
    connect = mcpmux.Hub.connect if blocking else None
    hub = connect(hub_config()) if blocking else await mcpmux.AsyncHub.connect(hub_config())
    try:
        policy = hub.policy()
        model = FakeModel(lambda turn: calls(*FIRST_TURN) if turn == 0 else text("all done"))
        agent = Agent(name="tester", model=model, mcp_servers=[HubServer(hub, policy=policy)])
        result = await Runner.run(agent, "use the tools", run_config=RUN)

        assert result.final_output == "all done"
        assert len(model.inputs) == 2
        assert {"mcp_demo_echo", "mcp_demo_fail", "mcp_demo_crash"} <= set(model.tools[0])
        assert not any(name.startswith("mcp_broken_") for name in model.tools[0])
        got = outputs(model.inputs[1])
        assert set(got) == {cid for cid, _, _ in FIRST_TURN}
        assert "hello from the model" in got["call_echo"] and "untrusted-data-" in got["call_echo"]
        assert "boom on purpose" in got["call_fail"]  # isError text, not the SDK's hidden error
        assert "TOOL_NOT_ALLOWED: " in got["call_crash"] and "destructive" in got["call_crash"]
        assert "done after 0.2 s" in got["call_slow"]
        statuses = sorted((e["tool"], e["status"]) for e in policy.audit_events())
        assert statuses == sorted([("echo", "ok"), ("fail", "error"), ("crash", "not_allowed"), ("slow", "ok")])
        # crash was refused: the server was never asked and is still up
        assert hub._native.servers()[0]["state"] == "connected"
    finally:
        if blocking:
            hub.close()
        else:
            await hub.close()


async def test_tool_list_follows_tools_changed():
    async with mcpmux.AsyncHub.connect(hub_config()) as hub:

        async def script(turn: int) -> List[Any]:
            if turn == 0:
                return calls(("g", "mcp_demo_grow", {}))
            if turn == 1:
                await wait_for_tool(hub, "mcp_demo_extra_1")
                return calls(("e", "mcp_demo_echo", {"text": "x"}))
            if turn == 2:
                return calls(("x", "mcp_demo_extra_1", {"text": "from the new tool"}))
            return text("all done")

        model = FakeModel(script)
        agent = Agent(name="tester", model=model, mcp_servers=[HubServer(hub)])
        result = await Runner.run(agent, "grow", run_config=RUN)
        assert result.final_output == "all done"
        assert "mcp_demo_extra_1" not in model.tools[0]
        assert "mcp_demo_extra_1" in model.tools[2]
        assert outputs(model.inputs[3])["x"].count("from the new tool") == 1


async def test_limit_refusal_reaches_the_model():
    async with mcpmux.AsyncHub.connect(hub_config()) as hub:
        policy = hub.policy(max_tool_calls=1)
        script = [calls(("a", "mcp_demo_echo", {"text": "one"})), calls(("b", "mcp_demo_echo", {"text": "two"})), text("ok")]
        model = FakeModel(lambda turn: script[turn])
        agent = Agent(name="tester", model=model, mcp_servers=[HubServer(hub, policy=policy)])
        result = await Runner.run(agent, "go", run_config=RUN)
        assert result.final_output == "ok"
        assert outputs(model.inputs[2])["b"].find("LIMIT_EXCEEDED: ") >= 0


async def test_cancelling_the_run_cancels_the_mcp_call(tmp_path):
    cancel_log = tmp_path / "cancelled.log"
    async with mcpmux.AsyncHub.connect(hang_config(cancel_log)) as hub:
        model = FakeModel(lambda turn: calls(("h", "mcp_hang_wait_forever", {})) if turn == 0 else text("never"))
        agent = Agent(name="tester", model=model, mcp_servers=[HubServer(hub)])
        task = asyncio.ensure_future(Runner.run(agent, "go", run_config=RUN))
        await asyncio.sleep(0.5)
        assert not task.done()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert len(await wait_for_lines(cancel_log, 1)) == 1
        assert (await hub.call_tool("mcp_demo_echo", {"text": "still up"}))["content"][0]["text"] == "still up"
