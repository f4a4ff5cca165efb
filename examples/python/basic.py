"""Connect to the servers of a config, list their tools and call some (blocking API).

    pip install ./bindings/python
    cargo build -p mcpmux-demo-server
    python examples/python/basic.py [CONFIG]

CONFIG is a TOML or JSON file (default: the bundled demo server). The demo
server is taken from $MCPMUX_DEMO_SERVER, else target/debug/mcpmux-demo-server.
"""

import json
import os
import sys
from pathlib import Path

import mcpmux

ROOT = Path(__file__).resolve().parents[2]
DEMO = os.environ.get("MCPMUX_DEMO_SERVER", str(ROOT / "target" / "debug" / "mcpmux-demo-server"))

config = sys.argv[1] if len(sys.argv) > 1 else {"mcpServers": {"demo": {"command": DEMO}}}

# Every enabled server starts at once; one that fails is reported, not fatal.
with mcpmux.Hub.connect(config) as hub:
    for server in hub.servers():
        print(f"{server['name']:12} {server['state']:10} {server['tool_count']} tools {server['error'] or ''}")
    for tool in hub.list_tools():
        print(f"  {tool['name']:28} {tool['description'] or ''}")

    # Results are the MCP CallToolResult as plain dicts.
    result = hub.call_tool("mcp_demo_add", {"a": 2, "b": 40})
    print("add ->", result["structuredContent"])

    # A tool's own failure is a result with isError, not an exception.
    failed = hub.call_tool("mcp_demo_fail", {"message": "it did not work"})
    print("fail -> isError:", failed["isError"], failed["content"][0]["text"])

    # Transport and protocol failures are exceptions with a stable code.
    try:
        hub.call_tool("mcp_demo_slow", {"seconds": 5}, timeout=0.2)
    except mcpmux.Timeout as e:
        print(f"slow -> {e.code}: {e.message}")

    # Progress notifications, on this thread.
    hub.call_tool(
        "mcp_demo_slow",
        {"seconds": 0.3, "steps": 3},
        on_progress=lambda progress, total, message: print(f"  progress {progress}/{total} {message}"),
    )
    print("readme ->", json.dumps(hub.read_resource("demo://readme"))[:60], "...")
