"""Network MCP servers that misbehave, for the mcpmux network transport tests.
Standard library only (asyncio), except `ws-drop`, which uses the
`websockets` package (installed with mcp[ws]).

    .deps/venv/bin/python tests/servers/net/faults.py --fault F [--on all|call] [--port N]
        [--target URL] [--log FILE]

Binds 127.0.0.1:N (N = 0, the default, picks a free port), then prints one
line `READY <port>` on stdout. Every JSON-RPC method received is logged to
stderr as `method <name>` (and appended to --log FILE when given).

HTTP faults answer every path the same. With `--on call` (the default) the
server is a correct, minimal Streamable HTTP server (JSON answers, no
session, no GET stream: GET is 405) whose only tool `work` has the fault;
with `--on all` every POST has the fault (so `initialize` fails).

  500       HTTP 500 text/plain "internal error: database unavailable"
  html200   HTTP 200 text/html with an HTML page (a captive portal / proxy page)
  html502   HTTP 502 text/html with an nginx "502 Bad Gateway" page
  sse-cut   HTTP 200 text/event-stream: one progress notification event (no
            event id), then the connection is closed mid-body (chunked body
            never terminated) before the JSON-RPC response
  sse-endless  HTTP 200 text/event-stream: the start of the JSON-RPC response
            event (`data: {"jsonrpc":"2.0","id":N,"result":...`), then 64 KiB
            chunks of the same text, without end, until the client goes
  json-endless  HTTP 200 application/json, chunked (no length): the start of
            the JSON-RPC response, then 64 KiB chunks of the same text,
            without end, until the client goes
  json-huge HTTP 200 application/json with a Content-Length of 64 MiB:
            the start of the JSON-RPC response, then filler up to that
            length (for a client that checks the declared length first)
  silent    never answers: with --on all the TCP connection is accepted and
            nothing is ever sent (for any transport: HTTP, SSE GET, the
            WebSocket handshake); with --on call the tools/call POST is read
            and never answered (the connection is held until the client goes)
  sse-linger  HTTP 200 text/event-stream: the whole JSON-RPC response event,
            then the stream is held open (never ended)
  notfound  HTTP 404 text/plain "no such path" to every request
  sse-late-end  HTTP 200 text/event-stream: the whole JSON-RPC response
            event, then the stream's end 20 ms later in a write of its own
            (a busy server); connections are kept alive for the next
            request, and every connection accepted is logged as
            `method <connection>`

Stateless (2026-07-28) faults: `server/discover` lists the revision, and
tools/call answers `input_required` asking for `roots/list`, never complete:

  input-flood  1000 input requests at once
  input-slow   one input request, each round after 0.3 s

The faults that hold a connection (silent, sse-linger) log `method <client
gone>` once the client has closed it.

Legacy HTTP+SSE fault (--on is ignored):

  sse-legacy-endless  GET answers an event stream with an `endpoint` event
            (same origin); POSTs are answered 202 and their answers sent as
            events on that stream, except `tools/call`, whose answer event
            starts and never ends (64 KiB chunks until the client goes)

Faults that point the client at another origin (--target URL, e.g. a
header-recording server on another port; --on is ignored):

  redirect       every request is answered 307 Temporary Redirect to --target
  oauth-metadata every request is answered 401 with `WWW-Authenticate: Bearer
                 resource_metadata="<--target>"` (OAuth discovery is sent there)
  sse-endpoint   legacy SSE: GET answers an event stream whose `endpoint`
                 event is --target (another origin), then holds the stream;
                 POSTs to this server are answered 202

  ping-flood  (--on is ignored) a correct server until `tools/call`, whose
            POST is answered with an event stream of FLOOD_PINGS (default
            2000) `ping` requests and then held without an answer; every
            POST that carries an answer (no `method`) is read, logged as
            `<response>` and held without end (never answered), so a client
            that does not bound what it owes keeps one POST (and connection)
            open per ping

WebSocket faults (subprotocol "mcp", any path; --on is ignored):

  ws-drop   a correct MCP server with tools `wait` (never answered) and
            `drop` (the server aborts the TCP connection, no close frame)
  ws-ping-flood  a correct MCP server whose tool `work` makes it send
            FLOOD_PINGS (default 8000) `ping` requests with ids of
            FLOOD_ID_BYTES (default 65536) characters and then stop reading
            for good: a client that queues its answers without a bound grows
            by FLOOD_PINGS * FLOOD_ID_BYTES bytes (512 MiB by default)
"""

