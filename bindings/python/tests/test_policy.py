"""Policies for a host's own calls (mcpmux.Policy / AsyncPolicy) against the
demo server with ``allow_tools = ["echo", "add", "big", "extra_1", "nosuch"]``."""

from __future__ import annotations

import asyncio
import json
import subprocess
import threading
from pathlib import Path

import pytest

import mcpmux
from conftest import CLI, config, demo

ALLOW = ["echo", "add", "big", "extra_1", "nosuch"]
SECRET = "AKIAIOSFODNN7EXAMPLE"
EVENT_KEYS = {"time", "server", "tool", "status", "bytes", "duration_ms", "redactions"}


def policy_config() -> dict:
    return config(demo=demo(allow_tools=ALLOW))


@pytest.fixture
def hub():
    with mcpmux.Hub.connect(policy_config()) as h:
        yield h


def test_offered_verdicts_and_report_match_the_cli(tmp_path: Path, hub):
    policy = hub.policy()
    assert [t["name"] for t in policy.offered()] == ["mcp_demo_echo", "mcp_demo_add", "mcp_demo_big"]
    assert policy.offered()[0] == hub.list_tools()[0]
    verdicts = {v["tool"]: v for v in policy.verdicts()}
    assert verdicts["echo"] == {"name": "mcp_demo_echo", "server": "demo", "tool": "echo", "offered": True}
    assert verdicts["crash"]["offered"] is False
    assert verdicts["crash"]["refusal"] == "not_allowed"
    assert "allow_tools" in verdicts["crash"]["reason"]
    assert sorted(t for t, v in verdicts.items() if not v["offered"]) == ["crash", "fail", "grow", "slow"]

    path = tmp_path / "mcpmux.json"
    path.write_text(json.dumps(policy_config()))
    cli = json.loads(
        subprocess.run([CLI, "--config", str(path), "--json", "policy"], capture_output=True, check=True).stdout
    )
    report = policy.report()
    # `mcpmux policy` pins tool definitions as a review session does (a
    # host's policy only when it asks): the rest of the report is the same.
    assert [p["status"] for p in cli["servers"][0]["pins"]] == ["pinned"] * 7
    for server in cli["servers"]:
        server["pinned"], server["pins"] = False, None
    assert report == cli
    assert report["servers"][0]["missing"] == ["extra_1", "nosuch"]


def test_calls_through_the_policy(tmp_path: Path, hub):
    audit_path = tmp_path / "audit.jsonl"
    seen = []
    threads = set()

    def on_audit(event):
        seen.append(event)
        threads.add(threading.get_ident())

    policy = hub.policy(max_tool_calls=6, max_output_bytes=100, audit_path=audit_path, on_audit=on_audit)

    # 1: a planted secret comes back redacted.
    r = hub.call_tool("mcp_demo_echo", {"text": f"key {SECRET} here"}, policy=policy)
    assert r["content"][0]["text"] == "key [REDACTED:aws_access_key_id] here"
    # 2: a tool the config does not allow is refused; the server is not asked.
    with pytest.raises(mcpmux.ToolNotAllowed) as e:
        hub.call_tool("mcp_demo_crash", policy=policy)
    assert e.value.code == "TOOL_NOT_ALLOWED" and "mcp_demo_crash" in str(e.value)
    assert isinstance(e.value, mcpmux.McpmuxError)
    # 3: the server is still up (crash was never sent).
    assert hub.call_tool("mcp_demo_echo", {"text": "alive"}, policy=policy)["content"][0]["text"] == "alive"
    # 4: a result over max_output_bytes is capped.
    # Its head and its tail are kept, one marker between them.
    text = hub.call_tool("mcp_demo_big", {"bytes": 1000, "tail": "\nLAST LINE"}, policy=policy)["content"][0]["text"]
    assert text.startswith("x" * 67 + "\n[output truncated by mcpmux: ") and "x" * 101 not in text
    assert text.endswith("\nLAST LINE"), text
    assert "max_output_bytes = 100" in text
    # 5, 6: within the limit; 7: past it.
    assert hub.call_tool("mcp_demo_add", {"a": 2, "b": 3}, policy=policy)["structuredContent"] == {"sum": 5}
    hub.call_tool("mcp_demo_echo", {"text": "six"}, policy=policy)
    with pytest.raises(mcpmux.LimitExceeded) as e:
        hub.call_tool("mcp_demo_echo", {"text": "seven"}, policy=policy)
    assert e.value.code == "LIMIT_EXCEEDED"
    assert policy.calls_made == 7
    # Without the policy the hub is unrestricted.
    assert hub.call_tool("mcp_demo_echo", {"text": SECRET})["content"][0]["text"] == SECRET

    events = policy.audit_events()
    assert seen == events
    assert threads == {threading.get_ident()}
    assert [json.loads(line) for line in audit_path.read_text().splitlines()] == events
    assert [(e["tool"], e["status"]) for e in events] == [
        ("echo", "ok"),
        ("crash", "not_allowed"),
        ("echo", "ok"),
        ("big", "ok"),
        ("add", "ok"),
        ("echo", "ok"),
        ("echo", "limit_exceeded"),
    ]
    for e in events:
        assert EVENT_KEYS <= set(e), e
        assert e["server"] == "demo"
    assert events[0]["redactions"] == 1 and events[0]["bytes"] > 0
    assert events[1]["bytes"] == 0 and events[1]["code"] == "TOOL_NOT_ALLOWED"
    assert events[3]["truncated"] is True
    assert SECRET not in audit_path.read_text() and "alive" not in audit_path.read_text()


