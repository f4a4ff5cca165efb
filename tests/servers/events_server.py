#!/usr/bin/env python3
"""Test server for the events extension (`io.modelcontextprotocol/events`,
SEP-3415), stdlib only.

Written from the incubation design sketch's wire shapes and what SEP-3415
reportedly changes (docs/extensions.md#events): the capability under
`capabilities.extensions["io.modelcontextprotocol/events"]`, error codes
-32023 (NotFound) ..., results with `resultType: "complete"`.

Env:
- CAPABILITY: `extension` (default), `top` (`capabilities.events`), `both`
  or `none` (declares nothing and answers `events/*` anyway).
- TICK_MS: when set, one `ticket.created` occurrence every TICK_MS ms.
- HEARTBEAT_MS: the stream heartbeat interval (default 500; 0 = none).
- KEEP: how many occurrences the log keeps (default 50): an older cursor
  gets `truncated: true`.
- PRELOAD: occurrences of `ticket.created` in the log at start (default 0),
  so that one process's log can be polled from `pos-0`.
- PRELOAD_AGE_MS: the preloaded occurrences are dated this long ago
  (default 0), so that `maxAgeMs` has something to leave out.
- REVISION: `2026-07-28` serves that stateless revision only, as SEP-3415
  (Final) defines the extension for it: `server/discover` lists it with the
  capability under `extensions`, `initialize` is refused, and every other
  request must carry `_meta["io.modelcontextprotocol/protocolVersion"]`
  (else -32602 naming it). Default: 2025-11-25 (`initialize`).
- LIST_CHANGED: `1` declares `listChanged: true` in the capability; then
  the tool `change_types` sends `notifications/events/list_changed`: on
  2026-07-28 on every `subscriptions/listen` stream that asked for it
  (`eventsListChanged`, acknowledged first with
  `notifications/subscriptions/acknowledged`), on 2025-11-25 unasked.
  `state` lists the open listen streams under `listeners`, counts the
  listen requests under `listens`, and says under
  `declared` whether the last 2026-07-28 `tools/call` declared the
  extension in its client capabilities.
- RESOURCES: `1` offers `resources: {subscribe: true}` (an empty
  `resources/list`) and acknowledges every URI a listen stream asks for
  under `resourceSubscriptions`; `state` says under `most_uris` the
  longest such list one stream asked for.
- EXTRA_EXTENSION: the name of one more extension to declare (as
  `{"flavour": "test"}`), one mcpmux does not know.
- LISTEN: `silent` never acknowledges a `subscriptions/listen` stream (it
  stays open, unanswered, until cancelled): a hostile server.
- SUBSCRIPTIONS_FILE: when set, the webhook subscriptions are read from this
  JSON file at start and written back after each change (without secrets),
  so that they outlive one process (the CLI starts one per command).

Two event types: `ticket.created` (poll, push) and `build.finished` (poll,
push, webhook). Tools: `emit` {name, data} appends one occurrence and returns
its id; `state` returns JSON {streams: [open stream ids], cancelled: [ids],
subscriptions: [...], secrets_seen: n}; `end_streams` ends every open stream
with its final (empty) result; `fail_streams` {kind: error|terminated, code,
message, data} sends that notification to every open stream (`terminated`
also forgets them, as the draft says the stream then ends).

Cursors are opaque strings `pos-<n>`: the position after the n-th
occurrence. `cursor: null` means from now (no events, a fresh cursor).
`maxAgeMs` (poll, stream, subscribe) starts the replay at whichever is
later, the cursor or now - maxAgeMs (ignored with a null cursor); leaving
occurrences out that way is a gap, said with `truncated: true`. A
subscription's `ttlMs: null` asks for no expiry (`refreshBefore: null`);
omitted, the default is an hour.
Streams: `notifications/events/active` first, then `.../event` for each new
occurrence of the stream's name, `.../heartbeat` every HEARTBEAT_MS; each
carries `_meta["io.modelcontextprotocol/subscriptionId"]` = the request id.
A stream ends on `notifications/cancelled` naming it (no answer) or with
`end_streams` (answered with `{"_meta": {}}`).
"""
import datetime
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _mini  # noqa: E402

