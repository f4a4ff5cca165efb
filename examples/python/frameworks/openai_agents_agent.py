"""An OpenAI Agents SDK agent using a hub as its MCP server.

Offline by default: a fake ``Model`` asks for two tool calls (one the policy
refuses), then answers. With ``OPENAI_API_KEY`` set, a real model runs the
same agent (``MCPMUX_EXAMPLE_MODEL``, default ``gpt-5-mini``).

    pip install openai-agents
    python examples/python/frameworks/openai_agents_agent.py
"""

import asyncio
import json
import os
from pathlib import Path

from agents import Agent, RunConfig, Runner
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

import mcpmux
from mcpmux.openai_agents import HubServer

ROOT = Path(__file__).resolve().parents[3]
DEMO = os.environ.get("MCPMUX_DEMO_SERVER", str(ROOT / "target" / "debug" / "mcpmux-demo-server"))


class FakeModel(Model):
    """Turn 1: call two tools; turn 2: answer with what came back."""

    async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs, tracing, **kwargs):
        results = [i for i in input if isinstance(i, dict) and i.get("type") == "function_call_output"]
        if not results:
            output = [
                ResponseFunctionToolCall(type="function_call", call_id=cid, name=name, arguments=json.dumps(args))
                for cid, name, args in [("1", "mcp_demo_add", {"a": 2, "b": 40}), ("2", "mcp_demo_crash", {})]
            ]
        else:
            text = "; ".join(str(r["output"])[-80:] for r in results)
            output = [
                ResponseOutputMessage(
                    id="m", type="message", role="assistant", status="completed",
                    content=[ResponseOutputText(type="output_text", text=f"tools said: {text}", annotations=[])],
                )
            ]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError


async def main():
    real = bool(os.environ.get("OPENAI_API_KEY"))
    model = os.environ.get("MCPMUX_EXAMPLE_MODEL", "gpt-5-mini") if real else FakeModel()
    config = {"mcpServers": {"demo": {"command": DEMO, "allow_all": True}}}
    async with mcpmux.AsyncHub.connect(config) as hub:
        policy = hub.policy(max_tool_calls=10)
        agent = Agent(name="calculator", instructions="Use the tools.", model=model,
                      mcp_servers=[HubServer(hub, policy=policy)])
        result = await Runner.run(agent, "What is 2 + 40?", run_config=RunConfig(tracing_disabled=not real))
        print(result.final_output)
        print("audit:", [(e["tool"], e["status"]) for e in policy.audit_events()])


asyncio.run(main())