import argparse
import asyncio
import json
import os
import sys

HTML_PAGE = b"""<!DOCTYPE html>
<html><head><title>Sign in to the network</title></head>
<body><h1>Welcome</h1><p>Please sign in to continue.</p></body></html>
"""

BAD_GATEWAY = b"""<html>
<head><title>502 Bad Gateway</title></head>
<body>
<center><h1>502 Bad Gateway</h1></center>
<hr><center>nginx/1.25.3</center>
</body>
</html>
"""

args = None


def log_method(method):
    print(f"method {method}", file=sys.stderr, flush=True)
    if args.log:
        with open(args.log, "a", encoding="utf-8") as f:
            f.write(method + "\n")


def result(msg_id, value):
    return {"jsonrpc": "2.0", "id": msg_id, "result": value}


def error(msg_id, code, message):
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}


FLOOD_ID_BYTES = int(os.environ.get("FLOOD_ID_BYTES", "65536"))


def flood_pings(default):
    return int(os.environ.get("FLOOD_PINGS", default))


def tools():
    schema = {"type": "object", "properties": {}}
    if args.fault == "ws-drop":
        return [
            {"name": "wait", "description": "Never answered.", "inputSchema": schema},
            {"name": "drop", "description": "Drops the connection.", "inputSchema": schema},
        ]
    return [{"name": "work", "description": "Has the fault.", "inputSchema": schema}]


def answer(msg):
    """The answer to a well-formed message, or None for a notification."""
    method = msg.get("method")
    msg_id = msg.get("id")
    if msg_id is None:
        return None
    if method == "initialize":
        version = msg.get("params", {}).get("protocolVersion", "2025-06-18")
        return result(
            msg_id,
            {
                "protocolVersion": version,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": f"mcpmux-net-fault-{args.fault}", "version": "1.0.0"},
            },
        )
    if method == "server/discover" and args.fault in ("input-flood", "input-slow"):
        return result(
            msg_id,
            {
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": f"mcpmux-net-fault-{args.fault}", "version": "1.0.0"},
                "resultType": "complete",
            },
        )
    if method == "ping":
        return result(msg_id, {})
    if method == "tools/list":
        return result(msg_id, {"tools": tools()})
    if method == "tools/call":
        return result(msg_id, {"content": [{"type": "text", "text": "ok"}]})
    return error(msg_id, -32601, f"Method not found: {method}")


# ------------------------------------------------------------------ HTTP


