"""An MCP server over the network, written with the official Python SDK 1.x
(FastMCP), for the mcpmux network transport tests.

    .deps/venv/bin/python tests/servers/net/sdk_server.py --transport T [--port N]

Transports (T):
  sse              legacy HTTP+SSE: GET /sse, POST /messages/?session_id=...
  streamable-http  Streamable HTTP, stateful (Mcp-Session-Id), SSE answers: /mcp
  stateless        Streamable HTTP with stateless_http=True: /mcp
  json             Streamable HTTP with json_response=True (plain JSON answers): /mcp
  websocket        WebSocket, subprotocol "mcp", via mcp.server.websocket: /ws

It binds 127.0.0.1:N itself (N = 0, the default, picks a free port) and then
prints one line `READY <port>` on stdout, so a test never races for a port.
Logs go to stderr. Stops on SIGTERM/SIGINT (uvicorn) or when killed.

Options:
  --require-header "Name: value"   (repeatable) answer 401 (HTTP) or refuse
                                   the WebSocket handshake (403) unless every
                                   such header arrives with exactly that value
  --record-headers FILE            append one JSON object per HTTP request or
                                   WebSocket handshake: {"method", "path",
                                   "headers": {lower-case name: value}}

Tools:
  echo(text: str) -> str            text "<text>", structuredContent {"result": "<text>"}
  add(a: int, b: int) -> Sum        structuredContent {"sum": a + b} (outputSchema)
  slow(seconds: float, steps: int)  reports progress step/steps (ctx.report_progress)
                                    every seconds/steps seconds, then "done after <steps> steps"
  hang()                            never returns
Resource: net://info                text/plain "mcpmux network test server"
Prompt:   review(code: str)         one user message "Please review this code:\n\n<code>"
"""

import argparse
import asyncio
import json
import socket
import sys

import uvicorn
from mcp.server.fastmcp import Context, FastMCP
from pydantic import BaseModel, Field

mcp = FastMCP("mcpmux-net-test", instructions="Network test peer for the mcpmux test suite.")


class Sum(BaseModel):
    """The sum of two integers."""

    sum: int = Field(description="a + b")


@mcp.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@mcp.tool()
def add(a: int, b: int) -> Sum:
    """Add two integers (structured output)."""
    return Sum(sum=a + b)


@mcp.tool()
async def slow(seconds: float, steps: int, ctx: Context) -> str:
    """Take `seconds` seconds in `steps` steps, reporting progress after each."""
    steps = max(1, steps)
    for i in range(1, steps + 1):
        await asyncio.sleep(seconds / steps)
        await ctx.report_progress(i, steps, f"step {i} of {steps}")
    return f"done after {steps} steps"


@mcp.tool()
async def hang() -> str:
    """Never returns."""
    await asyncio.Event().wait()
    return "unreachable"


@mcp.resource("net://info", name="net-info", mime_type="text/plain")
def net_info() -> str:
    """Describes this test server."""
    return "mcpmux network test server"


@mcp.prompt()
def review(code: str) -> str:
    """Ask for a code review of the given code."""
    return f"Please review this code:\n\n{code}"


def websocket_app():
    """A bare ASGI app: the SDK's WebSocket transport at /ws, 404 elsewhere."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from mcp.server.websocket import websocket_server

    server = mcp._mcp_server  # the low-level server behind FastMCP

    async def app(scope, receive, send):
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] == "websocket" and scope["path"] == "/ws":
            async with websocket_server(scope, receive, send) as (read, write):
                await server.run(read, write, server.create_initialization_options())
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        await send({"type": "http.response.start", "status": 404, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"not found"})

    return app


def guard(app, required, record):
    """Wraps an ASGI app: records request headers and enforces `required`."""

    async def guarded(scope, receive, send):
        if scope["type"] not in ("http", "websocket"):
            return await app(scope, receive, send)
        headers = {}
        for k, v in scope.get("headers", []):
            name = k.decode("latin-1").lower()
            value = v.decode("latin-1")
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        if record:
            line = {"method": scope.get("method", "WEBSOCKET"), "path": scope["path"], "headers": headers}
            with open(record, "a", encoding="utf-8") as f:
                f.write(json.dumps(line) + "\n")
        ok = all(headers.get(name) == value for name, value in required)
        if ok:
            return await app(scope, receive, send)
        if scope["type"] == "websocket":
            # Closing before accepting makes the server answer the handshake with 403.
            await send({"type": "websocket.close", "code": 1008})
            return
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")],
            }
        )
        await send({"type": "http.response.body", "body": b"unauthorized: missing or wrong credentials"})

    return guarded


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--transport", required=True, choices=["sse", "streamable-http", "stateless", "json", "websocket"])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--require-header", action="append", default=[])
    parser.add_argument("--record-headers")
    args = parser.parse_args()

    required = []
    for spec in args.require_header:
        name, sep, value = spec.partition(":")
        if not sep:
            parser.error(f"--require-header wants 'Name: value', got {spec!r}")
        required.append((name.strip().lower(), value.strip()))

    if args.transport == "sse":
        app = mcp.sse_app()
    elif args.transport == "websocket":
        app = websocket_app()
    else:
        mcp.settings.stateless_http = args.transport == "stateless"
        mcp.settings.json_response = args.transport == "json"
        app = mcp.streamable_http_app()
    app = guard(app, required, args.record_headers)

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    sock.listen(128)
    sock.set_inheritable(True)
    port = sock.getsockname()[1]

    config = uvicorn.Config(app, log_level="warning", lifespan="on", ws="websockets-sansio")
    server = uvicorn.Server(config)

    async def serve():
        task = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started:
            if task.done():
                await task
                return
            await asyncio.sleep(0.01)
        print(f"READY {port}", flush=True)
        await task

    asyncio.run(serve())
    sys.exit(0)


if __name__ == "__main__":
    main()
