"""Tiny stdlib-only MCP server helpers shared by the fault servers.

Speaks newline-delimited JSON-RPC 2.0 on stdin/stdout (the MCP stdio
transport): one JSON object per line, UTF-8, stdout flushed after every
message. Diagnostics go to stderr. No third-party imports on purpose: the
fault servers must run with a bare ``python3``.

Scripts import it after putting their own directory on ``sys.path``::

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import _mini
"""

import json
import sys

# Used when the client's initialize request carries no protocolVersion.
DEFAULT_PROTOCOL_VERSION = "2025-06-18"

# JSON-RPC error codes.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602


def log(text):
    """Write one line to stderr and flush it."""
    try:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):
        pass


def read_message():
    """Read the next JSON-RPC message from stdin.

    Returns the decoded object, or None at EOF. Blank lines are skipped. A
    line that is not JSON is answered with a parse error (id null) and
    skipped, like a well-behaved server would.
    """
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            continue
        try:
            return json.loads(line)
        except ValueError as exc:
            log("_mini: unparsable line from client: %s" % exc)
            write_message(
                {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {"code": PARSE_ERROR, "message": "Parse error"},
                }
            )


def write_raw(data):
    """Write raw bytes (should end with b"\\n") to stdout and flush.

    Returns False if the client has closed our stdout.
    """
    try:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return True
    except (BrokenPipeError, ValueError):
        return False


def write_message(obj):
    """Serialize one JSON-RPC message as a single line and flush it."""
    data = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
    return write_raw(data.encode("utf-8") + b"\n")


def respond(request_id, result):
    return write_message({"jsonrpc": "2.0", "id": request_id, "result": result})


def respond_error(request_id, code, message, data=None):
    error = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return write_message({"jsonrpc": "2.0", "id": request_id, "error": error})


def initialize_result(params, name, version="0.1.0", capabilities=None):
    """A minimal InitializeResult: echoes the client's protocolVersion."""
    requested = (params or {}).get("protocolVersion")
    if not isinstance(requested, str):
        requested = DEFAULT_PROTOCOL_VERSION
    return {
        "protocolVersion": requested,
        "capabilities": capabilities if capabilities is not None else {"tools": {}},
        "serverInfo": {"name": name, "version": version},
    }


def tool(name, description, input_schema=None):
    """A Tool definition for tools/list."""
    return {
        "name": name,
        "description": description,
        "inputSchema": input_schema if input_schema is not None else {"type": "object"},
    }


def text_result(text, is_error=False):
    """A CallToolResult with one text content block."""
    result = {"content": [{"type": "text", "text": text}]}
    if is_error:
        result["isError"] = True
    return result


def is_request(msg):
    return isinstance(msg, dict) and "method" in msg and "id" in msg


def is_notification(msg):
    return isinstance(msg, dict) and "method" in msg and "id" not in msg


def format_id(request_id):
    """Render a JSON-RPC id for logs: 7 -> '7', "abc" -> 'abc'."""
    if isinstance(request_id, str):
        return request_id
    return json.dumps(request_id)


def serve(name, tools, on_call, on_notification=None, version="0.1.0"):
    """Run a minimal, correct MCP server loop until stdin EOF.

    ``tools`` is the list returned by tools/list. ``on_call(msg)`` handles a
    tools/call request for a listed tool: it returns a CallToolResult dict to
    send, or None to send nothing (the callee may also answer by itself or
    exit). Calls of unlisted tools are answered with an INVALID_PARAMS error.
    ``on_notification(msg)`` sees every notification from the client.
    Handles initialize, ping, tools/list; other requests get METHOD_NOT_FOUND;
    responses from the client are ignored.

    Returns "eof" when stdin closed, or "closed" when stdout was closed.
    """
    names = {t["name"] for t in tools}
    while True:
        msg = read_message()
        if msg is None:
            return "eof"
        if not isinstance(msg, dict):
            ok = respond_error(None, INVALID_REQUEST, "Invalid Request")
        elif is_notification(msg):
            if on_notification is not None:
                on_notification(msg)
            continue
        elif not is_request(msg):
            continue  # a response to something we never sent; ignore
        else:
            method = msg["method"]
            rid = msg["id"]
            params = msg.get("params") or {}
            if method == "initialize":
                ok = respond(rid, initialize_result(params, name, version))
            elif method == "ping":
                ok = respond(rid, {})
            elif method == "tools/list":
                ok = respond(rid, {"tools": tools})
            elif method == "tools/call":
                tool_name = params.get("name")
                if tool_name not in names:
                    ok = respond_error(rid, INVALID_PARAMS, "Unknown tool: %s" % tool_name)
                else:
                    result = on_call(msg)
                    ok = True if result is None else respond(rid, result)
            else:
                ok = respond_error(rid, METHOD_NOT_FOUND, "Method not found: %s" % method)
        if not ok:
            return "closed"