EXTENSION = "io.modelcontextprotocol/events"
SUB_KEY = "io.modelcontextprotocol/subscriptionId"
NOT_FOUND = -32023
CAPABILITY = os.environ.get("CAPABILITY", "extension")
TICK_MS = int(os.environ.get("TICK_MS", "0") or 0)
HEARTBEAT_MS = int(os.environ.get("HEARTBEAT_MS", "500") or 0)
KEEP = int(os.environ.get("KEEP", "50"))
PRELOAD = int(os.environ.get("PRELOAD", "0") or 0)
PRELOAD_AGE_MS = int(os.environ.get("PRELOAD_AGE_MS", "0") or 0)
SUBSCRIPTIONS_FILE = os.environ.get("SUBSCRIPTIONS_FILE")
STATELESS = os.environ.get("REVISION") == "2026-07-28"
LIST_CHANGED = os.environ.get("LIST_CHANGED") == "1"
RESOURCES = os.environ.get("RESOURCES") == "1"
SILENT_LISTEN = os.environ.get("LISTEN") == "silent"
EXTRA_EXTENSION = os.environ.get("EXTRA_EXTENSION")
VERSION_META = "io.modelcontextprotocol/protocolVersion"
CAPS_META = "io.modelcontextprotocol/clientCapabilities"

EVENTS = [
    {
        "name": "ticket.created",
        "description": "A support ticket was opened.",
        "delivery": ["poll", "push"],
        "inputSchema": {"type": "object", "properties": {"queue": {"type": "string"}}},
        "payloadSchema": {"type": "object", "properties": {"title": {"type": "string"}}},
    },
    {
        "name": "build.finished",
        "description": "A CI build finished.",
        "delivery": ["poll", "push", "webhook"],
        "inputSchema": {"type": "object"},
        "payloadSchema": {"type": "object", "properties": {"status": {"type": "string"}}},
    },
]
NAMES = {e["name"]: e for e in EVENTS}
TOOLS = [
    _mini.tool("emit", "Append one occurrence.",
               {"type": "object", "properties": {"name": {"type": "string"},
                                                  "data": {"type": "object"}}}),
    _mini.tool("state", "Open streams, cancelled streams, webhook subscriptions."),
    _mini.tool("end_streams", "End every open stream."),
    _mini.tool("change_types", "Send notifications/events/list_changed (LIST_CHANGED=1)."),
    _mini.tool("fail_streams", "Send notifications/events/<kind> with this error to every open stream.",
               {"type": "object", "properties": {"kind": {"type": "string"},
                                                  "code": {"type": "integer"},
                                                  "message": {"type": "string"},
                                                  "data": {}}}),
]

lock = threading.Lock()
state = {
    "log": [],  # (seq, occurrence, seconds since the epoch) with seq 1, 2, ...
    "seq": 0,
    "streams": {},  # json id text -> {"id": id, "name": name}
    "cancelled": [],
    "subscriptions": {},  # key -> record
    "secrets_seen": 0,
    "listeners": {},  # json id text -> id of subscriptions/listen streams
    "listens": 0,  # subscriptions/listen requests received
    "most_uris": 0,  # the longest resourceSubscriptions one stream asked for
    "declared": False,  # the last tools/call's client declared the extension
}
if SUBSCRIPTIONS_FILE and os.path.exists(SUBSCRIPTIONS_FILE):
    with open(SUBSCRIPTIONS_FILE) as f:
        state["subscriptions"] = json.load(f)


def save_subscriptions():
    # Called with `lock` held.
    if SUBSCRIPTIONS_FILE:
        with open(SUBSCRIPTIONS_FILE, "w") as f:
            json.dump(state["subscriptions"], f)


def send(msg):
    with lock:
        return _mini.write_message(msg)


def notify(method, params):
    send({"jsonrpc": "2.0", "method": method, "params": params})


def now_iso():
    return datetime.datetime.now(datetime.timezone.utc).isoformat().replace("+00:00", "Z")


def cursor_of(pos):
    return "pos-%d" % pos


def parse_cursor(cursor):
    if cursor is None:
        return None
    if isinstance(cursor, str) and cursor.startswith("pos-") and cursor[4:].isdigit():
        return int(cursor[4:])
    raise ValueError("invalid cursor")


def emit(name, data, age_ms=0):
    """Appends one occurrence (dated age_ms ago) and pushes it to the open
    streams of its name."""
    at = time.time() - age_ms / 1000.0
    with lock:
        state["seq"] += 1
        seq = state["seq"]
        when = datetime.datetime.fromtimestamp(at, datetime.timezone.utc)
        occurrence = {"eventId": "evt-%d" % seq, "name": name,
                      "timestamp": when.isoformat().replace("+00:00", "Z"),
                      "data": data or {}}
        state["log"].append((seq, occurrence, at))
        del state["log"][:-KEEP]
        streams = [s for s in state["streams"].values() if s["name"] == name]
    for s in streams:
        push(s, occurrence, seq)
    return occurrence["eventId"]


