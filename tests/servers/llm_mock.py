#!/usr/bin/env python3
"""llm_mock: a scripted local LLM endpoint speaking the real OpenAI Chat
Completions and Anthropic Messages wire formats, streamed (SSE) and not.

Python 3 standard library only (runs with a bare ``python3`` or
``.deps/venv/bin/python``). Used by the mcpmux tests in place of the real
APIs: every answer is taken from a script, every request is logged.

Command line
============

    python3 tests/servers/llm_mock.py --script SCRIPT.json [--port 0]
        [--host 127.0.0.1] [--log REQUESTS.jsonl] [--reload]

When it listens it prints exactly one line on stdout, ``{"port": N}``
(JSON, flushed), and nothing else on stdout. Diagnostics go to stderr. It
runs until killed (SIGTERM / SIGKILL / Ctrl-C).

- ``--port 0`` (default) picks a free port.
- ``--log FILE`` appends one JSON line per request received (see "Log").
- ``--reload`` re-reads the script file on every request. When its content
  changed since the last read, every script starts again at its first step
  (tests rewrite the file with the next round's steps).

Endpoints
=========

- ``POST .../chat/completions`` (any prefix: ``/v1/chat/completions``,
  ``/chat/completions``): OpenAI Chat Completions.
- ``POST .../messages`` (``/v1/messages``): Anthropic Messages.
- ``GET /health``: ``{"ok": true}`` (not logged, consumes no step).
- Anything else: 404 in the OpenAI error shape (logged, consumes no step).

The request's ``"stream": true`` selects an SSE answer, exactly as the real
APIs stream: OpenAI ``data: {chat.completion.chunk}`` lines ending with
``data: [DONE]`` (plus a usage chunk when ``stream_options.include_usage``);
Anthropic ``event:`` + ``data:`` pairs ``message_start``,
``content_block_start`` / ``ping`` / ``content_block_delta`` (``text_delta``,
``input_json_delta``, ``thinking_delta``, ``signature_delta``) /
``content_block_stop``, ``message_delta``, ``message_stop``. Text and tool
arguments are cut into several small deltas (``chunk_chars``, default 5).
Errors use the real shapes: OpenAI ``{"error": {"message", "type", "param",
"code"}}``, Anthropic ``{"type": "error", "error": {"type", "message"},
"request_id"}``.

Script
======

The script file is JSON, one of:

- a list of steps: one script shared by every request;
- ``{"steps": [...]}``: the same;
- ``{"scripts": {"model-a": [...], "model-b": [...], "*": [...]}}``: one
  script per request ``model`` field; ``"*"`` (optional) serves models
  not listed. A request whose model has no script gets 404
  ``not_found_error`` naming the known scripts.

Each request, whatever its endpoint, consumes the next step of its script.
When a script is exhausted the answer is 500 with a message saying so (the
step is not consumed, so retries see the same message).

Step fields (all optional; ``{}`` answers an empty text):

- ``"text": "..."``: the answer text.
- ``"tool_calls": [{"name": "mcp_demo_echo", "arguments": {"text": "hi"}}]``:
  tool calls, in order. Per call: ``"id"`` (default generated like the real
  APIs: ``call_`` + 24 characters / ``toolu_01`` + 22), ``"arguments"``
  (JSON value, sent as the API does) or ``"raw_arguments": "text"`` (sent
  verbatim as the argument text, e.g. broken JSON).
- ``"raw_arguments": "not json"``: shorthand for one more tool call named
  ``"tool_name"`` (default ``"broken_tool"``) with that argument text.
- ``"thinking": "..."``: Anthropic only: a thinking block (with a
  signature) before the text.
- ``"stop_reason": "..."``: overrides the finish / stop reason (default
  ``stop`` / ``tool_calls`` for OpenAI, ``end_turn`` / ``tool_use`` for
  Anthropic).
- ``"status": 429``: answer this HTTP error instead, in the provider's error
  shape, with ``"error_message"`` (default a realistic message),
  ``"error_type"`` (default by status: ``rate_limit_error``,
  ``api_error``, ... / ``requests``, ``server_error``, ...),
  ``"retry_after": seconds`` (a ``retry-after`` header),
  ``"retry_after_ms": ms`` (a ``retry-after-ms`` header) and
  ``"echo_auth": true`` (the message repeats the received API key, as a
  careless server would; for tests that check the client scrubs it).
- ``"hang": true``: read the request, then send nothing at all for
  ``"hang_seconds"`` (default 600), then close.
- ``"disconnect": true``: close the connection without any response.
- ``"stall_after_chunks": N``: streaming only: send the headers and N
  events, then nothing for ``hang_seconds``.
- ``"stream_chunk_delay_ms": N``: pause N ms before each streamed event
  (and before a whole answer).
- ``"stream_error": "message"`` or ``{"type", "message"}``: streaming only:
  after the text, an error event (Anthropic ``event: error``, OpenAI
  ``data: {"error": ...}``), then the stream ends.
- ``"truncate": true``: streaming only: end the stream after the content,
  without the final chunk / ``message_stop`` / ``[DONE]``.
- ``"ignore_stream": true``: answer whole JSON even to a streaming
  request (as some OpenAI-compatible servers do).
- ``"raw_body": "..."``: answer this text verbatim (``"status"`` default
  200, ``"content_type"`` default ``application/json``).
- ``"chunk_chars": N``: delta size for this step.
- ``"expect": ...``: checks on the request; when one fails the answer is 400
  (``invalid_request_error``) whose message says which. Forms:
  ``"substring"``, ``["s1", "s2"]``, or ``{"contains": [...],
  "not_contains": [...], "model": "...", "stream": bool, "auth": bool,
  "provider": "openai"|"anthropic"}``. Substrings are searched in the raw
  body and in the body re-serialized compactly
  (``json.dumps(separators=(",", ":"), ensure_ascii=False)``), so
  ``"\\"role\\":\\"tool\\""`` matches whatever spacing the client used.

Log
===

With ``--log``, each request appends one JSON object (one line)::

    {"seq": 1, "time": 1700000000.1, "method": "POST",
     "path": "/v1/chat/completions", "provider": "openai",
     "model": "gpt-4.1", "stream": true,
     "auth": true, "auth_headers": {"authorization": true, "x-api-key": false},
     "headers": {"content-type": "application/json",
                 "authorization": "<redacted>", ...},
     "body": {...the request JSON...}, "script": "*", "step": 0}

Header names are lower-case; the values of ``authorization``,
``x-api-key``, ``api-key``, ``proxy-authorization`` and ``cookie`` are
replaced by ``"<redacted>"`` (only their presence is recorded). ``body`` is
``null`` and ``raw_body`` holds the text when the body is not JSON;
``step`` is ``null`` when no step was consumed.

Example
=======

    [{"text": "Let me check.",
      "tool_calls": [{"name": "mcp_demo_echo", "arguments": {"text": "hi"}}]},
     {"expect": "\\"role\\":\\"tool\\"", "text": "```json\\n{\\"verdict\\":\\"APPROVE\\",\\"blocks\\":[]}\\n```"},
     {"status": 429, "retry_after": 0},
     {"status": 500},
     {"hang": true},
     {"raw_arguments": "not json"}]
"""

