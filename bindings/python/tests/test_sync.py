"""The blocking API (mcpmux.Hub) against the demo server and server-everything."""

from __future__ import annotations

import json
import subprocess
import threading
import time
import warnings
from pathlib import Path

import pytest

import mcpmux
from conftest import CLI, DEMO, config, demo, everything


@pytest.fixture(scope="module")
def hub():
    with mcpmux.Hub.connect(config(demo=demo(), everything=everything())) as h:
        yield h


def test_connect_lists_both_servers(hub):
    servers = hub.servers()
    assert [s["name"] for s in servers] == ["demo", "everything"]
    assert all(s["state"] == "connected" for s in servers), servers
    assert servers[0]["type"] == "stdio"
    assert servers[0]["server_info"]["name"] == "mcpmux-demo-server"
    assert servers[0]["tool_count"] == 7
    assert servers[0]["error"] is None and servers[0]["error_code"] is None


def test_servers_and_tools_match_the_cli(tmp_path: Path):
    path = tmp_path / "mcpmux.json"
    path.write_text(json.dumps(config(demo=demo(), everything=everything())))
    cli_servers = json.loads(
        subprocess.run([CLI, "--config", str(path), "--json", "servers"], capture_output=True, check=True).stdout
    )
    cli_tools = json.loads(
        subprocess.run([CLI, "--config", str(path), "--json", "tools"], capture_output=True, check=True).stdout
    )
    # The CLI answers elicitation (at a terminal, else it declines), so
    # server-everything offers it its elicitation tool: declare the same.
    with mcpmux.Hub.connect(path, on_elicitation=lambda params: {"action": "decline"}) as hub:
        assert hub.servers() == cli_servers
        assert hub.list_tools() == cli_tools


def test_list_tools_shape(hub):
    tools = {t["name"]: t for t in hub.list_tools()}
    echo = tools["mcp_demo_echo"]
    assert echo["server"] == "demo" and echo["tool"] == "echo"
    assert echo["input_schema"]["type"] == "object"
    assert "mcp_everything_get-sum" in tools
    assert set(echo) == {
        "name", "server", "tool", "title", "description", "input_schema", "output_schema", "annotations",
    }


def test_call_tool_results_are_mcp_json(hub):
    assert hub.call_tool("mcp_demo_echo", {"text": "héllo ✓"}) == {
        "content": [{"type": "text", "text": "héllo ✓"}]
    }
    added = hub.call_tool("mcp_demo_add", {"a": 2, "b": 40})
    assert added["structuredContent"] == {"sum": 42}
    assert hub.call_tool("mcp_everything_echo", {"message": "hi"})["content"][0]["text"] == "Echo: hi"
    assert "5" in hub.call_tool("mcp_everything_get-sum", {"a": 2, "b": 3})["content"][0]["text"]


def test_tool_failure_is_a_result_not_an_exception(hub):
    result = hub.call_tool("mcp_demo_fail", {"message": "nope"})
    assert result["isError"] is True
    assert result["content"][0]["text"] == "nope"


def test_arguments_accept_nested_values(hub):
    text = json.dumps({"a": [1, 2.5, None, True, ("t", "u")], "b": {"c": "d"}})
    result = hub.call_tool("mcp_demo_echo", {"text": text})
    assert json.loads(result["content"][0]["text"]) == json.loads(text)
    # a tuple travels as a list, arguments=None as {}
    assert hub.call_tool("mcp_demo_fail")["isError"] is True


def test_tools_for_formats(hub):
    anthropic = hub.tools_for("anthropic")
    assert {t["name"] for t in anthropic} >= {"mcp_demo_echo", "mcp_everything_echo"}
    assert "input_schema" in anthropic[0]
    openai = hub.tools_for("openai")
    assert openai[0]["type"] == "function" and "parameters" in openai[0]["function"]
    assert hub.tools_for("openai-responses")[0]["type"] == "function"
    assert hub.tools_for("mcp")[0]["name"].startswith("mcp_")


def test_resources_and_prompts(hub):
    resources = hub.list_resources("demo")
    assert any(r["uri"] == "demo://readme" and r["server"] == "demo" for r in resources)
    templates = hub.list_resource_templates()
    assert any(t.get("uriTemplate") == "demo://item/{id}" for t in templates)
    readme = hub.read_resource("demo://readme")
    assert "mcpmux demo server" in readme["contents"][0]["text"]
    item = hub.read_resource("demo://item/7", server="demo")
    assert item["contents"]
    assert any(p["name"] == "greet" for p in hub.list_prompts())
    prompt = hub.get_prompt("greet", {"name": "Ada"})
    assert "Ada" in json.dumps(prompt["messages"])
    everything_resources = hub.list_resources(server="everything")
    assert everything_resources and all(r["server"] == "everything" for r in everything_resources)


