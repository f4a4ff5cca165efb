"""Telemetry from Python: with mcpmux's telemetry on (the OTEL_* variables),
a call made under the host's active OpenTelemetry span is that span's child,
so the server receives the host's trace id in ``params._meta.traceparent``:
from ``Hub``, ``AsyncHub`` and at interpreter exit, whatever trace flags the
host's span has (the OpenTelemetry SDK's spans have ``03``: sampled and
W3C Trace Context Level 2's random flag).
Each case runs in a fresh interpreter (the variables are read once per
process); the collector is a port nothing listens on, which must not fail a
call. Needs ``opentelemetry-api`` (requirements-dev.txt): the binding itself
never requires it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import PYTHON, SERVERS

HOST_TRACE = "0af7651916cd43dd8448eb211c80319c"
HOST_SPAN = "b7ad6b7169203331"

SCRIPT = textwrap.dedent(
    """
    import asyncio, atexit, json, sys
    from opentelemetry import trace
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
    import mcpmux

    config = json.loads(sys.argv[1])
    host = NonRecordingSpan(SpanContext(
        trace_id=int(sys.argv[2], 16), span_id=int(sys.argv[3], 16),
        is_remote=False, trace_flags=TraceFlags(int(sys.argv[4], 16))))

    with mcpmux.Hub.connect(config) as hub:
        with trace.use_span(host):
            hub.call_tool("mcp_rec_echo", {"text": "sync"})
        hub.call_tool("mcp_rec_echo", {"text": "no span"})

    async def main():
        async with mcpmux.AsyncHub.connect(config) as hub:
            with trace.use_span(host):
                await hub.call_tool("mcp_rec_echo", {"text": "async"})

    asyncio.run(main())

    # Left open: mcpmux closes it at exit, after this handler (registered later).
    last = mcpmux.Hub.connect(config)

    def at_exit():
        with trace.use_span(host):
            last.call_tool("mcp_rec_echo", {"text": "at exit"})

    atexit.register(at_exit)
    """
)


def dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(tmp_path: Path, flags: str = "01", **env: str) -> list:
    record = tmp_path / "meta.jsonl"
    config = {"mcpServers": {"rec": {
        "command": PYTHON, "args": [str(SERVERS / "meta_recorder.py"), str(record)]}}}
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(config), HOST_TRACE, HOST_SPAN, flags],
        env={**clean, **env}, capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in record.read_text().splitlines()]


@pytest.mark.parametrize("flags", ["01", "03"])
def test_a_call_under_the_hosts_span_is_its_child(tmp_path: Path, flags: str):
    seen = run(tmp_path, flags, OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{dead_port()}")
    metas = [r["meta"] for r in seen if r["method"] == "tools/call"]
    assert len(metas) == 4, seen
    sync, alone, in_async, at_exit = metas
    for meta in (sync, in_async, at_exit):
        _, trace_id, parent, sampled = meta["traceparent"].split("-")
        assert trace_id == HOST_TRACE, meta
        assert parent != HOST_SPAN, "the parent is mcpmux's own client span"
        assert sampled == "01", meta
    _, trace_id, _, _ = alone["traceparent"].split("-")
    assert trace_id != HOST_TRACE, "no active span: a trace of its own"


def test_nothing_is_sent_when_telemetry_is_off(tmp_path: Path):
    seen = run(tmp_path)
    assert seen
    assert all("traceparent" not in (r["meta"] or {}) for r in seen), seen
