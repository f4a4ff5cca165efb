"""A Pydantic AI agent using a hub as a toolset.

Offline by default: a ``FunctionModel`` asks for two tool calls (one the
policy refuses), then answers. With ``OPENAI_API_KEY`` set, a real model
runs the same agent (``MCPMUX_EXAMPLE_MODEL``, default ``openai:gpt-5-mini``;
needs ``pip install "pydantic-ai-slim[openai]"``).

    pip install pydantic-ai-slim
    python examples/python/frameworks/pydantic_ai_agent.py
"""

import asyncio
import os
from pathlib import Path

from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import mcpmux
from mcpmux.pydantic_ai import HubToolset

ROOT = Path(__file__).resolve().parents[3]
DEMO = os.environ.get("MCPMUX_DEMO_SERVER", str(ROOT / "target" / "debug" / "mcpmux-demo-server"))


def fake_model(messages, info: AgentInfo) -> ModelResponse:
    """Turn 1: call two tools; turn 2: answer with what came back."""
    if len(messages) == 1:
        return ModelResponse(parts=[
            ToolCallPart(tool_name="mcp_demo_add", args={"a": 2, "b": 40}, tool_call_id="1"),
            ToolCallPart(tool_name="mcp_demo_crash", args={}, tool_call_id="2"),
        ])
    said = "; ".join(str(p.content)[-80:] for p in messages[-1].parts)
    return ModelResponse(parts=[TextPart(f"tools said: {said}")])


async def main():
    real = bool(os.environ.get("OPENAI_API_KEY"))
    model = os.environ.get("MCPMUX_EXAMPLE_MODEL", "openai:gpt-5-mini") if real else FunctionModel(fake_model)
    config = {"mcpServers": {"demo": {"command": DEMO, "allow_all": True}}}
    async with mcpmux.AsyncHub.connect(config) as hub:
        policy = hub.policy(max_tool_calls=10)
        agent = Agent(model, toolsets=[HubToolset(hub, policy=policy)], instructions="Use the tools.")
        result = await agent.run("What is 2 + 40?")
        print(result.output)
        print("audit:", [(e["tool"], e["status"]) for e in policy.audit_events()])


asyncio.run(main())
