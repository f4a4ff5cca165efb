"""A LangChain agent (``langchain.agents.create_agent``) using a hub's tools.

Offline by default: a fake chat model asks for two tool calls (one the
policy refuses), then reads the results. With ``OPENAI_API_KEY`` set (and
``pip install langchain-openai``) a real model runs the same agent
(``MCPMUX_EXAMPLE_MODEL``, default ``openai:gpt-5-mini``).

    pip install langchain langchain-core langgraph
    python examples/python/frameworks/langchain_agent.py
"""

import os
from pathlib import Path

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage

import mcpmux
import mcpmux.langchain

ROOT = Path(__file__).resolve().parents[3]
DEMO = os.environ.get("MCPMUX_DEMO_SERVER", str(ROOT / "target" / "debug" / "mcpmux-demo-server"))


class FakeToolModel(GenericFakeChatModel):
    """LangChain's fake chat model, made to accept tools."""

    def bind_tools(self, tools, **kwargs):
        return self


def model():
    if os.environ.get("OPENAI_API_KEY"):
        from langchain.chat_models import init_chat_model

        return init_chat_model(os.environ.get("MCPMUX_EXAMPLE_MODEL", "openai:gpt-5-mini"))
    calls = [
        {"id": "1", "name": "mcp_demo_add", "args": {"a": 2, "b": 40}},
        {"id": "2", "name": "mcp_demo_crash", "args": {}},  # destructive: the policy refuses it
    ]
    return FakeToolModel(
        messages=iter([AIMessage(content="", tool_calls=calls), AIMessage(content="2 + 40 = 42")]),
        disable_streaming=True,
    )


# allow_all: every tool but the destructive ones (crash) may be called.
config = {"mcpServers": {"demo": {"command": DEMO, "allow_all": True}}}
with mcpmux.Hub.connect(config) as hub:
    policy = hub.policy(max_tool_calls=10)
    agent = create_agent(model(), mcpmux.langchain.tools(hub, policy=policy))
    state = agent.invoke({"messages": [HumanMessage("What is 2 + 40? Use the tools.")]})
    for message in state["messages"]:
        print(f"{message.type:>5}: {str(message.content)[:160]!r}")
    print("audit:", [(e["tool"], e["status"]) for e in policy.audit_events()])
