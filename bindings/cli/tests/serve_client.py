"""Drives `mcpmux serve` with the official MCP Python SDK client through a
whole review: review_begin, review_wait (until done), review_reply,
review_wait, review_end, plus an error result. Prints one JSON summary line.

usage: serve_client.py MCPMUX_BIN CONFIG WORKING_DIR
"""
import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import get_default_environment, stdio_client


async def call(session, name, args):
    result = await session.call_tool(name, args)
    text = result.content[0].text
    return json.loads(text), result.isError


async def wait_done(session, session_dir):
    for _ in range(60):
        w, err = await call(session, "review_wait", {"session_dir": session_dir, "max_wait_seconds": 2})
        assert not err, w
        if w["status"] != "running":
            return w
    raise AssertionError("round never finished")


async def main():
    binary, config, working_dir = sys.argv[1:4]
    # The SDK's default environment, plus where the test keeps the session
    # key (never the real home's).
    env = get_default_environment()
    if "XDG_STATE_HOME" in os.environ:
        env["XDG_STATE_HOME"] = os.environ["XDG_STATE_HOME"]
    params = StdioServerParameters(command=binary, args=["--config", config, "serve"], env=env)
    summary = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            summary["server"] = init.serverInfo.name
            tools = await session.list_tools()
            summary["tools"] = sorted(t.name for t in tools.tools)
            begun, err = await call(session, "review_begin", {
                "skill": "review-plan",
                "input": "---\nUSER_REQUEST: add a flag\n---\n## PLAN\n1. do it\n",
                "working_dir": working_dir,
            })
            assert not err, begun
            summary["begin"] = begun
            w1 = await wait_done(session, begun["session_dir"])
            summary["wait1"] = {k: w1[k] for k in ("status", "next", "next_reason", "thread_id")}
            summary["verdict1"] = w1["review"]["verdict"]
            r, err = await call(session, "review_reply", {"session_dir": begun["session_dir"], "input": "Fixed. APPROVE_ME"})
            assert not err, r
            summary["reply"] = r
            w2 = await wait_done(session, begun["session_dir"])
            summary["wait2"] = {k: w2[k] for k in ("status", "next", "next_reason", "thread_id")}
            e, err = await call(session, "review_end", {"session_dir": begun["session_dir"]})
            assert not err, e
            summary["end"] = e
            bad, err = await call(session, "review_begin", {"skill": "review-nope", "input": "x", "working_dir": working_dir})
            summary["bad"] = {"isError": err, **bad}
    print(json.dumps(summary))


asyncio.run(main())
