"""Drives `mcpmux gateway --http` with the official MCP Python SDK client
over Streamable HTTP: initializes a session with the bearer token, lists
and calls tools, gets progress, reads a resource. Prints one JSON summary
line.

usage: gateway_http_client.py URL TOKEN
"""
import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client


async def main():
    url, token = sys.argv[1:3]
    summary = {}
    headers = {"Authorization": "Bearer " + token}
    async with streamablehttp_client(url, headers=headers) as (read, write, get_session_id):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            summary["server"] = init.serverInfo.name
            summary["session"] = bool(get_session_id())
            tools = await session.list_tools()
            summary["tools"] = sorted(t.name for t in tools.tools)
            added = await session.call_tool("mcp_demo_add", {"a": 20, "b": 22})
            summary["add"] = [added.content[0].text, added.isError]
            progress = []

            async def on_progress(value, total, message):
                progress.append(value)

            slow = await session.call_tool(
                "mcp_demo_slow", {"seconds": 0.4, "steps": 2}, progress_callback=on_progress
            )
            summary["slow"] = slow.content[0].text
            summary["progress"] = progress
            resource = await session.read_resource("demo://readme")
            summary["resource"] = bool(resource.contents[0].text)
    print(json.dumps(summary))


asyncio.run(main())
