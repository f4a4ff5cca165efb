"""The same API over the network transports: server-everything over
Streamable HTTP and legacy SSE (on 127.0.0.1)."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import time

import pytest

import mcpmux
from conftest import EVERYTHING, config


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(params=[("streamableHttp", "/mcp", "http"), ("sse", "/sse", "sse")], ids=["http", "sse"])
def network_server(request):
    mode, path, kind = request.param
    for _ in range(5):  # the server cannot bind port 0; retry on a clash
        port = _free_port()
        proc = subprocess.Popen(
            ["node", str(EVERYTHING), mode],
            env={**os.environ, "PORT": str(port)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 15
        ready = False
        while time.monotonic() < deadline and proc.poll() is None:
            line = proc.stderr.readline()
            if str(port) in line:
                ready = True
                break
        if ready:
            break
        proc.kill()
        proc.wait()
    else:
        pytest.fail(f"server-everything {mode} did not start")
    try:
        yield f"http://127.0.0.1:{port}{path}", kind
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_sync_over_the_network(network_server):
    url, kind = network_server
    with mcpmux.Hub.connect(config(e={"url": url})) as hub:
        [status] = hub.servers()
        assert status["state"] == "connected", status
        assert status["type"] == kind
        assert "mcp_e_echo" in [t["name"] for t in hub.list_tools()]
        assert hub.call_tool("mcp_e_echo", {"message": "net"})["content"][0]["text"] == "Echo: net"
        seen = []
        hub.call_tool(
            "mcp_e_trigger-long-running-operation",
            {"duration": 0.3, "steps": 3},
            on_progress=lambda p, t, m: seen.append(p),
        )
        assert len(seen) == 3


async def test_async_over_the_network(network_server):
    url, _ = network_server
    async with mcpmux.AsyncHub.connect(config(e={"url": url})) as hub:
        results = await asyncio.gather(*(hub.call_tool("mcp_e_echo", {"message": str(i)}) for i in range(50)))
        assert [r["content"][0]["text"] for r in results] == [f"Echo: {i}" for i in range(50)]
        task = asyncio.ensure_future(
            hub.call_tool("mcp_e_trigger-long-running-operation", {"duration": 30, "steps": 30})
        )
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert (await hub.call_tool("mcp_e_echo", {"message": "after"}))["content"][0]["text"] == "Echo: after"