def push(stream, occurrence, seq):
    params = dict(occurrence)
    params["cursor"] = cursor_of(seq)
    params["_meta"] = {SUB_KEY: stream["id"]}
    notify("notifications/events/event", params)


def replay(name, pos, limit, max_age_ms=None):
    """Occurrences of `name` after `pos` and no older than max_age_ms:
    (events, new position, truncated, more)."""
    with lock:
        log = list(state["log"])
        head = state["seq"]
    if pos is None:
        return [], head, False, False
    oldest = log[0][0] if log else head + 1
    truncated = pos < oldest - 1 and pos < head
    if max_age_ms is not None:
        since = time.time() - max_age_ms / 1000.0
        too_old = [seq for seq, _, at in log if seq > pos and at < since]
        if too_old:
            truncated = True
            pos = max(pos, too_old[-1])
    out, last, more = [], max(pos, oldest - 1) if truncated else pos, False
    for seq, occurrence, _ in log:
        if seq <= last:
            continue
        if occurrence["name"] != name:
            last = seq
            continue
        if len(out) >= limit:
            more = True
            break
        out.append(occurrence)
        last = seq
    if not more:
        last = max(last, head)
    return out, last, truncated, more


def max_age(rid, params):
    """`maxAgeMs` of params: None when absent, False after answering an
    error."""
    value = params.get("maxAgeMs")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        send_error(rid, _mini.INVALID_PARAMS, "maxAgeMs must be a non-negative integer")
        return False
    return value


def check(rid, params):
    """The event type named by params, or None after answering an error."""
    name = params.get("name")
    if name not in NAMES:
        send_error(rid, NOT_FOUND, "Unknown event: %s" % name,
                            {"kind": "event"})
        return None
    if "arguments" in params and not isinstance(params.get("arguments"), dict):
        send_error(rid, _mini.INVALID_PARAMS, "arguments must be an object")
        return None
    return NAMES[name]


def complete(result):
    result["resultType"] = "complete"
    return result


def poll(rid, params):
    if check(rid, params) is None:
        return
    try:
        pos = parse_cursor(params.get("cursor"))
    except ValueError:
        send_error(rid, _mini.INVALID_PARAMS, "Invalid cursor")
        return
    limit = params.get("maxEvents") or 100
    age = max_age(rid, params)
    if age is False:
        return
    events, last, truncated, more = replay(params["name"], pos, limit, age)
    send_result(rid, complete({"events": events, "cursor": cursor_of(last),
                               "truncated": truncated, "hasMore": more,
                               "nextPollMs": 200}))


def send_result(rid, result):
    send({"jsonrpc": "2.0", "id": rid, "result": result})


def send_error(rid, code, message, data=None):
    error = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    send({"jsonrpc": "2.0", "id": rid, "error": error})


def stream(rid, params):
    if check(rid, params) is None:
        return
    try:
        pos = parse_cursor(params.get("cursor"))
    except ValueError:
        send_error(rid, _mini.INVALID_PARAMS, "Invalid cursor")
        return
    age = max_age(rid, params)
    if age is False:
        return
    key = json.dumps(rid)
    s = {"id": rid, "name": params["name"]}
    events, last, truncated, _ = replay(params["name"], pos, 10 ** 9, age)
    start = int(events[0]["eventId"][4:]) - 1 if events else last
    notify("notifications/events/active",
           {"cursor": cursor_of(start), "truncated": truncated, "_meta": {SUB_KEY: rid}})
    for occurrence in events:
        push(s, occurrence, int(occurrence["eventId"][4:]))
    with lock:
        state["streams"][key] = s


def valid_secret(secret):
    import base64
    if not isinstance(secret, str) or not secret.startswith("whsec_"):
        return False
    try:
        raw = base64.b64decode(secret[6:], validate=True)
    except ValueError:
        return False
    return 24 <= len(raw) <= 64


def valid_url(url):
    if not isinstance(url, str):
        return False
    if url.startswith("https://"):
        return True
    for host in ("http://127.0.0.1", "http://localhost", "http://[::1]"):
        if url.startswith(host) and url[len(host):len(host) + 1] in ("", ":", "/"):
            return True
    return False


def subscription_key(params, url):
    return json.dumps([url, params.get("name"), params.get("arguments") or {}], sort_keys=True)