async def read_request(reader):
    """(method, path, headers, body) of one HTTP/1.1 request, None at EOF."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    body = b""
    if "content-length" in headers:
        body = await reader.readexactly(int(headers["content-length"]))
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        while True:
            size = int((await reader.readuntil(b"\r\n")).strip().split(b";")[0], 16)
            chunk = await reader.readexactly(size + 2)
            if size == 0:
                break
            body += chunk[:-2]
    return method, path, headers, body


def http_response(status, reason, content_type, body, extra=()):
    head = [f"HTTP/1.1 {status} {reason}", f"Content-Length: {len(body)}", "Connection: close"]
    if content_type:
        head.append(f"Content-Type: {content_type}")
    head.extend(extra)
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


async def answered_on_stream(writer, msg):
    """Opens a chunked SSE response and sends the whole answer to `msg` as
    one event; the stream is left open."""
    writer.write(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        b"Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    done = result(msg.get("id"), {"content": [{"type": "text", "text": "answered"}]})
    event = f"event: message\ndata: {json.dumps(done)}\n\n".encode()
    writer.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
    await writer.drain()


async def endless_chunks(writer, label):
    """Writes 64 KiB chunks of a chunked body until the client closes the
    connection, noting each 16 MiB sent on stderr (the tests look for it)."""
    filler = b"x" * 65536
    chunk = f"{len(filler):x}\r\n".encode() + filler + b"\r\n"
    sent = 0
    while True:
        writer.write(chunk)
        await writer.drain()
        sent += len(filler)
        if sent % (16 << 20) == 0:
            print(f"{label}: {sent >> 20} MiB sent", file=sys.stderr, flush=True)


async def fault_response(writer, reader, msg):
    """Writes the configured fault for `msg`; returns when the exchange is over."""
    fault = args.fault
    if fault == "500":
        writer.write(http_response(500, "Internal Server Error", "text/plain", b"internal error: database unavailable"))
    elif fault == "html200":
        writer.write(http_response(200, "OK", "text/html; charset=utf-8", HTML_PAGE))
    elif fault == "html502":
        writer.write(http_response(502, "Bad Gateway", "text/html", BAD_GATEWAY))
    elif fault == "notfound":
        writer.write(http_response(404, "Not Found", "text/plain", b"no such path"))
    elif fault == "sse-cut":
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        token = (msg.get("params") or {}).get("_meta", {}).get("progressToken", msg.get("id"))
        note = {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": token, "progress": 1, "total": 2},
        }
        event = f"event: message\ndata: {json.dumps(note)}\n\n".encode()
        writer.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
        await writer.drain()
        await asyncio.sleep(0.3)
        # Close mid-body: no terminating chunk, no JSON-RPC response.
        writer.transport.abort()
        return
    elif fault == "sse-endless":
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        start = f'event: message\ndata: {{"jsonrpc":"2.0","id":{json.dumps(msg.get("id"))},"result":{{"content":[{{"type":"text","text":"'
        writer.write(f"{len(start):x}\r\n{start}\r\n".encode())
        await endless_chunks(writer, "sse-endless")
    elif fault in ("json-endless", "json-huge"):
        start = f'{{"jsonrpc":"2.0","id":{json.dumps(msg.get("id"))},"result":{{"content":[{{"type":"text","text":"'.encode()
        if fault == "json-huge":
            filler = b"x" * 65536
            length = 64 << 20
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                + f"Content-Length: {length}\r\n\r\n".encode()
                + start
            )
            sent = len(start)
            while sent < length:  # or until the client closes the connection
                piece = filler[: length - sent]
                writer.write(piece)
                await writer.drain()
                sent += len(piece)
            return
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        writer.write(f"{len(start):x}\r\n".encode() + start + b"\r\n")
        await endless_chunks(writer, "json-endless")
    elif fault in ("input-flood", "input-slow"):
        # Stateless revision: the call never completes; it asks for input
        # (roots, which a host answers without a handler) every round.
        asks = 1000 if fault == "input-flood" else 1
        if fault == "input-slow":
            await asyncio.sleep(0.3)
        ask = {
            "resultType": "input_required",
            "inputRequests": {f"r{i}": {"method": "roots/list", "params": {}} for i in range(asks)},
        }
        body = json.dumps(result(msg.get("id"), ask)).encode()
        writer.write(http_response(200, "OK", "application/json", body))
    elif fault == "silent":
        # Read nothing more, answer nothing; hold until the client goes away.
        await reader.read()
        log_method("<client gone>")
        return
    elif fault == "sse-late-end":
        await answered_on_stream(writer, msg)
        await asyncio.sleep(0.02)
        writer.write(b"0\r\n\r\n")
    elif fault == "sse-linger":
        await answered_on_stream(writer, msg)
        await reader.read()  # hold the stream until the client goes
        log_method("<client gone>")
        return
    await writer.drain()


ENDLESS_FILLER = b"x" * 65536
legacy_streams = []


async def endless_event(writer, msg_id):
    """The start of a response event, then filler without end."""
    start = f'event: message\ndata: {{"jsonrpc":"2.0","id":{json.dumps(msg_id)},"result":{{"content":[{{"type":"text","text":"'
    writer.write(start.encode())
    while True:  # ends when the client closes the connection
        writer.write(ENDLESS_FILLER)
        await writer.drain()


async def legacy_endless(reader, writer):
    """The `sse-legacy-endless` fault, for one connection."""
    request = await read_request(reader)
    if request is None:
        return
    method, _path, _headers, body = request
    if method == "GET":
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Cache-Control: no-cache\r\nConnection: close\r\n\r\n"
            b"event: endpoint\ndata: /messages\n\n"
        )
        await writer.drain()
        legacy_streams.append(writer)
        await reader.read()  # hold the stream until the client goes
        return
    msg = json.loads(body)
    log_method(msg.get("method", "<response>"))
    writer.write(http_response(202, "Accepted", None, b""))
    await writer.drain()
    if not legacy_streams or msg.get("id") is None:
        return
    stream = legacy_streams[-1]
    if msg.get("method") == "tools/call":
        await endless_event(stream, msg.get("id"))
    else:
        stream.write(f"event: message\ndata: {json.dumps(answer(msg))}\n\n".encode())
        await stream.drain()


async def http_client(reader, writer):
    if args.fault == "sse-late-end":
        log_method("<connection>")
    try:
        if args.fault == "sse-legacy-endless":
            await legacy_endless(reader, writer)
            return
        if args.fault == "silent" and args.on == "all":
            await reader.read()
            return
        if args.fault in ("redirect", "sse-endpoint", "oauth-metadata"):
            await pointing_elsewhere(reader, writer)
            return
        while True:
            request = await read_request(reader)
            if request is None:
                return
            method, _path, _headers, body = request
            if args.fault == "notfound":
                writer.write(http_response(404, "Not Found", "text/plain", b"no such path"))
                await writer.drain()
                return
            if method == "GET":
                writer.write(http_response(405, "Method Not Allowed", "text/plain", b"no GET stream", ("Allow: POST",)))
                await writer.drain()
                return
            if method == "DELETE":
                writer.write(http_response(200, "OK", None, b""))
                await writer.drain()
                return
            try:
                msg = json.loads(body)
            except ValueError:
                writer.write(http_response(400, "Bad Request", "text/plain", b"bad JSON"))
                await writer.drain()
                return
            rpc_method = msg.get("method", "<response>") if isinstance(msg, dict) else "<batch>"
            log_method(rpc_method)
            if args.fault == "ping-flood" and rpc_method in ("<response>", "tools/call"):
                await ping_flood(reader, writer, rpc_method)
                return
            keep_alive = args.fault == "sse-late-end"
            if args.on == "all" or rpc_method == "tools/call":
                await fault_response(writer, reader, msg)
                if keep_alive:
                    continue
                return
            reply = answer(msg)
            if reply is None:
                writer.write(http_response(202, "Accepted", None, b""))
            else:
                writer.write(http_response(200, "OK", "application/json", json.dumps(reply).encode()))
            await writer.drain()
            if keep_alive:
                continue
            return
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        try:
            writer.close()
        except Exception:
            pass


async def ping_flood(reader, writer, rpc_method):
    """The `ping-flood` fault: pings on the call's stream; answers held."""
    if rpc_method == "tools/call":
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Cache-Control: no-cache\r\nConnection: close\r\n\r\n"
        )
        count = flood_pings("2000")
        for i in range(count):
            ping = {"jsonrpc": "2.0", "id": f"flood-{i}", "method": "ping"}
            writer.write(f"event: message\ndata: {json.dumps(ping)}\n\n".encode())
            if i % 100 == 0:
                await writer.drain()
        await writer.drain()
        print(f"ping-flood: sent {count} pings", file=sys.stderr, flush=True)
    await reader.read()  # hold until the client goes


