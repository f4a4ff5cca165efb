"""The network policy through Python: ``Hub.connect(deny_private=...,
allow_networks=..., require_https=...)`` and the config's ``network``
table, against a hostile server on loopback (tests/servers/net/faults.py).
A refused server is ``failed`` like an unreachable one, naming the server,
the host and the address; the demo server in the same hub keeps working."""

from __future__ import annotations

import subprocess
import sys

import pytest

import mcpmux
from conftest import SERVERS, demo

REFUSED = "refused by the [network] policy"


@pytest.fixture
def hostile():
    """A correct minimal Streamable HTTP server on 127.0.0.1; its port."""
    proc = subprocess.Popen(
        [sys.executable, str(SERVERS / "net" / "faults.py"), "--fault", "500", "--on", "call"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith("READY "), line
        yield int(line.split()[1])
    finally:
        proc.kill()
        proc.wait()


def _config(port: int, host: str = "127.0.0.1", network=None) -> dict:
    config = {
        "mcp": {"restart": "never"},
        "mcpServers": {
            "demo": demo(),
            "local": {"type": "http", "url": f"http://{host}:{port}/mcp"},
        },
    }
    if network is not None:
        config["network"] = network
    return config


def _status(hub, name):
    return next(s for s in hub.servers() if s["name"] == name)


def _assert_refused(hub, connecting_to):
    assert _status(hub, "demo")["state"] == "connected"
    s = _status(hub, "local")
    assert s["state"] == "failed", s
    assert s["error_code"] == "CONNECT_FAILED", s
    assert "server 'local'" in s["error"], s
    assert f"connecting to {connecting_to}" in s["error"], s
    assert "loopback" in s["error"] and REFUSED in s["error"], s


def test_deny_private_refuses_loopback_and_a_name_resolving_there(hostile):
    hub = mcpmux.Hub.connect(_config(hostile), deny_private=True)
    try:
        _assert_refused(hub, "127.0.0.1 is refused")
        with pytest.warns(RuntimeWarning, match="local"):
            assert [t["name"] for t in hub.list_tools() if t["server"] == "local"] == []
    finally:
        hub.close()
    hub = mcpmux.Hub.connect(_config(hostile, "localhost"), deny_private=True)
    try:
        _assert_refused(hub, "localhost (it resolves to ")
    finally:
        hub.close()


def test_allow_networks_let_a_listed_network_through(hostile):
    hub = mcpmux.Hub.connect(_config(hostile, "localhost"), deny_private=True, allow_networks=["127.0.0.0/8"])
    try:
        assert _status(hub, "local")["state"] == "connected"
    finally:
        hub.close()


def test_the_config_network_table_and_require_https(hostile):
    hub = mcpmux.Hub.connect(_config(hostile, network={"deny_private": True}))
    try:
        _assert_refused(hub, "127.0.0.1 is refused")
    finally:
        hub.close()
    hub = mcpmux.Hub.connect(
        _config(hostile, network={"allow_networks": ["127.0.0.0/8"]}),
        deny_private=True,
        require_https=True,
    )
    try:
        s = _status(hub, "local")
        assert s["state"] == "failed" and "require_https" in s["error"], s
    finally:
        hub.close()


async def test_async_hub_takes_the_same_options(hostile):
    hub = await mcpmux.AsyncHub.connect(_config(hostile), deny_private=True)
    try:
        statuses = {s["name"]: s for s in await hub.servers()}
        assert statuses["demo"]["state"] == "connected"
        local = statuses["local"]
        assert local["state"] == "failed" and REFUSED in local["error"], local
        assert "connecting to 127.0.0.1 is refused" in local["error"], local
    finally:
        await hub.close()


def test_bad_network_options_are_invalid_input(hostile):
    with pytest.raises(mcpmux.InvalidInput, match=r"allow_networks'\[0\] '10.1.2.0/33'"):
        mcpmux.Hub.connect(_config(hostile), deny_private=True, allow_networks=["10.1.2.0/33"])
    with pytest.raises(mcpmux.InvalidInput, match="allow_networks"):
        mcpmux.Hub.connect(_config(hostile), allow_networks="10.0.0.0/8")
    with pytest.raises(mcpmux.InvalidInput, match="deny_private"):
        mcpmux.Hub.connect(_config(hostile), deny_private="yes")
    with pytest.raises(mcpmux.ConfigInvalid, match="did you mean 'deny_private'"):
        mcpmux.Hub.connect(_config(hostile, network={"deny_privat": True}))