import argparse
import http.server
import json
import random
import socketserver
import string
import sys
import threading
import time

REDACTED_HEADERS = {"authorization", "x-api-key", "api-key", "proxy-authorization", "cookie"}

OPENAI_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    403: "invalid_request_error",
    404: "invalid_request_error",
    429: "requests",
}
ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
DEFAULT_MESSAGES = {
    400: "Invalid request (llm_mock).",
    401: "Invalid API key (llm_mock).",
    404: "Not found (llm_mock).",
    429: "Rate limit reached for requests (llm_mock).",
    500: "The server had an error while processing your request (llm_mock).",
    503: "The service is temporarily unavailable (llm_mock).",
    529: "Overloaded (llm_mock).",
}


def log(text):
    sys.stderr.write("llm_mock: " + text + "\n")
    sys.stderr.flush()


def rand_id(n):
    alphabet = string.ascii_letters + string.digits
    return "".join(random.choice(alphabet) for _ in range(n))


class MockError(Exception):
    """An answer the mock gives instead of a scripted step."""

    def __init__(self, status, message, kind=None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind


class State:
    """The scripts, each one's next step, and the request log."""

    def __init__(self, script_path, log_path, reload):
        self.script_path = script_path
        self.log_path = log_path
        self.reload = reload
        self.lock = threading.Lock()
        self.seq = 0
        self.content = None
        self.scripts = {}
        self.positions = {}
        self.load(startup=True)

    def load(self, startup=False):
        try:
            with open(self.script_path, "r", encoding="utf-8") as f:
                content = f.read()
        except OSError as e:
            raise MockError(500, "llm_mock: cannot read the script file %s: %s" % (self.script_path, e))
        if content == self.content:
            return
        try:
            scripts = parse_script(json.loads(content))
        except (ValueError, TypeError) as e:
            message = "llm_mock: script file %s is not valid: %s" % (self.script_path, e)
            if startup:
                raise SystemExit(message)
            raise MockError(500, message)
        self.content = content
        self.scripts = scripts
        self.positions = {}

    def next_step(self, model):
        """(script name, step index, step) for a request naming `model`."""
        with self.lock:
            if self.reload:
                self.load()
            name = model if isinstance(model, str) and model in self.scripts else None
            if name is None and "*" in self.scripts:
                name = "*"
            if name is None:
                raise MockError(
                    404,
                    "llm_mock: no script for model %r (scripts: %s)"
                    % (model, ", ".join(sorted(self.scripts))),
                    "not_found_error",
                )
            steps = self.scripts[name]
            pos = self.positions.get(name, 0)
            if pos >= len(steps):
                raise MockError(
                    500,
                    "llm_mock: script %r is exhausted: all %d steps were used, "
                    "this request was not scripted" % (name, len(steps)),
                )
            self.positions[name] = pos + 1
            return name, pos, steps[pos]

    def write_log(self, entry):
        with self.lock:
            self.seq += 1
            entry["seq"] = self.seq
            if self.log_path:
                with open(self.log_path, "a", encoding="utf-8") as f:
                    f.write(json.dumps(entry, ensure_ascii=False) + "\n")
                    f.flush()


def parse_script(doc):
    if isinstance(doc, list):
        scripts = {"*": doc}
    elif isinstance(doc, dict) and isinstance(doc.get("steps"), list):
        scripts = {"*": doc["steps"]}
    elif isinstance(doc, dict) and isinstance(doc.get("scripts"), dict):
        scripts = doc["scripts"]
    else:
        raise ValueError('expected a list of steps, {"steps": [...]} or {"scripts": {model: [...]}}')
    for name, steps in scripts.items():
        if not isinstance(steps, list):
            raise ValueError("script %r is not a list of steps" % name)
        for i, step in enumerate(steps):
            if not isinstance(step, dict):
                raise ValueError("step %d of script %r is not an object" % (i, name))
    return scripts


def check_expect(expect, raw, body, headers, provider, has_auth):
    """None when the request meets `expect`, else why not."""
    if isinstance(expect, str):
        expect = {"contains": [expect]}
    elif isinstance(expect, list):
        expect = {"contains": expect}
    if not isinstance(expect, dict):
        return "the step's expect must be a string, a list or an object"
    compact = json.dumps(body, separators=(",", ":"), ensure_ascii=False) if body is not None else raw
    contains = expect.get("contains", [])
    if isinstance(contains, str):
        contains = [contains]
    for s in contains:
        if s not in raw and s not in compact:
            return "the request body does not contain %r" % s
    not_contains = expect.get("not_contains", [])
    if isinstance(not_contains, str):
        not_contains = [not_contains]
    for s in not_contains:
        if s in raw or s in compact:
            return "the request body contains %r" % s
    body = body if isinstance(body, dict) else {}
    if "model" in expect and body.get("model") != expect["model"]:
        return "the request model is %r, expected %r" % (body.get("model"), expect["model"])
    if "stream" in expect and bool(body.get("stream")) != bool(expect["stream"]):
        return "the request stream is %r, expected %r" % (bool(body.get("stream")), expect["stream"])
    if "auth" in expect and has_auth != bool(expect["auth"]):
        return "an auth header was %s" % ("sent" if has_auth else "not sent")
    if "provider" in expect and provider != expect["provider"]:
        return "the request went to the %s endpoint, expected %s" % (provider, expect["provider"])
    return None


def pieces(text, size):
    size = max(1, int(size))
    return [text[i : i + size] for i in range(0, len(text), size)] or []


class Answer:
    """The content of one scripted answer, provider-neutral."""

    def __init__(self, step, provider):
        self.text = step.get("text", "")
        if not isinstance(self.text, str):
            self.text = json.dumps(self.text)
        self.thinking = step.get("thinking")
        self.chunk = step.get("chunk_chars", 5)
        self.calls = []
        for call in step.get("tool_calls", []) or []:
            self.add_call(call, provider)
        if "raw_arguments" in step:
            self.add_call(
                {"name": step.get("tool_name", "broken_tool"), "raw_arguments": step["raw_arguments"]},
                provider,
            )
        default_stop = {
            ("openai", False): "stop",
            ("openai", True): "tool_calls",
            ("anthropic", False): "end_turn",
            ("anthropic", True): "tool_use",
        }[(provider, bool(self.calls))]
        self.stop = step.get("stop_reason", default_stop)

    def add_call(self, call, provider):
        if "raw_arguments" in call:
            args = str(call["raw_arguments"])
        else:
            args = json.dumps(call.get("arguments", {}), ensure_ascii=False, separators=(",", ":"))
        default_id = "call_" + rand_id(24) if provider == "openai" else "toolu_01" + rand_id(22)
        self.calls.append({"id": call.get("id") or default_id, "name": call.get("name", "tool"), "args": args})


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "llm_mock/1"
    state = None  # set in main

    def log_message(self, fmt, *args):  # quiet: the JSONL log is the record
        pass

    # ----- plumbing -------------------------------------------------------

    def send_json(self, status, obj, extra_headers=None):
        data = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        self.send_raw(status, data, "application/json", extra_headers)

    def send_raw(self, status, data, content_type, extra_headers=None):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        for k, v in (extra_headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()
        self.close_connection = True

    def start_stream(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.flush()
        self.close_connection = True

    def write_chunk(self, text):
        data = text.encode("utf-8")
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def end_stream(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def send_error_shape(self, provider, status, message, kind=None, extra_headers=None):
        if provider == "anthropic":
            kind = kind or ANTHROPIC_ERROR_TYPES.get(status, "api_error")
            obj = {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_011" + rand_id(21)}
        else:
            kind = kind or OPENAI_ERROR_TYPES.get(status, "server_error")
            code = "rate_limit_exceeded" if status == 429 else None
            obj = {"error": {"message": message, "type": kind, "param": None, "code": code}}
        self.send_json(status, obj, extra_headers)

    def read_body(self):
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline().strip():
                        pass  # trailers
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    # ----- requests -------------------------------------------------------

    def do_GET(self):
        if self.path.split("?")[0] == "/health":
            self.send_json(200, {"ok": True})
        else:
            self.send_error_shape("openai", 404, "llm_mock: no route GET %s" % self.path, "invalid_request_error")

    def do_POST(self):
        state = self.state
        raw_bytes = self.read_body()
        raw = raw_bytes.decode("utf-8", "replace")
        path = self.path.split("?")[0]
        if path.endswith("/chat/completions"):
            provider = "openai"
        elif path.endswith("/messages"):
            provider = "anthropic"
        else:
            provider = None
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {}
        auth_headers = {"authorization": False, "x-api-key": False}
        for k, v in self.headers.items():
            lk = k.lower()
            if lk in REDACTED_HEADERS:
                headers[lk] = "<redacted>"
                auth_headers[lk] = True
            else:
                headers[lk] = v
        has_auth = auth_headers["authorization"] or auth_headers["x-api-key"]
        model = body.get("model") if isinstance(body, dict) else None
        stream = bool(body.get("stream")) if isinstance(body, dict) else False
        entry = {
            "time": time.time(),
            "method": "POST",
            "path": self.path,
            "provider": provider,
            "model": model,
            "stream": stream,
            "auth": has_auth,
            "auth_headers": auth_headers,
            "headers": headers,
            "body": body,
            "script": None,
            "step": None,
        }
        if body is None and raw:
            entry["raw_body"] = raw

        try:
            if provider is None:
                raise MockError(404, "llm_mock: no route POST %s" % path, "invalid_request_error")
            if not isinstance(body, dict):
                raise MockError(400, "llm_mock: the request body is not a JSON object", "invalid_request_error")
            name, index, step = state.next_step(model)
            entry["script"], entry["step"] = name, index
        except MockError as e:
            state.write_log(entry)
            self.send_error_shape(provider or "openai", e.status, e.message, e.kind)
            return
        state.write_log(entry)

        try:
            self.answer(provider, step, name, index, raw, body, stream, has_auth)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client went away (a timeout in a test): fine

    def answer(self, provider, step, name, index, raw, body, stream, has_auth):
        where = "step %d of script %r" % (index, name)
        if "expect" in step:
            why = check_expect(step["expect"], raw, body, self.headers, provider, has_auth)
            if why:
                self.send_error_shape(provider, 400, "llm_mock: %s: %s" % (where, why), "invalid_request_error")
                return
        delay = step.get("stream_chunk_delay_ms", 0) / 1000.0
        hang_seconds = float(step.get("hang_seconds", 600))
        if step.get("hang"):
            time.sleep(hang_seconds)
            self.close_connection = True
            return
        if step.get("disconnect"):
            self.close_connection = True
            return
        if "raw_body" in step:
            self.send_raw(
                int(step.get("status", 200)),
                str(step["raw_body"]).encode("utf-8"),
                step.get("content_type", "application/json"),
            )
            return
        status = int(step.get("status", 200))
        if status >= 300:
            extra = {}
            if "retry_after" in step:
                extra["retry-after"] = str(step["retry_after"])
            if "retry_after_ms" in step:
                extra["retry-after-ms"] = str(step["retry_after_ms"])
            message = step.get("error_message") or DEFAULT_MESSAGES.get(status, "Error %d (llm_mock)." % status)
            if step.get("echo_auth"):
                key = self.headers.get("x-api-key") or (self.headers.get("authorization") or "").replace("Bearer ", "")
                message = "Incorrect API key provided: %s. %s" % (key, message)
            self.send_error_shape(provider, status, message, step.get("error_type"), extra)
            return
        answer = Answer(step, provider)
        if delay:
            time.sleep(delay)
        if not stream or step.get("ignore_stream"):
            if provider == "openai":
                self.send_json(200, openai_whole(answer, body))
            else:
                self.send_json(200, anthropic_whole(answer, body))
            return
        events = openai_events(answer, body, step) if provider == "openai" else anthropic_events(answer, body, step)
        self.start_stream()
        stall = step.get("stall_after_chunks")
        for n, event in enumerate(events):
            if stall is not None and n >= int(stall):
                time.sleep(hang_seconds)
                return
            if delay and n:
                time.sleep(delay)
            self.write_chunk(event)
        self.end_stream()


# ----- OpenAI Chat Completions ------------------------------------------


def usage_of(body, answer):
    prompt = max(1, len(json.dumps(body)) // 4)
    completion = max(1, (len(answer.text) + sum(len(c["args"]) for c in answer.calls)) // 4)
    return prompt, completion


def openai_whole(answer, body):
    prompt, completion = usage_of(body, answer)
    message = {"role": "assistant", "content": answer.text or None, "refusal": None, "annotations": []}
    if answer.calls:
        message["tool_calls"] = [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["args"]}}
            for c in answer.calls
        ]
    elif message["content"] is None:
        message["content"] = ""
    return {
        "id": "chatcmpl-" + rand_id(29),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model"),
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": answer.stop}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
        "service_tier": "default",
        "system_fingerprint": "fp_llm_mock",
    }


def openai_events(answer, body, step):
    cid = "chatcmpl-" + rand_id(29)
    created = int(time.time())
    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))

    def chunk(delta, finish=None, choices=True):
        obj = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": body.get("model"),
            "service_tier": "default",
            "system_fingerprint": "fp_llm_mock",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}] if choices else [],
        }
        if include_usage:
            obj["usage"] = None
        return "data: " + json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n\n"

    yield chunk({"role": "assistant", "content": "", "refusal": None})
    for piece in pieces(answer.text, answer.chunk):
        yield chunk({"content": piece})
    for i, c in enumerate(answer.calls):
        yield chunk(
            {"tool_calls": [{"index": i, "id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": ""}}]}
        )
        for piece in pieces(c["args"], answer.chunk):
            yield chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
    if "stream_error" in step:
        err = step["stream_error"]
        if isinstance(err, str):
            err = {"message": err, "type": "server_error"}
        yield "data: " + json.dumps({"error": dict({"param": None, "code": None}, **err)}, separators=(",", ":")) + "\n\n"
        return
    if step.get("truncate"):
        return
    yield chunk({}, answer.stop)
    if include_usage:
        prompt, completion = usage_of(body, answer)
        obj = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": body.get("model"),
            "choices": [],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
        }
        yield "data: " + json.dumps(obj, separators=(",", ":")) + "\n\n"
    yield "data: [DONE]\n\n"


