#!/usr/bin/env python3
"""Hostile server: tools whose outputSchema no validator should trust.

Correct MCP otherwise. Its tools each answer `structuredContent {"n": "x"}`:
  broken      outputSchema `{"type": 12}`: cannot be compiled
  remote_ref  outputSchema `{"$ref": "http://127.0.0.1:9/schema.json"}`: a
              reference a client must not fetch (nothing listens there)
  draft7      a draft-07 schema (`$schema`) wanting `n` an integer: violated
              at `/n`
A client that checks results reports the first two once and leaves their
results unchecked; the third is a violation.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _mini  # noqa: E402


def with_schema(name, schema):
    t = _mini.tool(name, "Answers structuredContent {n: 'x'}.")
    t["outputSchema"] = schema
    return t


TOOLS = [
    with_schema("broken", {"type": 12}),
    with_schema("remote_ref", {"$ref": "http://127.0.0.1:9/schema.json"}),
    with_schema(
        "draft7",
        {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {"n": {"type": "integer"}},
        },
    ),
]


def on_call(msg):
    result = _mini.text_result("x")
    result["structuredContent"] = {"n": "x"}
    _mini.respond(msg["id"], result)


if __name__ == "__main__":
    _mini.serve("bad_output_schema", TOOLS, on_call)
    sys.exit(0)