def test_refresh_reports_dropped_tools(hub):
    policy = hub.policy()
    hub.call_tool("mcp_demo_grow")  # adds extra_1 (allowed) until the server restarts
    for _ in range(500):
        if any(t["name"] == "mcp_demo_extra_1" for t in hub.list_tools()):
            break
        threading.Event().wait(0.01)
    assert "mcp_demo_extra_1" in [t["name"] for t in policy.offered()]
    report = policy.refresh("demo")
    assert report == {
        "server": "demo",
        "offered": ["echo", "add", "big"],
        "dropped": ["extra_1"],
        "added": [],
        "missing": ["extra_1", "nosuch"],
    }
    with pytest.raises(mcpmux.UnknownServer):
        policy.refresh("nope")


def test_bad_settings_name_the_field(hub):
    with pytest.raises(mcpmux.InvalidInput, match="max_output_bytes"):
        hub.policy(max_output_bytes=0)
    with pytest.raises(mcpmux.InvalidInput, match="on_audit"):
        hub.policy(on_audit=42)  # type: ignore[arg-type]
    with pytest.raises(mcpmux.InvalidInput, match="policy"):
        hub.call_tool("mcp_demo_echo", {"text": "x"}, policy="strict")  # type: ignore[arg-type]
    with mcpmux.Hub.connect(policy_config()) as other:
        with pytest.raises(mcpmux.InvalidInput, match="another hub"):
            hub.call_tool("mcp_demo_echo", {"text": "x"}, policy=other.policy())


def test_a_misspelt_key_of_a_redact_rule_names_the_nearest(hub):
    # The one dict-typed option of the Python API: its keys are checked by
    # the engine, which names the nearest known one.
    with pytest.raises(mcpmux.InvalidInput, match=r"unknown key 'patern' \(did you mean 'pattern'\?"):
        hub.policy(redact=[{"name": "token", "patern": "tok_[a-z]+"}])
    assert hub.policy(redact=[{"name": "token", "pattern": "tok_[a-z]+"}]) is not None


def test_scope_from_the_config_and_the_call():
    cfg = {"mcpServers": {"demo": demo(allow_all=True, scopes=["review"])}, "session": {"scope": "review"}}
    with mcpmux.Hub.connect(cfg) as hub:
        assert len(hub.policy().offered()) > 0
        assert hub.policy(scope="other").offered() == []
        with pytest.raises(mcpmux.ToolNotAllowed):
            hub.call_tool("mcp_demo_echo", {"text": "x"}, policy=hub.policy(scope="other"))


def test_async_policy(tmp_path: Path):
    async def main():
        seen = []
        loop_thread = threading.get_ident()

        async def on_audit(event):
            assert threading.get_ident() == loop_thread
            seen.append(event)

        async with mcpmux.AsyncHub.connect(policy_config()) as hub:
            policy = hub.policy(max_tool_calls=2, on_audit=on_audit)
            assert isinstance(policy, mcpmux.AsyncPolicy)
            r = await hub.call_tool("mcp_demo_echo", {"text": SECRET}, policy=policy)
            assert r["content"][0]["text"] == "[REDACTED:aws_access_key_id]"
            with pytest.raises(mcpmux.ToolNotAllowed):
                await hub.call_tool("mcp_demo_slow", {"seconds": 0}, policy=policy)
            with pytest.raises(mcpmux.LimitExceeded):
                await hub.call_tool("mcp_demo_echo", {"text": "x"}, policy=policy)
            report = await policy.refresh("demo")
            assert report["offered"] == ["echo", "add", "big"] and report["dropped"] == []
            await asyncio.sleep(0)
            assert [e["status"] for e in seen] == ["ok", "not_allowed", "limit_exceeded"]
            assert seen == policy.audit_events()

    asyncio.run(main())


def test_a_50_mb_result_keeps_head_and_tail_and_is_kept_whole(tmp_path: Path):
    # A hostile server's 50 MB log whose last line is the one that matters.
    kept = tmp_path / "results"
    cfg = {
        "mcpServers": {"demo": demo(allow_tools=ALLOW, max_message_bytes=67108864)},
        "session": {"max_output_bytes": 3000, "result_dir": str(kept)},
    }
    tail = "\nERROR: disk full (" + SECRET + ")"
    with mcpmux.Hub.connect(cfg) as hub:
        policy = hub.policy()
        r = hub.call_tool("mcp_demo_big", {"bytes": 50_000_000, "tail": tail}, policy=policy)
        text = r["content"][0]["text"]
        assert len(text) < 3500
        assert text.startswith("x" * 2000)
        assert text.endswith("\nERROR: disk full ([REDACTED:aws_access_key_id])"), text[-200:]
        assert "[output truncated by mcpmux: " in text and "whole result: read_result id=" in text
        files = list(kept.iterdir())
        assert len(files) == 1 and files[0].stat().st_mode & 0o777 == 0o600
        assert files[0].stat().st_size == 50_000_000 + len("\nERROR: disk full ([REDACTED:aws_access_key_id])")
        assert files[0].stem in text
