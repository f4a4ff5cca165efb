"""Drives `mcpmux gateway` (stdio) with the official MCP Python SDK client,
which answers elicitation and sampling: a server behind the gateway asks,
the gateway relays to this client, and the answer goes back to the server.
Prints one JSON summary line.

usage: gateway_relay_client.py MCPMUX_BIN CONFIG
"""
import asyncio
import json
import sys

import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import get_default_environment, stdio_client


async def on_elicit(context, params):
    return types.ElicitResult(action="accept", content={"answer": "from the client: " + params.message})


async def on_sample(context, params):
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text="sampled by the client"),
        model="test-model",
    )


async def ask(session, method, params):
    result = await session.call_tool("mcp_asks_ask", {"method": method, "params": params})
    return json.loads(result.content[0].text)


async def main():
    binary, config = sys.argv[1:3]
    params = StdioServerParameters(
        command=binary, args=["--config", config, "gateway"], env=get_default_environment()
    )
    summary = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(
            read, write, elicitation_callback=on_elicit, sampling_callback=on_sample
        ) as session:
            await session.initialize()
            summary["elicit"] = await ask(session, "elicitation/create", {
                "message": "which one?",
                "requestedSchema": {"type": "object", "properties": {"answer": {"type": "string"}}},
            })
            summary["sample"] = await ask(session, "sampling/createMessage", {
                "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                "maxTokens": 10,
            })
            # This client declared no roots: the usual error.
            summary["roots"] = await ask(session, "roots/list", {})
    print(json.dumps(summary))


asyncio.run(main())
