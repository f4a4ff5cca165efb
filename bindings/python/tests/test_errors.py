"""Errors: one exception class per stable code, raised where the engine says."""

from __future__ import annotations

import pickle

import pytest

import mcpmux
from conftest import config, demo, everything, fault


@pytest.fixture(scope="module")
def hub():
    with mcpmux.Hub.connect(config(demo=demo(), hang=fault("hang.py"))) as h:
        yield h


def test_every_code_has_its_class():
    classes = {
        "CONFIG_INVALID": mcpmux.ConfigInvalid,
        "INVALID_INPUT": mcpmux.InvalidInput,
        "UNKNOWN_SERVER": mcpmux.UnknownServer,
        "UNKNOWN_TOOL": mcpmux.UnknownTool,
        "TOOL_NOT_ALLOWED": mcpmux.ToolNotAllowed,
        "CONNECT_FAILED": mcpmux.ConnectFailed,
        "TRANSPORT_CLOSED": mcpmux.TransportClosed,
        "TIMEOUT": mcpmux.Timeout,
        "CANCELLED": mcpmux.Cancelled,
        "PROTOCOL_ERROR": mcpmux.ProtocolError,
        "SERVER_ERROR": mcpmux.ServerError,
        "LIMIT_EXCEEDED": mcpmux.LimitExceeded,
        "PROVIDER_ERROR": mcpmux.ProviderError,
        "UNKNOWN_SKILL": mcpmux.UnknownSkill,
        "REVIEWER_NOT_FOUND": mcpmux.ReviewerNotFound,
        "INVALID_SESSION": mcpmux.InvalidSession,
        "ROUND_STILL_RUNNING": mcpmux.RoundStillRunning,
        "INTERNAL": mcpmux.Internal,
        "AUTH_REQUIRED": mcpmux.AuthRequired,
        "AUTH_FAILED": mcpmux.AuthFailed,
        "CONFIG_UNTRUSTED": mcpmux.ConfigUntrusted,
        "OUTPUT_INVALID": mcpmux.OutputInvalid,
        "TOOL_CHANGED": mcpmux.ToolChanged,
    }
    # The engine's own list of codes, and nothing more or less.
    assert set(mcpmux.ERROR_CODES) == set(classes)
    for code, cls in classes.items():
        assert issubclass(cls, mcpmux.McpmuxError)
        assert cls.code == code
        e = cls("boom")
        assert e.code == code and e.message == "boom" and str(e) == "boom"
        copy = pickle.loads(pickle.dumps(e))
        assert type(copy) is cls and copy.code == code and copy.message == "boom"


def test_config_invalid():
    with pytest.raises(mcpmux.ConfigInvalid) as info:
        mcpmux.Hub.connect("[[mcp.servers]]\nname = 1\n")
    assert info.value.code == "CONFIG_INVALID"
    assert "name" in info.value.message
    with pytest.raises(mcpmux.ConfigInvalid, match="no servers"):
        mcpmux.Hub.connect({"servers": []})
    with pytest.raises(mcpmux.ConfigInvalid, match="cannot read config file"):
        mcpmux.Hub.connect("/no/such/mcpmux.toml")
    with pytest.raises(mcpmux.ConfigInvalid, match="MCPMUX_SURELY_UNSET_VAR"):
        mcpmux.Hub.connect(config(demo={"command": "${MCPMUX_SURELY_UNSET_VAR}"}))
    # also a ValueError, for code that catches that
    with pytest.raises(ValueError):
        mcpmux.Hub.connect("{not json")


def test_unknown_tool(hub):
    with pytest.raises(mcpmux.UnknownTool) as info:
        hub.call_tool("mcp_demo_does_not_exist", {})
    assert info.value.code == "UNKNOWN_TOOL"
    assert "mcp_demo_does_not_exist" in info.value.message


def test_unknown_server(hub):
    with pytest.raises(mcpmux.UnknownServer, match="nope"):
        hub.list_resources(server="nope")
    with pytest.raises(mcpmux.UnknownServer):
        hub.refresh("nope")


def test_timeout_cancels_on_the_server(tmp_path):
    log = tmp_path / "cancelled.log"
    with mcpmux.Hub.connect(config(hang=fault("hang.py", env={"HANG_CANCEL_LOG": str(log)}))) as h:
        with pytest.raises(mcpmux.Timeout) as info:
            h.call_tool("mcp_hang_wait_forever", timeout=0.3)
        assert info.value.code == "TIMEOUT"
        assert "wait_forever" in info.value.message or "tools/call" in info.value.message
        from conftest import read_lines, wait_until

        assert wait_until(lambda: len(read_lines(log)) == 1, 5), "server never got notifications/cancelled"


