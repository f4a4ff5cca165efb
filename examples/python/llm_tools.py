"""Hand a hub's tools to an LLM API and run the calls it asks for.

The model is stood in for by a fixed list of tool calls, so this runs
offline; with a real client you would pass ``hub.tools_for("anthropic")`` as
``tools=`` and run each ``tool_use`` block the model returns.

    python examples/python/llm_tools.py
"""

import json
import os
from pathlib import Path

import mcpmux

ROOT = Path(__file__).resolve().parents[2]
DEMO = os.environ.get("MCPMUX_DEMO_SERVER", str(ROOT / "target" / "debug" / "mcpmux-demo-server"))

with mcpmux.Hub.connect({"mcpServers": {"demo": {"command": DEMO}}}) as hub:
    tools = hub.tools_for("anthropic")  # also "openai", "openai-responses", "mcp"
    print(f"{len(tools)} tools for the model, e.g.:")
    print(json.dumps(tools[0], indent=2)[:400])

    # What a model might answer with: tool_use blocks naming hub tools.
    tool_uses = [
        {"id": "toolu_1", "name": "mcp_demo_add", "input": {"a": 1, "b": 2}},
        {"id": "toolu_2", "name": "mcp_demo_echo", "input": {"text": "hi"}},
        {"id": "toolu_3", "name": "mcp_demo_missing", "input": {}},
    ]
    for use in tool_uses:
        try:
            result = hub.call_tool(use["name"], use["input"])
            text = "".join(c.get("text", "") for c in result["content"])
            block = {"type": "tool_result", "tool_use_id": use["id"], "content": text, "is_error": bool(result.get("isError"))}
        except mcpmux.McpmuxError as e:
            block = {"type": "tool_result", "tool_use_id": use["id"], "content": f"{e.code}: {e.message}", "is_error": True}
        print(json.dumps(block))
