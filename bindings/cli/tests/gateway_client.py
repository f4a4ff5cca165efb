"""Drives `mcpmux gateway` with the official MCP Python SDK client over
stdio: lists and calls tools of the servers behind it, gets progress, reads
a resource, gets a prompt, sees an unlisted tool refused, cancels a call,
and (when given a pid file) kills a server under the gateway and calls it
again. Prints one JSON summary line.

usage: gateway_client.py MCPMUX_BIN CONFIG [DEMO_PID_FILE]
"""
import asyncio
import json
import os
import signal
import sys

import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import get_default_environment, stdio_client


def text(result):
    return result.content[0].text if result.content else ""


async def main():
    binary, config = sys.argv[1:3]
    pid_file = sys.argv[3] if len(sys.argv) > 3 else None
    env = get_default_environment()
    params = StdioServerParameters(command=binary, args=["--config", config, "gateway"], env=env)
    summary = {}
    tools_changed = asyncio.Event()

    async def on_message(message):
        if isinstance(message, types.ServerNotification) and isinstance(
            message.root, types.ToolListChangedNotification
        ):
            tools_changed.set()

    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, message_handler=on_message) as session:
            init = await session.initialize()
            summary["server"] = init.serverInfo.name
            summary["capabilities"] = sorted(
                k for k, v in init.capabilities.model_dump().items() if v is not None
            )
            tools = await session.list_tools()
            summary["tools"] = sorted(t.name for t in tools.tools)

            added = await session.call_tool("mcp_demo_add", {"a": 2, "b": 3})
            summary["add"] = [text(added), added.structuredContent, added.isError]

            progress = []

            async def on_progress(value, total, message):
                progress.append([value, total, message])

            slow = await session.call_tool(
                "mcp_demo_slow", {"seconds": 0.4, "steps": 2}, progress_callback=on_progress
            )
            summary["slow"] = text(slow)
            summary["progress"] = progress

            resource = await session.read_resource("demo://readme")
            summary["resource"] = resource.contents[0].text[:40]
            prompts = await session.list_prompts()
            summary["prompts"] = sorted(p.name for p in prompts.prompts)
            prompt = await session.get_prompt("mcp_demo_greet", {"name": "Ada"})
            summary["prompt"] = prompt.messages[0].content.text

            # `grow` adds a tool: the gateway forwards list_changed, and the
            # next listing has it.
            await session.call_tool("mcp_demo_grow", {})
            await asyncio.wait_for(tools_changed.wait(), 30)
            relisted = await session.list_tools()
            summary["after_grow"] = "mcp_demo_extra_1" in [t.name for t in relisted.tools]

            for name in ("web", "legacy"):
                text_of = await session.call_tool("mcp_%s_echo" % name, {"text": "over " + {"web": "http", "legacy": "sse"}[name]})
                summary[name] = text(text_of)

            refused = await session.call_tool("mcp_hidden_echo", {"text": "x"})
            summary["refused"] = [text(refused).split(":")[0], refused.isError]

            # Cancel a call that never ends: the SDK numbers requests in
            # order, so the call's id is the counter before it is sent.
            request_id = session._request_id
            hanging = asyncio.ensure_future(session.call_tool("mcp_hang_wait_forever", {}))
            await asyncio.sleep(0.5)
            await session.send_notification(
                types.ClientNotification(
                    types.CancelledNotification(
                        params=types.CancelledNotificationParams(requestId=request_id, reason="test")
                    )
                )
            )
            hanging.cancel()
            summary["cancelled_id"] = request_id

            if pid_file:
                with open(pid_file) as f:
                    pid = int(f.read().strip())
                tools_changed.clear()
                os.kill(pid, signal.SIGKILL)
                # Once the gateway has reaped it, it knows the server is
                # gone (a call sent before that goes to the dead server).
                for _ in range(1000):
                    try:
                        os.kill(pid, 0)
                    except ProcessLookupError:
                        break
                    await asyncio.sleep(0.01)
                # The gateway restarts the server; the call waits for it.
                again = await session.call_tool("mcp_demo_echo", {"text": "back"})
                summary["after_kill"] = [text(again), again.isError]
                # The new process has no `extra_1`: the client is told.
                await asyncio.wait_for(tools_changed.wait(), 30)
    print(json.dumps(summary))


asyncio.run(main())