def subscribe(rid, params):
    event = check(rid, params)
    if event is None:
        return
    delivery = params.get("delivery") or {}
    if "webhook" not in event["delivery"]:
        send_error(rid, -32026, "webhook delivery not supported for %s" % event["name"],
                            {"feature": "deliveryMode", "value": "webhook"})
        return
    if delivery.get("mode") != "webhook" or not valid_url(delivery.get("url")):
        send_error(rid, _mini.INVALID_PARAMS, "delivery.url must be https")
        return
    if not valid_secret(delivery.get("secret")):
        send_error(rid, _mini.INVALID_PARAMS, "delivery.secret must be whsec_<base64>")
        return
    try:
        pos = parse_cursor(params.get("cursor"))
    except ValueError:
        send_error(rid, _mini.INVALID_PARAMS, "Invalid cursor")
        return
    age = max_age(rid, params)
    if age is False:
        return
    _, last, truncated, _ = replay(params["name"], pos, 0, age)
    key = subscription_key(params, delivery["url"])
    ttl = params.get("ttlMs", 3600000)
    refresh = None
    if ttl is not None:
        refresh = (datetime.datetime.now(datetime.timezone.utc)
                   + datetime.timedelta(milliseconds=ttl)).isoformat().replace("+00:00", "Z")
    with lock:
        state["secrets_seen"] += 1
        sid = "sub_%d" % (abs(hash(key)) % 10 ** 8)
        state["subscriptions"][key] = {"id": sid, "name": params["name"],
                                       "url": delivery["url"], "ttlMs": ttl,
                                       "arguments": params.get("arguments") or {}}
        save_subscriptions()
    send_result(rid, complete({"id": sid, "refreshBefore": refresh,
                                 "cursor": cursor_of(last), "truncated": truncated}))


def unsubscribe(rid, params):
    if check(rid, params) is None:
        return
    url = (params.get("delivery") or {}).get("url")
    with lock:
        gone = state["subscriptions"].pop(subscription_key(params, url), None)
        save_subscriptions()
    if gone is None:
        send_error(rid, NOT_FOUND, "No such subscription", {"kind": "subscription"})
    else:
        send_result(rid, complete({}))


def ticker():
    n = 0
    while True:
        time.sleep(TICK_MS / 1000.0)
        n += 1
        emit("ticket.created", {"title": "tick %d" % n})


def heartbeats():
    while True:
        time.sleep(HEARTBEAT_MS / 1000.0)
        with lock:
            streams = list(state["streams"].values())
            head = state["seq"]
        for s in streams:
            notify("notifications/events/heartbeat",
                   {"cursor": cursor_of(head), "_meta": {SUB_KEY: s["id"]}})


def capabilities():
    caps = {"tools": {}}
    if RESOURCES:
        caps["resources"] = {"subscribe": True}
    if CAPABILITY in ("extension", "both"):
        caps["extensions"] = {EXTENSION: {"listChanged": LIST_CHANGED}}
    if CAPABILITY in ("top", "both"):
        caps["events"] = {"listChanged": LIST_CHANGED}
    if EXTRA_EXTENSION:
        caps.setdefault("extensions", {})[EXTRA_EXTENSION] = {"flavour": "test"}
    return caps


def call_tool(rid, params):
    name, args = params.get("name"), params.get("arguments") or {}
    if name == "emit":
        event_id = emit(args.get("name", "ticket.created"), args.get("data") or {})
        send_result(rid, _mini.text_result(event_id))
    elif name == "state":
        with lock:
            report = {"streams": [s["id"] for s in state["streams"].values()],
                      "cancelled": list(state["cancelled"]),
                      "subscriptions": sorted(state["subscriptions"].values(),
                                              key=lambda r: r["id"]),
                      "secrets_seen": state["secrets_seen"],
                      "listeners": list(state["listeners"].values()),
                      "listens": state["listens"],
                      "most_uris": state["most_uris"],
                      "declared": state["declared"]}
        send_result(rid, _mini.text_result(json.dumps(report)))
    elif name == "change_types":
        if STATELESS:
            with lock:
                listeners = list(state["listeners"].values())
            for lid in listeners:
                notify("notifications/events/list_changed", {"_meta": {SUB_KEY: lid}})
        elif LIST_CHANGED:
            listeners = [None]
            notify("notifications/events/list_changed", {})
        else:
            listeners = []
        send_result(rid, _mini.text_result(str(len(listeners))))
    elif name == "end_streams":
        with lock:
            streams = list(state["streams"].values())
            state["streams"].clear()
        for s in streams:
            send_result(s["id"], {"_meta": {}})
        send_result(rid, _mini.text_result(str(len(streams))))
    elif name == "fail_streams":
        kind = args.get("kind", "error")
        error = {"code": args.get("code", -32603), "message": args.get("message", "failed")}
        if "data" in args:
            error["data"] = args["data"]
        with lock:
            streams = list(state["streams"].values())
            if kind == "terminated":
                state["streams"].clear()
        for s in streams:
            notify("notifications/events/" + kind, {"error": error, "_meta": {SUB_KEY: s["id"]}})
        send_result(rid, _mini.text_result(str(len(streams))))
    else:
        send_error(rid, _mini.INVALID_PARAMS, "Unknown tool: %s" % name)