# ----- Anthropic Messages -----------------------------------------------


def anthropic_whole(answer, body):
    prompt, completion = usage_of(body, answer)
    content = []
    if answer.thinking:
        content.append({"type": "thinking", "thinking": answer.thinking, "signature": "sig_" + rand_id(40)})
    if answer.text or not answer.calls:
        content.append({"type": "text", "text": answer.text})
    for c in answer.calls:
        try:
            parsed = json.loads(c["args"])
        except ValueError:
            parsed = c["args"]  # what a broken server would send: not an object
        content.append({"type": "tool_use", "id": c["id"], "name": c["name"], "input": parsed})
    return {
        "id": "msg_01" + rand_id(22),
        "type": "message",
        "role": "assistant",
        "model": body.get("model"),
        "content": content,
        "stop_reason": answer.stop,
        "stop_sequence": None,
        "usage": {"input_tokens": prompt, "output_tokens": completion},
    }


def sse(name, obj):
    return "event: %s\ndata: %s\n\n" % (name, json.dumps(obj, ensure_ascii=False, separators=(",", ":")))


def anthropic_events(answer, body, step):
    prompt, completion = usage_of(body, answer)
    yield sse(
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": "msg_01" + rand_id(22),
                "type": "message",
                "role": "assistant",
                "model": body.get("model"),
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": prompt, "output_tokens": 1},
            },
        },
    )
    index = 0
    pinged = False

    def ping():
        return sse("ping", {"type": "ping"})

    if answer.thinking:
        yield sse("content_block_start", {"type": "content_block_start", "index": index, "content_block": {"type": "thinking", "thinking": "", "signature": ""}})
        if not pinged:
            pinged = True
            yield ping()
        for piece in pieces(answer.thinking, answer.chunk):
            yield sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": piece}})
        yield sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "signature_delta", "signature": "sig_" + rand_id(40)}})
        yield sse("content_block_stop", {"type": "content_block_stop", "index": index})
        index += 1
    if answer.text or not answer.calls:
        yield sse("content_block_start", {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
        if not pinged:
            pinged = True
            yield ping()
        for piece in pieces(answer.text, answer.chunk):
            yield sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}})
        yield sse("content_block_stop", {"type": "content_block_stop", "index": index})
        index += 1
    for c in answer.calls:
        yield sse(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": c["id"], "name": c["name"], "input": {}}},
        )
        yield sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": ""}})
        for piece in pieces(c["args"], answer.chunk):
            yield sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": piece}})
        yield sse("content_block_stop", {"type": "content_block_stop", "index": index})
        index += 1
    if "stream_error" in step:
        err = step["stream_error"]
        if isinstance(err, str):
            err = {"type": "overloaded_error", "message": err}
        yield sse("error", {"type": "error", "error": err})
        return
    if step.get("truncate"):
        return
    yield sse(
        "message_delta",
        {"type": "message_delta", "delta": {"stop_reason": answer.stop, "stop_sequence": None}, "usage": {"output_tokens": completion}},
    )
    yield sse("message_stop", {"type": "message_stop"})


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--script", required=True, help="JSON script file (see the module docstring)")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (0: pick a free one)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--log", help="append one JSON line per request to this file")
    parser.add_argument("--reload", action="store_true", help="re-read the script file on every request")
    args = parser.parse_args()
    try:
        Handler.state = State(args.script, args.log, args.reload)
    except SystemExit as e:
        log(str(e))
        return 2
    except MockError as e:
        log(e.message)
        return 2
    server = Server((args.host, args.port), Handler)
    sys.stdout.write(json.dumps({"port": server.server_address[1]}) + "\n")
    sys.stdout.flush()
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
