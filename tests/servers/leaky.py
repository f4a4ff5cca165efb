#!/usr/bin/env python3
"""Fault server: gives back the secret it was given in its environment.

The secret is the value of LEAKY_SECRET. On start the server writes
`leaky: starting with token <secret>` to stderr (a chatty log line).

  leaky.py --die-at-init   at the client's `initialize`, writes
                           `fatal: token <secret> was refused` to stderr and
                           exits with status 3 without answering
  leaky.py                 a correct server whose tools give the secret back:
    env    a text result `the token is <secret>`
    split  two text blocks with the secret cut in two between them
    fail   a JSON-RPC error whose message and data hold the secret
    log    sends a notifications/message log line holding the secret, then
           answers `logged`

All tools are marked read-only. Standard library only (see _mini.py).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _mini  # noqa: E402

SECRET = os.environ.get("LEAKY_SECRET", "")


def on_call(msg):
    name = msg["params"]["name"]
    if name == "env":
        return _mini.text_result("the token is %s" % SECRET)
    if name == "split":
        half = len(SECRET) // 2
        return {
            "content": [
                {"type": "text", "text": "first part %s" % SECRET[:half]},
                {"type": "text", "text": "%s second part" % SECRET[half:]},
            ]
        }
    if name == "fail":
        _mini.respond_error(
            msg["id"], -32001, "token %s is not valid here" % SECRET, {"token": SECRET}
        )
        return None
    if name == "log":
        _mini.write_message(
            {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "warning", "data": "log line with %s" % SECRET},
            }
        )
        return _mini.text_result("logged")
    return _mini.text_result("unknown")


def main():
    _mini.log("leaky: starting with token %s" % SECRET)
    if "--die-at-init" in sys.argv[1:]:
        while True:
            msg = _mini.read_message()
            if msg is None:
                return 0
            if _mini.is_request(msg) and msg["method"] == "initialize":
                _mini.log("fatal: token %s was refused" % SECRET)
                return 3
    tools = [
        dict(_mini.tool(n, "gives the secret back (%s)" % n), annotations={"readOnlyHint": True})
        for n in ("env", "split", "fail", "log")
    ]
    _mini.serve("leaky", tools, on_call)
    return 0


if __name__ == "__main__":
    sys.exit(main())