def listen(rid, params):
    # Only what this server offers is acknowledged; the stream stays open
    # (no answer) until cancelled.
    asked = params.get("notifications") or {}
    accepted = {}
    if LIST_CHANGED and asked.get("eventsListChanged") is True:
        accepted["eventsListChanged"] = True
    uris = asked.get("resourceSubscriptions")
    if RESOURCES and isinstance(uris, list) and uris:
        accepted["resourceSubscriptions"] = uris
    with lock:
        state["listens"] += 1
        state["most_uris"] = max(state["most_uris"], len(uris) if isinstance(uris, list) else 0)
    if SILENT_LISTEN:
        with lock:
            state["listeners"][json.dumps(rid)] = rid
        return
    notify("notifications/subscriptions/acknowledged",
           {"_meta": {SUB_KEY: rid}, "notifications": accepted})
    if accepted:
        with lock:
            state["listeners"][json.dumps(rid)] = rid


def main():
    for n in range(PRELOAD):
        emit("ticket.created", {"title": "preloaded %d" % n}, PRELOAD_AGE_MS)
    if TICK_MS > 0:
        threading.Thread(target=ticker, daemon=True).start()
    if HEARTBEAT_MS > 0:
        threading.Thread(target=heartbeats, daemon=True).start()
    while True:
        msg = _mini.read_message()
        if msg is None:
            return
        if not isinstance(msg, dict) or "method" not in msg:
            continue
        method, params = msg["method"], msg.get("params") or {}
        if "id" not in msg:
            if method == "notifications/cancelled":
                key = json.dumps(params.get("requestId"))
                with lock:
                    if state["streams"].pop(key, None) is not None:
                        state["cancelled"].append(params.get("requestId"))
                    state["listeners"].pop(key, None)
            continue
        rid = msg["id"]
        if STATELESS and method == "tools/call":
            caps = (params.get("_meta") or {}).get(CAPS_META) or {}
            with lock:
                state["declared"] = EXTENSION in (caps.get("extensions") or {})
        if STATELESS and method == "server/discover":
            send_result(rid, complete({
                "supportedVersions": ["2026-07-28"],
                "capabilities": capabilities(),
                "serverInfo": {"name": "events-server", "version": "0.1.0"}}))
        elif STATELESS and method == "initialize":
            send_error(rid, _mini.INVALID_PARAMS, "Unsupported protocol version",
                       {"supported": ["2026-07-28"],
                        "requested": params.get("protocolVersion")})
        elif STATELESS and (params.get("_meta") or {}).get(VERSION_META) != "2026-07-28":
            send_error(rid, _mini.INVALID_PARAMS,
                       "%s: _meta %s must be 2026-07-28" % (method, VERSION_META))
        elif method == "initialize":
            send_result(rid, _mini.initialize_result(params, "events-server",
                                                     capabilities=capabilities()))
        elif method == "ping":
            send_result(rid, {})
        elif method == "tools/list":
            send_result(rid, complete({"tools": TOOLS}) if STATELESS else {"tools": TOOLS})
        elif method == "tools/call":
            call_tool(rid, params)
        elif RESOURCES and method == "resources/list":
            send_result(rid, complete({"resources": []}) if STATELESS else {"resources": []})
        elif method == "events/list":
            # Two pages, to exercise pagination.
            if params.get("cursor") == "page-2":
                send_result(rid, complete({"events": EVENTS[1:]}))
            else:
                send_result(rid, complete({"events": EVENTS[:1], "nextCursor": "page-2"}))
        elif method == "events/poll":
            poll(rid, params)
        elif method == "events/stream":
            stream(rid, params)
        elif method == "events/subscribe":
            subscribe(rid, params)
        elif method == "events/unsubscribe":
            unsubscribe(rid, params)
        elif STATELESS and method == "subscriptions/listen":
            listen(rid, params)
        else:
            send_error(rid, _mini.METHOD_NOT_FOUND, "Method not found: %s" % method)


if __name__ == "__main__":
    main()