def test_transport_closed_when_the_server_crashes(hub):
    # restart="never": the crashed server stays failed instead of coming back.
    with mcpmux.Hub.connect(config(demo=demo(restart="never"))) as h:
        with pytest.raises(mcpmux.TransportClosed) as info:
            h.call_tool("mcp_demo_crash")
        assert info.value.code == "TRANSPORT_CLOSED"
        assert "exit" in info.value.message
        assert h.servers()[0]["state"] == "failed"
        assert h.servers()[0]["error_code"] == "TRANSPORT_CLOSED"
        with pytest.raises(mcpmux.TransportClosed):
            h.call_tool("mcp_demo_echo", {"text": "x"})
        h.refresh("demo")  # and it can come back
        assert h.call_tool("mcp_demo_echo", {"text": "back"})["content"][0]["text"] == "back"


def test_server_error_carries_the_rpc_code(hub):
    with pytest.raises(mcpmux.ServerError) as info:
        hub.read_resource("demo://nothing-here", server="demo")
    e = info.value
    assert e.code == "SERVER_ERROR" and e.rpc_code == -32002
    assert "demo://nothing-here" in e.message
    with pytest.raises(mcpmux.ServerError) as info:
        hub.get_prompt("greet", {}, server="demo")
    assert info.value.rpc_code == -32602


@pytest.mark.parametrize(
    "call, needle",
    [
        (lambda h: h.call_tool(42), "argument 'name' must be a str, not 'int'"),
        (lambda h: h.call_tool("mcp_demo_echo", [1]), "argument 'arguments' must be a dict"),
        (lambda h: h.call_tool("mcp_demo_echo", {"text": {1, 2}}), "argument 'arguments'[\"text\"]: cannot convert 'set'"),
        (lambda h: h.call_tool("mcp_demo_echo", {"a": [0, {"b": float("nan")}]}), "[\"a\"][1][\"b\"]: NaN"),
        (lambda h: h.call_tool("mcp_demo_echo", {1: "x"}), "dict keys must be str"),
        (lambda h: h.call_tool("mcp_demo_echo", {"n": 2**70}), "does not fit in 64 bits"),
        (lambda h: h.call_tool("mcp_demo_echo", {"text": "x"}, timeout=-1), "argument 'timeout' must be a positive number"),
        (lambda h: h.call_tool("mcp_demo_echo", {"text": "x"}, timeout="1"), "argument 'timeout'"),
        (lambda h: h.call_tool("mcp_demo_echo", {"text": "x"}, timeout=True), "argument 'timeout'"),
        (lambda h: h.call_tool("mcp_demo_echo", {"text": "x"}, on_progress=3), "argument 'on_progress' must be callable"),
        (lambda h: h.tools_for("yaml"), "yaml"),
        (lambda h: h.tools_for(None), "argument 'format' must be a str"),
        (lambda h: h.read_resource(7), "argument 'uri' must be a str"),
        (lambda h: h.list_prompts(server=5), "argument 'server' must be a str or None"),
        (lambda h: h.get_prompt("greet", "Ada"), "argument 'arguments' must be a dict"),
    ],
)
def test_invalid_input_names_the_argument(hub, call, needle):
    with pytest.raises(mcpmux.InvalidInput) as info:
        call(hub)
    assert info.value.code == "INVALID_INPUT"
    assert needle in info.value.message
    assert isinstance(info.value, ValueError) and isinstance(info.value, TypeError)


def test_invalid_input_for_cycles_and_bad_config_types(hub):
    cyclic: dict = {}
    cyclic["self"] = cyclic
    with pytest.raises(mcpmux.InvalidInput, match="nested deeper"):
        hub.call_tool("mcp_demo_echo", cyclic)
    with pytest.raises(mcpmux.InvalidInput, match="argument 'config'"):
        mcpmux.Hub.connect(42)
    with pytest.raises(mcpmux.InvalidInput):
        mcpmux.Hub(None)


def test_invalid_arguments_rejected_by_the_server_are_results_or_errors():
    # server-everything answers bad arguments with an isError result
    with mcpmux.Hub.connect(config(everything=everything())) as h:
        result = h.call_tool("mcp_everything_get-sum", {"a": "x"})
        assert result["isError"] is True


def test_protocol_error_from_garbage():
    with mcpmux.Hub.connect(config(g=fault("garbage_stdout.py"))) as h:
        with pytest.raises(mcpmux.McpmuxError) as info:
            h.call_tool("mcp_g_garble", timeout=5)
        assert info.value.code in ("PROTOCOL_ERROR", "TIMEOUT", "TRANSPORT_CLOSED")


@pytest.mark.parametrize(
    "text",
    [
        '{"content":[{"type":"text","text":"hi"}],"isError":false}',
        '{"a":[1,-2,3.5,-0.0,1e-7,true,false,null,"x\\u00e9\\ud83d\\ude00\\n"],"b":{},"c":[]}',
        '{"big":123456789012345678901234567890,"neg":-98765432109876543210}',
        '{"max":18446744073709551615,"min":-9223372036854775808,"f":1e300}',
        '{"dup":1,"dup":2}',
        '"\\ud800 lone surrogate"',
        "[" * 200 + "]" * 200,
        '  {"space" : [ 1 , 2 ]}  ',
    ],
)
def test_results_parse_exactly_like_json_loads(text):
    import json

    from mcpmux import _native

    assert _native._json_loads(text) == json.loads(text)
    assert repr(_native._json_loads(text)) == repr(json.loads(text))
