"""A review session with a host reviewer written in Python (blocking API).

    pip install ./bindings/python
    cargo build -p mcpmux-demo-server
    python examples/python/session.py

The "model" here is a few lines of Python (swap in a call to your own LLM):
it first calls the demo server's echo tool, then answers with a fenced JSON
verdict. The session lives on disk under <working_dir>/.mcpmux/sessions/.
"""

import json
import os
import tempfile
from pathlib import Path

import mcpmux

ROOT = Path(__file__).resolve().parents[2]
DEMO = os.environ.get("MCPMUX_DEMO_SERVER", str(ROOT / "target" / "debug" / "mcpmux-demo-server"))

config = {
    "mcpServers": {"demo": {"command": DEMO, "allow_tools": ["echo"]}},
    "session": {"max_turns": 4},
}


def reviewer(request: dict) -> dict:
    """One model turn: gets the conversation and the tools, answers a completion."""
    last = request["messages"][-1]
    if not last.get("tool_results"):
        return {
            "text": "Let me look something up first.",
            "tool_calls": [{"id": "1", "name": "mcp_demo_echo", "arguments": {"text": "the plan looks small"}}],
        }
    found = last["tool_results"][0]["content"]
    review = {"verdict": "APPROVE", "blocks": []}
    return f"The tool said: {found!r}.\n\n```json\n{json.dumps(review)}\n```\n"


plan = """---
USER_REQUEST: Print a greeting
---
## PLAN
1. Add hello.py that prints "hello".
2. Add a test.
"""

sessions = mcpmux.Sessions(config, host=reviewer)
with tempfile.TemporaryDirectory() as work:
    begun = sessions.begin(skill="review-plan", reviewer="host", input=plan, working_dir=work)
    print("began", begun["session_dir"])
    while True:
        status = sessions.wait(begun["session_dir"], max_wait_seconds=10)
        if status["status"] != "running":
            break
    print("round", status["round"], status["status"], "verdict:", status["review"]["verdict"])
    print("next:", status["next"], f"({status['next_reason']})")
    ended = sessions.end(begun["session_dir"])
    print("ended; finalized:", ended["finalized"])
    assert status["review"]["verdict"] == "APPROVE", status