async def pointing_elsewhere(reader, writer):
    """The `redirect`, `sse-endpoint` and `oauth-metadata` faults."""
    request = await read_request(reader)
    if request is None:
        return
    method, _path, _headers, body = request
    log_method(f"HTTP {method}")
    if args.fault == "redirect":
        writer.write(
            http_response(307, "Temporary Redirect", "text/plain", b"moved", (f"Location: {args.target}",))
        )
    elif args.fault == "oauth-metadata":
        challenge = f'WWW-Authenticate: Bearer resource_metadata="{args.target}"'
        writer.write(http_response(401, "Unauthorized", "text/plain", b"authorize first", (challenge,)))
    elif method == "GET":
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Cache-Control: no-cache\r\nConnection: close\r\n\r\n"
            + f"event: endpoint\ndata: {args.target}\n\n".encode()
        )
        await writer.drain()
        await reader.read()  # hold the stream until the client goes
        return
    else:
        writer.write(http_response(202, "Accepted", None, b""))
    await writer.drain()


# ------------------------------------------------------------------ WebSocket


async def ws_client(ws):
    if args.fault == "ws-ping-flood":
        await ws_ping_flood(ws)
        return
    async for text in ws:
        msg = json.loads(text)
        method = msg.get("method", "<response>")
        log_method(method)
        if method == "tools/call":
            name = (msg.get("params") or {}).get("name")
            if name == "drop":
                ws.transport.abort()
                return
            continue  # "wait": never answered
        reply = answer(msg)
        if reply is not None:
            await ws.send(json.dumps(reply))


