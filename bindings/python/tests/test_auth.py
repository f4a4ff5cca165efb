"""OAuth from Python: the ``authorize`` callable is the person in the loop.

Against tests/servers/net/oauth_server.py (an authorization server and a
protected MCP endpoint, standard library only): the callable gets the
authorization URL, follows the server's immediate approval as a browser
would, and returns the redirect; the hub then calls the protected tool.
Without a callable the server fails with ``AuthRequired``; a callable that
raises gives ``AuthFailed``.
"""

from __future__ import annotations

import asyncio
import http.client
import subprocess
import sys
import urllib.parse

import pytest

import mcpmux
from conftest import SERVERS


@pytest.fixture
def oauth_server(tmp_path, monkeypatch):
    # Tokens go to a private store in the test's own directory.
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    proc = subprocess.Popen(
        [sys.executable, str(SERVERS / "net" / "oauth_server.py")],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith("READY "), line
        yield f"http://127.0.0.1:{int(line.split()[1])}"
    finally:
        proc.kill()
        proc.wait()


def oauth_config(base: str) -> dict:
    return {"mcpServers": {"secure": {"url": base + "/mcp", "auth": {"type": "oauth"}}}}


def browser(calls: list):
    def authorize(url: str, redirect_uri: str, server: str) -> str:
        calls.append((server, redirect_uri))
        parts = urllib.parse.urlsplit(url)
        conn = http.client.HTTPConnection(parts.netloc, timeout=10)
        conn.request("GET", parts.path + "?" + parts.query)
        response = conn.getresponse()
        assert response.status == 302
        return response.getheader("Location")

    return authorize


def test_authorize_callable_sync(oauth_server):
    calls: list = []
    with mcpmux.Hub.connect(oauth_config(oauth_server), authorize=browser(calls)) as hub:
        assert hub.servers()[0]["state"] == "connected", hub.servers()
        result = hub.call_tool("mcp_secure_echo", {"x": 1})
        assert result["content"][0]["text"] == '{"x":1}'
    assert len(calls) == 1 and calls[0][0] == "secure"


def test_authorize_callable_async(oauth_server):
    calls: list = []

    async def main():
        async with mcpmux.AsyncHub.connect(oauth_config(oauth_server), authorize=browser(calls)) as hub:
            servers = await hub.servers()
            assert servers[0]["state"] == "connected", servers

    asyncio.run(main())
    assert len(calls) == 1


def test_without_or_with_a_failing_callable(oauth_server):
    with mcpmux.Hub.connect(oauth_config(oauth_server)) as hub:
        status = hub.servers()[0]
        assert status["state"] == "failed" and status["error_code"] == "AUTH_REQUIRED", status
        with pytest.raises((mcpmux.AuthRequired, mcpmux.UnknownTool)):
            hub.call_tool("mcp_secure_echo", {})

    def refuse(url, redirect_uri, server):
        raise RuntimeError("the user closed the browser")

    with mcpmux.Hub.connect(oauth_config(oauth_server), authorize=refuse) as hub:
        status = hub.servers()[0]
        assert status["error_code"] == "AUTH_FAILED", status
        assert "closed the browser" in status["error"]