def test_connect_accepts_path_str_pathlib_toml_and_json(tmp_path: Path):
    toml = f'[[mcp.servers]]\nname = "demo"\ntype = "stdio"\ncommand = "{DEMO}"\n'
    json_text = json.dumps(config(demo=demo()))
    (tmp_path / "a.toml").write_text(toml)
    (tmp_path / "b.json").write_text(json_text)
    for cfg in (
        toml,
        json_text,
        str(tmp_path / "a.toml"),
        tmp_path / "b.json",
        {"mcp": {"servers": [{"name": "demo", "type": "stdio", "command": DEMO}]}},
    ):
        with mcpmux.Hub.connect(cfg) as h:
            assert h.servers()[0]["state"] == "connected", cfg
            assert h.call_tool("mcp_demo_add", {"a": 1, "b": 1})["structuredContent"] == {"sum": 2}


def test_tool_lists_say_which_servers_failed_and_calls_get_their_error():
    with mcpmux.Hub.connect(config(demo=demo(), broken={"command": "/nonexistent/server"})) as h:
        for listing in (h.list_tools, lambda: h.tools_for("openai")):
            with pytest.warns(RuntimeWarning, match=r"broken \(CONNECT_FAILED\)"):
                tools = listing()
            assert tools and all("broken" not in json.dumps(t) for t in tools)
        with pytest.raises(mcpmux.ConnectFailed, match="server 'broken'"):
            h.call_tool("mcp_broken_anything", {})
    with mcpmux.Hub.connect(config(demo=demo())) as h:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert h.list_tools()


def test_failed_server_does_not_fail_connect(marker):
    with mcpmux.Hub.connect(config(demo=demo(), broken={"command": "/nonexistent/server"})) as h:
        status = {s["name"]: s for s in h.servers()}
        assert status["demo"]["state"] == "connected"
        assert status["broken"]["state"] == "failed"
        assert status["broken"]["error_code"] == "CONNECT_FAILED"
        assert "/nonexistent/server" in status["broken"]["error"]
        with pytest.raises(mcpmux.ConnectFailed):
            h.refresh("broken")
        assert h.call_tool("mcp_demo_echo", {"text": "x"})["content"][0]["text"] == "x"


def test_refresh_reconnects(hub):
    hub.refresh("demo")
    assert hub.servers()[0]["state"] == "connected"
    assert hub.call_tool("mcp_demo_echo", {"text": "again"})["content"][0]["text"] == "again"


def test_many_threads_share_one_hub(hub):
    errors = []
    results = []

    def worker(i: int) -> None:
        try:
            for j in range(50):
                text = f"{i}-{j}"
                r = hub.call_tool("mcp_demo_echo", {"text": text})
                assert r["content"][0]["text"] == text
            results.append(i)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    assert sorted(results) == list(range(8))


def test_progress_callback_runs_on_the_calling_thread(hub):
    seen = []
    me = threading.get_ident()

    def on_progress(progress, total, message):
        seen.append((progress, total, message, threading.get_ident()))

    result = hub.call_tool("mcp_demo_slow", {"seconds": 0.3, "steps": 3}, on_progress=on_progress)
    assert result["content"][0]["text"].startswith("done")
    assert [s[0] for s in seen] == [1, 2, 3]
    assert all(s[1] == 3 and s[3] == me for s in seen)
    assert seen[0][2] == "step 1"


def test_everything_long_running_operation_with_progress(hub):
    seen = []
    result = hub.call_tool(
        "mcp_everything_trigger-long-running-operation",
        {"duration": 0.3, "steps": 3},
        on_progress=lambda p, t, m: seen.append(p),
    )
    assert not result.get("isError")
    assert len(seen) == 3


def test_hub_connected_in_a_short_lived_thread_keeps_its_servers():
    """Servers are started from engine threads: the kernel kills a server
    when the thread that started it ends (PR_SET_PDEATHSIG)."""
    box = {}
    t = threading.Thread(target=lambda: box.setdefault("hub", mcpmux.Hub.connect(config(demo=demo()))))
    t.start()
    t.join()
    with box["hub"] as h:
        time.sleep(0.2)  # give a killed server time to be noticed
        assert h.servers()[0]["state"] == "connected"
        assert h.call_tool("mcp_demo_echo", {"text": "alive"})["content"][0]["text"] == "alive"


def test_repr_and_version(hub):
    assert repr(hub) == "<mcpmux.Hub servers=2 connected=2>"
    assert mcpmux.__version__
    assert "TIMEOUT" in mcpmux.ERROR_CODES