async def ws_ping_flood(ws):
    """The `ws-ping-flood` fault, for one connection."""
    async for text in ws:
        msg = json.loads(text)
        method = msg.get("method", "<response>")
        log_method(method)
        if method == "tools/call":
            break
        reply = answer(msg)
        if reply is not None:
            await ws.send(json.dumps(reply))
    else:
        return
    filler = "p" * FLOOD_ID_BYTES
    count = flood_pings("8000")
    # Never read again: what the client sends piles up in the kernel's
    # buffers, then in the client.
    ws.transport.pause_reading()
    for i in range(count):
        await ws.send(json.dumps({"jsonrpc": "2.0", "id": f"{i}-{filler}", "method": "ping"}))
    print(f"ws-ping-flood: sent {count} pings; never reading again", file=sys.stderr, flush=True)
    await asyncio.Event().wait()


async def main():
    global args
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--fault",
        required=True,
        choices=["500", "html200", "html502", "sse-cut", "sse-endless", "json-endless", "json-huge", "sse-legacy-endless", "silent", "sse-linger", "sse-late-end", "input-flood", "input-slow", "notfound", "redirect", "sse-endpoint", "oauth-metadata", "ping-flood", "ws-drop", "ws-ping-flood"],
    )
    parser.add_argument("--target", help="where `redirect`, `sse-endpoint` and `oauth-metadata` point")
    parser.add_argument("--on", choices=["all", "call"], default="call")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--log")
    args = parser.parse_args()
    if args.fault in ("redirect", "sse-endpoint", "oauth-metadata") and not args.target:
        parser.error(f"--fault {args.fault} needs --target URL")

    if args.fault in ("ws-drop", "ws-ping-flood"):
        from websockets.asyncio.server import serve

        # No keep-alive: a flooding server that stops reading would
        # otherwise drop the connection itself when our pong goes unread.
        server = await serve(
            ws_client, "127.0.0.1", args.port, subprotocols=["mcp"], ping_interval=None, max_size=None
        )
    else:
        server = await asyncio.start_server(http_client, "127.0.0.1", args.port)
    port = server.sockets[0].getsockname()[1]
    print(f"READY {port}", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
