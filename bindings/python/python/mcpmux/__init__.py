"""mcpmux: use the tools of many MCP servers from Python, sync or asyncio.

>>> import mcpmux
>>> with mcpmux.Hub.connect("mcpmux.toml") as hub:            # doctest: +SKIP
...     for tool in hub.list_tools():
...         print(tool["name"], tool["server"])
...     result = hub.call_tool("mcp_demo_echo", {"text": "hi"})
...     print(result["content"][0]["text"])

``Hub`` is the blocking API; ``AsyncHub`` has the same methods as
coroutines. Both run on one engine (``mcpmux-core``, Rust) that starts every
server at once, names tools ``mcp_{server}_{tool}``, and never hangs on a
dead or misbehaving server. Results are plain ``dict``/``list`` values:
tool results are the MCP ``CallToolResult`` exactly as the server sent it.
Errors are :class:`McpmuxError` subclasses, one per stable code.

Threads: the engine runs on its own threads (one runtime per process); a
blocking call releases the GIL while it waits; an async call never blocks
the event loop. Events (``hub.events()``, ``on_event=``) reach Python on the
thread that iterates, or, for ``on_event``, on one ``mcpmux-events`` thread
per hub (``AsyncHub``: then on the event loop's thread); never on an engine
thread. Hub objects may be shared between threads; an ``AsyncHub``
may be used from any event loop.
"""

from __future__ import annotations

import asyncio
import atexit
import collections.abc
import functools
import inspect
import json
import os
import threading
import time
import warnings
import weakref
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

from . import _native
from ._requests import RequestHandler, RootsArg, request_options, roots_list
from ._errors import (
    AuthFailed,
    AuthRequired,
    Cancelled,
    ConfigInvalid,
    ConfigUntrusted,
    OutputInvalid,
    ToolChanged,
    ConnectFailed,
    Internal,
    InvalidInput,
    InvalidSession,
    LimitExceeded,
    McpmuxError,
    ProtocolError,
    ProviderError,
    ReviewerNotFound,
    RoundStillRunning,
    ServerError,
    Timeout,
    ToolNotAllowed,
    TransportClosed,
    UnknownServer,
    UnknownSkill,
    UnknownTool,
)

__all__ = [
    "Hub",
    "AsyncHub",
    "Events",
    "AsyncEvents",
    "EventStream",
    "Policy",
    "AsyncPolicy",
    "Sessions",
    "AsyncSessions",
    "ERROR_CODES",
    "McpmuxError",
    "ConfigInvalid",
    "InvalidInput",
    "UnknownServer",
    "UnknownTool",
    "ToolNotAllowed",
    "ConnectFailed",
    "TransportClosed",
    "Timeout",
    "Cancelled",
    "ProtocolError",
    "ServerError",
    "LimitExceeded",
    "ProviderError",
    "UnknownSkill",
    "ReviewerNotFound",
    "InvalidSession",
    "RoundStillRunning",
    "Internal",
    "AuthRequired",
    "AuthFailed",
    "ConfigUntrusted",
    "OutputInvalid",
    "ToolChanged",
]

#: The version of the mcpmux engine inside this package.
__version__: str = _native.ENGINE_VERSION

#: Every stable error code, as the engine lists them (docs/errors.md#codes).
ERROR_CODES: tuple = tuple(_native.ERROR_CODES)

# How a call reads the host's active OpenTelemetry context: None until the
# first call, then False (mcpmux exports nothing, or `opentelemetry` is not
# importable: never required) or the function that reads it.
_TRACE_READER: Any = None


def _trace_reader() -> Any:
    if not _native.telemetry_enabled():
        return False
    try:
        from opentelemetry import trace as otel_trace
        from opentelemetry.trace.propagation.tracecontext import (
            TraceContextTextMapPropagator,
        )
    except ImportError:
        return False
    propagator = TraceContextTextMapPropagator()

    def read() -> Dict[str, str]:
        if not otel_trace.get_current_span().get_span_context().is_valid:
            return {}
        carrier: Dict[str, str] = {}
        propagator.inject(carrier)
        return {k: v for k, v in carrier.items() if k in ("traceparent", "tracestate") and v}

    return read


def _trace_context() -> Dict[str, str]:
    """The host's active span as W3C fields for a call (``traceparent``,
    ``tracestate``), so that mcpmux's spans are its children; empty when
    mcpmux's telemetry is off (no ``OTEL_*`` endpoint), ``opentelemetry`` is
    not installed, or no span is active."""
    global _TRACE_READER
    if _TRACE_READER is None:
        _TRACE_READER = _trace_reader()
    return _TRACE_READER() if _TRACE_READER else {}

def _explicit_trace(traceparent: Optional[str], tracestate: Optional[str]) -> Dict[str, str]:
    """The trace context of a call: the host's explicit ``traceparent`` /
    ``tracestate`` when given, else the active span (:func:`_trace_context`)."""
    if traceparent is None and tracestate is None:
        return _trace_context()
    out: Dict[str, str] = {}
    if traceparent is not None:
        out["traceparent"] = traceparent
    if tracestate is not None:
        out["tracestate"] = tracestate
    return out


def _warn_failed_servers(native: Any) -> None:
    """Warns (``RuntimeWarning``) which servers failed, so a tool list that
    lacks their tools says so; the engine words the note."""
    note = native.failed_servers_note()
    if note:
        warnings.warn(f"mcpmux: {note}", RuntimeWarning, stacklevel=3)


#: At interpreter exit, open hubs get this long (seconds) to let their
#: servers exit after stdin is closed; what is left is then killed.
EXIT_GRACE_SECONDS = 1.0

Config = Union[str, "os.PathLike[str]", Mapping[str, Any]]
ProgressCallback = Callable[[float, Optional[float], Optional[str]], Any]
#: Receives each hub event: ``{"type": "server_state" | "tools_changed" |
#: "resources_changed" | "prompts_changed" | "events_changed" |
#: "resource_updated" | "log" |
#: "task_status" | "event" | "event_stream" | "lagged", ...}``.
EventCallback = Callable[[Dict[str, Any]], Any]


class Events:
    """The events of a hub from when :meth:`Hub.events` was called, as
    dicts (``{"type": "server_state", "server", "state", "error"?,
    "code"?, "attempt"}``, ``{"type": "tools_changed", "server", "added",
    "removed"}``, ``resources_changed``, ``prompts_changed``,
    ``events_changed`` (``{"server"}``), ``{"type": "resource_updated", "server", "uri"}``,
    ``{"type": "log", "server", "level", "logger"?, "data"}``,
    ``{"type": "task_status", "server", "task_id", "status",
    "message"?}``; of a :meth:`Hub.stream_events` stream ``{"type":
    "event", "server", "subscription", "name", "event_id", "timestamp"?,
    "data", "cursor"?}`` and ``{"type": "event_stream", "server",
    "subscription", "state", "cursor"?, "truncated", "error"?,
    "error_code"?, "error_data"?}``).
    ``next()`` blocks the calling thread with the GIL
    released until an event comes (Ctrl-C interrupts it and loses none).
    Iteration ends once the hub is closed (after the events closing sent).
    An iterator that falls behind loses its oldest events (the engine never
    waits for it): the next event is then ``{"type": "lagged", "count": n}``.
    """

    __slots__ = ("_native",)

    def __init__(self, native: Any) -> None:
        """Internal: use :meth:`Hub.events`."""
        self._native = native

    def __iter__(self) -> "Events":
        return self

    def __next__(self) -> Dict[str, Any]:
        event = self._native.next()
        if event is None:
            raise StopIteration
        return event


class AsyncEvents:
    """:class:`Events` as an async iterator (``async for event in
    hub.events()``), made by :meth:`AsyncHub.events`; waiting never blocks
    the event loop."""

    __slots__ = ("_native",)

    def __init__(self, native: Any) -> None:
        """Internal: use :meth:`AsyncHub.events`."""
        self._native = native

    def __aiter__(self) -> "AsyncEvents":
        return self

    async def __anext__(self) -> Dict[str, Any]:
        event = await _run(self._native.next)
        if event is None:
            raise StopAsyncIteration
        return event


class EventStream:
    """An open stream of an event type (events extension), made by
    :meth:`Hub.stream_events` / :meth:`AsyncHub.stream_events`. Its
    occurrences arrive on the hub's events (:meth:`Hub.events`,
    ``on_event=``) as ``event`` dicts whose ``subscription`` is this
    stream's :attr:`id`; changes of the stream (``active``, ``error``,
    ``reconnecting``, ``terminated``, ``ended``, ``failed``) as
    ``event_stream`` dicts. :meth:`stop` ends it, and so does leaving a
    ``with`` (or ``async with``) block or dropping the object."""

    __slots__ = ("_native",)

    def __init__(self, native: Any) -> None:
        """Internal: use :meth:`Hub.stream_events`."""
        self._native = native

    @property
    def id(self) -> int:
        """The stream's id: the ``subscription`` of its events."""
        return self._native.id

    @property
    def cursor(self) -> Optional[str]:
        """The latest cursor (from the last occurrence, heartbeat or
        confirmation): keep it to resume, also after a restart."""
        return self._native.cursor

    def stop(self) -> None:
        """Ends the stream (the server is told); calling it again does nothing."""
        self._native.stop()

    def __enter__(self) -> "EventStream":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()

    async def __aenter__(self) -> "EventStream":
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<mcpmux.EventStream id={self.id} cursor={self.cursor!r}>"


def _network_options(deny_private: Any, allow_networks: Any, require_https: Any) -> Dict[str, Any]:
    """The network arguments of ``connect`` as the engine takes them, their
    types checked (the engine checks each network)."""
    for name, flag in (("deny_private", deny_private), ("require_https", require_https)):
        if not isinstance(flag, bool):
            raise InvalidInput(f"argument '{name}' must be True or False, not {type(flag).__name__!r}")
    if allow_networks is None:
        networks: List[str] = []
    elif isinstance(allow_networks, (str, bytes)) or not isinstance(allow_networks, collections.abc.Iterable):
        raise InvalidInput(
            f"argument 'allow_networks' must be a list of networks such as \"10.1.2.0/24\", not {type(allow_networks).__name__!r}"
        )
    else:
        networks = list(allow_networks)
        for i, n in enumerate(networks):
            if not isinstance(n, str):
                raise InvalidInput(f"argument 'allow_networks'[{i}] must be a str, not {type(n).__name__!r}")
    return {"deny_private": deny_private, "allow_networks": networks, "require_https": require_https}


def _check_on_event(on_event: Any) -> None:
    if on_event is not None and not callable(on_event):
        raise InvalidInput(f"argument 'on_event' must be callable or None, not {type(on_event).__name__!r}")


def _deliver_events(native: Any, on_event: EventCallback) -> None:
    """Starts the hub's delivery thread (``mcpmux-events``, a daemon): it
    reads the stream subscribed before connecting, so the first events are
    the servers' ``server_state``, and calls ``on_event(event)`` for each,
    in order, until the hub is closed or gone. It holds no reference to the
    hub. An exception from ``on_event`` is reported as a ``RuntimeWarning``
    and delivery goes on; a slow ``on_event`` never holds up the engine (it
    gets a ``lagged`` event instead)."""
    events = native.events(True)

    def deliver() -> None:
        while True:
            try:
                event = events.next()
            except BaseException:  # interpreter shutting down
                return
            if event is None:
                return
            try:
                on_event(event)
            except Exception as e:
                warnings.warn(f"mcpmux: on_event raised {e!r}", RuntimeWarning, stacklevel=1)

    threading.Thread(target=deliver, name="mcpmux-events", daemon=True).start()


def _config_args(config: Any) -> "tuple[str, Any]":
    """``(kind, value)`` for the native ``connect``: only converts. A
    ``str`` goes as it is and the engine decides whether it is a path or
    text (one rule for every front end, docs/configuration.md#configuration-sources)."""
    if isinstance(config, Mapping):
        return "json", config if isinstance(config, dict) else dict(config)
    if isinstance(config, os.PathLike):
        return "path", os.fsdecode(os.fspath(config))
    if isinstance(config, str):
        return "str", config
    raise InvalidInput(
        "argument 'config' must be a path (str or os.PathLike), TOML or JSON text, "
        f"or a dict, not {type(config).__name__!r}"
    )


def _warn_unclosed(hub: Any) -> None:
    native = getattr(hub, "_native", None)
    if native is not None and not native.closed:
        try:
            warnings.warn(f"unclosed {hub!r}", ResourceWarning, source=hub, stacklevel=2)
        except Exception:  # interpreter shutting down
            pass


def _repr(hub: Any) -> str:
    native = hub._native
    if native.closed:
        return f"<mcpmux.{type(hub).__name__} closed>"
    servers = native.servers()
    up = sum(1 for s in servers if s["state"] == "connected")
    return f"<mcpmux.{type(hub).__name__} servers={len(servers)} connected={up}>"


class Hub:
    """Many MCP servers behind one tool list: the blocking API.

    Create one with :meth:`Hub.connect`; close it with :meth:`close` or use
    it as a context manager. Every method blocks the calling thread (with
    the GIL released while the engine works) and may be called from several
    threads at once. A closed hub raises :class:`TransportClosed` ("the hub
    is closed") from every method but :meth:`close`. Ctrl-C interrupts a
    waiting call (the request is cancelled).
    """

    __slots__ = ("_native", "__weakref__")

    def __init__(self, native: Any) -> None:
        """Internal: use :meth:`Hub.connect`."""
        if not isinstance(native, _native.Hub):
            raise InvalidInput("use mcpmux.Hub.connect(config) to create a Hub")
        self._native = native

    @classmethod
    def connect(
        cls,
        config: Config,
        *,
        authorize: Optional[Callable[[str, str, str], str]] = None,
        on_event: Optional[EventCallback] = None,
        startup_timeout: Optional[float] = None,
        on_elicitation: Optional[RequestHandler] = None,
        on_sampling: Optional[RequestHandler] = None,
        roots: Optional[RootsArg] = None,
        deny_private: bool = False,
        allow_networks: Optional[Sequence[str]] = None,
        require_https: bool = False,
    ) -> "Hub":
        """Starts every enabled server of ``config`` at once and returns the hub.

        By default it returns once every server is connected or has failed.
        With ``startup_timeout`` (seconds) it returns after at most that
        long: servers not up by then show as ``starting`` in
        :meth:`servers` and go on starting; their tools are listed (with a
        ``tools_changed`` event) once they are up.

        ``on_event(event)`` is called with every event of the hub (see
        :class:`Events`), starting with each server's first
        ``server_state``, on a dedicated delivery thread (``mcpmux-events``,
        one per hub; never an engine thread, so a slow callback holds up
        nothing but its own later events). It runs until the hub is closed.

        ``authorize(url, redirect_uri, server) -> str`` is the person in the
        loop for servers with ``auth.type = "oauth"``: it opens ``url`` (a
        browser) and returns the URL the authorization server redirected to.
        It is called on an engine thread. Without it, a server that needs a
        new authorization fails with :class:`AuthRequired`.

        Servers may ask the host things. ``on_elicitation(params) -> dict``
        answers ``elicitation/create`` (return ``{"action": "accept",
        "content": {...}}``, ``{"action": "decline"}`` or ``{"action":
        "cancel"}``); ``on_sampling(params) -> dict`` answers
        ``sampling/createMessage`` with a ``CreateMessageResult``
        (``role``, ``content``, ``model``, ``stopReason``). ``params`` is
        the request's params as the server sent them. The same handlers
        answer a 2026-07-28 server's ``input_required`` questions. They run
        on an engine thread; an ``async def`` handler is run to completion
        there. What a handler raises reaches the server as a JSON-RPC error;
        one slower than the server's ``timeout_seconds`` is answered with an
        error for it. ``roots`` (paths or ``file://`` URIs) are the
        directories shared with servers (``roots/list``);
        :meth:`set_roots` changes them. A capability is declared only when
        its handler (or ``roots``) is given.

        ``deny_private=True`` refuses to connect to loopback, private,
        link-local (169.254.169.254), CGNAT, unique-local, multicast and
        unspecified addresses, judged on the resolved address at connect
        time, for every connection (servers, redirects, OAuth endpoints);
        ``allow_networks`` (``["10.1.2.0/24", ...]``) are exceptions to it;
        ``require_https=True`` allows only ``https``/``wss`` URLs (``http``
        to loopback only without ``deny_private``). They add to the
        config's ``[network]`` table. A refused server is ``failed``
        (``CONNECT_FAILED`` naming the server, the host and the address);
        a bad network raises :class:`InvalidInput`.

        ``config`` is a path (``str`` or ``pathlib.Path``) to a TOML or JSON
        file, TOML or JSON text, or a ``dict`` in either shape
        (``{"mcpServers": {...}}`` or ``{"mcp": {"servers": [...]}}``). A
        ``str`` naming an existing file is read as a path; otherwise it is
        text when it starts with ``{``, has a line break or is valid TOML,
        and else a path (a missing file raises :class:`ConfigInvalid` naming
        it; an empty string :class:`InvalidInput`). A server that
        fails to start is marked ``failed`` (see :meth:`servers`); only an
        invalid config raises (:class:`ConfigInvalid`).
        """
        kind, value = _config_args(config)
        _check_on_event(on_event)
        on_request, requests = request_options(on_elicitation, on_sampling)
        hub = cls(
            _native.Hub.connect(
                kind,
                value,
                None,
                authorize,
                on_event is not None,
                startup_timeout,
                on_request=on_request,
                requests=requests,
                roots=None if roots is None else roots_list(roots),
                **_network_options(deny_private, allow_networks, require_https),
            )
        )
        if on_event is not None:
            _deliver_events(hub._native, on_event)
        return hub

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._native.closed

    def set_roots(self, roots: RootsArg) -> None:
        """Replaces the roots shared with servers (paths or ``file://``
        URIs) and tells every connected server
        (``notifications/roots/list_changed``). A hub connected without
        ``roots`` raises :class:`InvalidInput`; so does a bad root, which
        changes nothing."""
        self._native.set_roots(roots_list(roots))

    @property
    def roots(self) -> List[Dict[str, Any]]:
        """The roots shared with servers now: ``{"uri", "name"}`` dicts."""
        return self._native.roots()

    def servers(self) -> List[Dict[str, Any]]:
        """The status of every configured server, in config order.

        The same objects as ``mcpmux servers --json``: ``name``, ``type``,
        ``state`` (``connected``, ``failed``, ``restarting``, ``disabled``,
        or ``idle``: ``lazy = true`` and not used yet),
        ``protocol_version``, ``server_info``, ``capabilities`` (as the server
        declared them, ``extensions`` included), ``tool_count``, ``error``,
        ``error_code``.
        """
        return self._native.servers()

    def list_tools(self) -> List[Dict[str, Any]]:
        """Every tool of every connected server, in config order.

        The same objects as ``mcpmux tools --json``: ``name``
        (``mcp_{server}_{tool}``), ``server``, ``tool``, ``title``,
        ``description``, ``input_schema``, ``output_schema``, ``annotations``.

        When a server failed, its tools are missing: a ``RuntimeWarning``
        names it (and its error code); :meth:`servers` says why.
        """
        _warn_failed_servers(self._native)
        return self._native.list_tools()

    def search_tools(self, query: str, limit: int = 10) -> List[Dict[str, Any]]:
        """The tools matching ``query``, best first, at most ``limit``
        (BM25 over names, titles, descriptions and parameter names, stemmed,
        with a few synonyms; never empty while there are tools). The same objects as
        :meth:`list_tools`."""
        return self._native.search_tools(query, limit)

    def tools_for(self, format: str) -> Any:
        """The tool list rendered for an LLM API: ``"anthropic"``,
        ``"openai"`` (chat completions), ``"openai-responses"`` or ``"mcp"``.
        Warns like :meth:`list_tools` when a server failed."""
        _warn_failed_servers(self._native)
        return self._native.tools_for(format)

    def call_tool(
        self,
        name: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        timeout: Optional[float] = None,
        on_progress: Optional[ProgressCallback] = None,
        policy: Optional["Policy"] = None,
        task: bool = False,
        max_total_timeout: Optional[float] = None,
        task_ttl: Optional[float] = None,
        traceparent: Optional[str] = None,
        tracestate: Optional[str] = None,
        validate_output: Optional[str] = None,
    ) -> Dict[str, Any]:
        """Calls tool ``name`` (its hub name) with ``arguments`` (a dict).

        Returns the MCP ``CallToolResult`` as the server sent it. A tool's own
        failure is a result with ``isError: True``, not an exception;
        routing, transport and protocol failures raise :class:`McpmuxError`
        subclasses (:class:`UnknownTool`, :class:`Timeout`, ...).
        ``timeout`` (seconds) replaces the server's ``timeout_seconds`` for
        this call; progress notifications reset it. ``max_total_timeout``
        (seconds) bounds the whole call however much progress arrives
        (default: the server's ``max_total_timeout_seconds``). Every
        duration is a positive number of seconds, at most 1e9 (core's cap,
        the same in every front end; else :class:`InvalidInput` naming the
        argument). ``on_progress(progress, total, message)`` is called on
        this thread for each progress notification. ``traceparent`` /
        ``tracestate``: a W3C trace context for the call's spans (default:
        the active OpenTelemetry span, if any). ``validate_output``:
        what a result whose ``structuredContent`` does not satisfy the
        tool's ``outputSchema`` becomes: ``"error"`` (the default) raises
        :class:`OutputInvalid` naming the tool and the path, ``"warn"``
        returns it with a ``log`` event (level ``warning``), ``"off"``
        checks nothing. docs/call-options.md lists these options in every
        front end.

        With ``policy`` (see :meth:`policy`) the call goes through it: a tool
        the policy does not offer raises :class:`ToolNotAllowed` and one past
        ``max_tool_calls`` :class:`LimitExceeded` (the server is not asked);
        the result's text is redacted and capped; the call is audited.

        A tool whose ``execution.taskSupport`` is ``"required"`` runs as an
        MCP task (``task=True`` asks the same of an ``"optional"`` one;
        ``task_ttl``, seconds, asks the server to keep it that long): the
        call polls the task and returns the task's result; past
        ``max_total_timeout`` (:class:`Timeout`) or when interrupted, the
        task is cancelled. ``task_status`` events tell each status. Python
        sets no sampling, elicitation or roots handlers: the hub does not
        declare those capabilities, and a server's request for one is
        refused ("Method not found"), so a task that needs such input
        (``input_required``) does not get it.
        """
        trace = _explicit_trace(traceparent, tracestate)
        if policy is None:
            return self._native.call_tool(
                name,
                arguments,
                timeout,
                on_progress,
                task=task,
                max_total_timeout=max_total_timeout,
                task_ttl=task_ttl,
                validate_output=validate_output,
                **trace,
            )
        native = _policy_native(policy)
        try:
            return self._native.call_tool(
                name,
                arguments,
                timeout,
                on_progress,
                policy=native,
                task=task,
                max_total_timeout=max_total_timeout,
                task_ttl=task_ttl,
                validate_output=validate_output,
                **trace,
            )
        finally:
            policy._deliver()

    def call_tool_as_task(
        self,
        name: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        timeout: Optional[float] = None,
        task_ttl: Optional[float] = None,
    ) -> Dict[str, str]:
        """Starts tool ``name`` as an MCP task without waiting; returns its
        handle ``{"server": ..., "task_id": ...}`` (plain strings: keep them
        to poll, wait or cancel later, also after a restart while the server
        keeps the task). The tool's ``execution.taskSupport`` must be
        ``"optional"`` or ``"required"`` (else :class:`InvalidInput`).
        ``task_ttl`` (seconds) asks the server to keep the task that long."""
        return self._native.call_tool_as_task(name, arguments, timeout, task_ttl=task_ttl)

    def task(self, server: str, task_id: str) -> Dict[str, Any]:
        """The status of task ``task_id`` of ``server`` (``tasks/get``):
        ``{"server", "task_id", "status", "message"?, "created_at"?,
        "last_updated_at"?, "ttl_ms"?, "poll_interval_ms"?}``; ``status`` is
        ``working``, ``input_required``, ``completed``, ``failed`` or
        ``cancelled``."""
        return self._native.task(server, task_id)

    def task_result(
        self, server: str, task_id: str, *, timeout: Optional[float] = None
    ) -> Dict[str, Any]:
        """Waits for task ``task_id`` of ``server`` to end and returns its
        ``CallToolResult`` (as :meth:`call_tool` would). ``timeout``
        (seconds) bounds the wait (:class:`Timeout`; the task goes on); a
        cancelled task raises :class:`Cancelled`."""
        return self._native.task_result(server, task_id, timeout)

    def cancel_task(self, server: str, task_id: str) -> Dict[str, Any]:
        """Cancels task ``task_id`` of ``server`` (``tasks/cancel``);
        returns the task as the server now reports it."""
        return self._native.cancel_task(server, task_id)

    def list_tasks(self, server: str) -> List[Dict[str, Any]]:
        """The tasks ``server`` keeps for this hub (``tasks/list``), as
        :meth:`task` returns them."""
        return self._native.list_tasks(server)

    def list_resources(self, server: Optional[str] = None) -> List[Dict[str, Any]]:
        """Resources of every server (or of ``server``), each with a ``server`` key."""
        return self._native.list_resources(server)

    def list_resource_templates(self, server: Optional[str] = None) -> List[Dict[str, Any]]:
        """Resource templates of every server (or of ``server``), each with a ``server`` key."""
        return self._native.list_resource_templates(server)

    def read_resource(self, uri: str, server: Optional[str] = None) -> Dict[str, Any]:
        """Reads ``uri`` (from ``server``, or from the server that lists it);
        returns the ``resources/read`` result (``{"contents": [...]}``)."""
        return self._native.read_resource(uri, server)

    def list_prompts(self, server: Optional[str] = None) -> List[Dict[str, Any]]:
        """Prompts of every server (or of ``server``), each with a ``server`` key."""
        return self._native.list_prompts(server)

    def get_prompt(
        self,
        name: str,
        arguments: Optional[Mapping[str, str]] = None,
        server: Optional[str] = None,
    ) -> Dict[str, Any]:
        """Gets prompt ``name`` with ``arguments``; returns the ``prompts/get`` result."""
        return self._native.get_prompt(name, arguments, server)

    def refresh(self, server: str) -> None:
        """Reconnects ``server`` and lists its tools again. For what that
        changed in a policy's allow list, use :meth:`Policy.refresh`."""
        self._native.refresh(server)

    def reload(self, config: Config) -> None:
        """Applies a new configuration (anything :meth:`connect` accepts)
        to the running hub: servers whose entry is unchanged stay connected
        (same process), removed ones are closed, added ones are started
        (unless ``lazy``), changed ones are closed and started again. Tool
        names follow the new configuration; ``server_state`` and
        ``tools_changed`` events tell what happened. A malformed config
        raises :class:`ConfigInvalid` and changes nothing; a closed hub
        raises :class:`TransportClosed`."""
        kind, value = _config_args(config)
        self._native.reload(kind, value)

    def events(self) -> Events:
        """An iterator of this hub's events from now on (see
        :class:`Events`); ``for event in hub.events():`` blocks between
        events and ends when the hub is closed. Each iterator gets every
        event; make one per consumer. A closed hub raises
        :class:`TransportClosed`."""
        return Events(self._native.events())

    def ping(self, server: str) -> float:
        """Pings ``server``; returns the round-trip time in seconds
        (:class:`Timeout` when it does not answer within its
        ``timeout_seconds``)."""
        return self._native.ping(server)

    def set_log_level(self, server: str, level: str) -> None:
        """Asks ``server`` for log messages at ``level`` or above
        (``logging/setLevel``; ``debug``, ``info``, ``notice``, ``warning``,
        ``error``, ``critical``, ``alert``, ``emergency``); they arrive as
        ``log`` events. Another level, or a server without the ``logging``
        capability, raises :class:`InvalidInput`."""
        self._native.set_log_level(server, level)

    def complete(
        self,
        ref: Mapping[str, Any],
        argument: Mapping[str, str],
        context: Optional[Mapping[str, Any]] = None,
        server: Optional[str] = None,
    ) -> Dict[str, Any]:
        """Completes an argument (``completion/complete``): ``ref`` is
        ``{"type": "ref/prompt", "name": ...}`` or ``{"type":
        "ref/resource", "uri": <template>}``, ``argument`` ``{"name",
        "value"}``, ``context`` the optional ``{"arguments": {...}}``
        already chosen. Without ``server`` the one server offering that
        prompt or template answers. Returns the server's ``completion``
        (``{"values": [...], "total"?, "hasMore"?}``)."""
        return self._native.complete(ref, argument, context, server)

    def subscribe(self, uri: str, server: Optional[str] = None) -> None:
        """Subscribes to changes of resource ``uri`` (on ``server``, or on
        the server that lists it); they arrive as ``resource_updated``
        events. A server that cannot subscribe raises :class:`InvalidInput`."""
        self._native.subscribe(uri, server)

    def unsubscribe(self, uri: str, server: Optional[str] = None) -> None:
        """Ends a subscription made with :meth:`subscribe`."""
        self._native.subscribe(uri, server, False)

    def list_events(self, server: Optional[str] = None) -> List[Dict[str, Any]]:
        """Event types of every server offering the events extension
        (``io.modelcontextprotocol/events``), or of ``server``, each with a
        ``server`` key (``events/list``). A named server without the
        extension raises :class:`InvalidInput`."""
        return self._native.list_events(server)

    def poll_events(
        self,
        server: str,
        name: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        cursor: Optional[str] = None,
        max_events: Optional[int] = None,
        max_age: Optional[float] = None,
    ) -> Dict[str, Any]:
        """Polls event type ``name`` of ``server`` from ``cursor``
        (``events/poll``; ``None``: from now, which returns no events and a
        cursor to keep). Returns the page ``{"events": [{"event_id",
        "name", "timestamp"?, "data"}], "cursor", "truncated", "has_more",
        "next_poll_ms"}``: keep ``cursor`` and poll again after
        ``next_poll_ms`` (at once when ``has_more``). ``max_events`` is
        capped at 1000. ``max_age`` (seconds, ``maxAgeMs``): nothing older
        is replayed, even from an older cursor; the page says
        ``truncated`` when that left occurrences out."""
        return self._native.poll_events(server, name, arguments, cursor, max_events, max_age)

    def stream_events(
        self,
        server: str,
        name: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        cursor: Optional[str] = None,
        max_age: Optional[float] = None,
        heartbeat: Optional[float] = None,
    ) -> EventStream:
        """Opens a stream of event type ``name`` of ``server`` from
        ``cursor`` (``events/stream``; ``None``: from now). The occurrences
        arrive on this hub's events as ``event`` dicts (see
        :class:`EventStream`); keep :attr:`EventStream.cursor` to resume.
        ``max_age`` (seconds) as for :meth:`poll_events`. ``heartbeat``
        (seconds, default 30): the server's heartbeat interval; after twice
        it without a message the stream is sent again from its cursor."""
        return EventStream(
            self._native.stream_events(server, name, arguments, cursor, max_age, heartbeat)
        )

    def subscribe_events(
        self,
        server: str,
        name: str,
        url: str,
        secret: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        cursor: Optional[str] = None,
        ttl: Optional[float] = None,
        no_expiry: bool = False,
        max_age: Optional[float] = None,
    ) -> Dict[str, Any]:
        """Subscribes webhook ``url`` to event type ``name`` of ``server``
        (``events/subscribe``); the server posts each occurrence there,
        signed with ``secret`` (``whsec_`` and base64; never echoed or
        logged). ``url`` must be ``https`` (``http`` only to a loopback
        address), else :class:`InvalidInput`. ``ttl`` (seconds) asks for
        the subscription's lifetime, ``no_expiry=True`` for one that never
        expires (``ttlMs: null``; not with ``ttl``); neither: the server's
        default. ``max_age`` (seconds) as for :meth:`poll_events`. Returns
        ``{"id", "refresh_before"?, "cursor"?, "truncated",
        "delivery_status"?}``; subscribe again before ``refresh_before`` to
        keep it (no ``refresh_before``: it does not expire)."""
        return self._native.subscribe_events(
            server, name, url, secret, arguments, cursor, ttl, no_expiry, max_age
        )

    def unsubscribe_events(
        self,
        server: str,
        name: str,
        url: str,
        arguments: Optional[Mapping[str, Any]] = None,
    ) -> None:
        """Ends the webhook subscription of ``url`` to event type ``name``
        of ``server`` with these ``arguments`` (``events/unsubscribe``)."""
        self._native.unsubscribe_events(server, name, url, arguments)

    def policy(
        self,
        *,
        scope: Optional[str] = None,
        max_tool_calls: Optional[int] = None,
        call_timeout_seconds: Optional[float] = None,
        max_output_bytes: Optional[int] = None,
        redact: Optional[List[Mapping[str, str]]] = None,
        pin_tools: Optional[bool] = None,
        audit_path: Optional[Union[str, "os.PathLike[str]"]] = None,
        on_audit: Optional[AuditCallback] = None,
    ) -> "Policy":
        """A tool-use policy for this hub's calls (pass it as
        ``call_tool(..., policy=p)``): the allow lists of the config
        (``allow_tools``, ``allow_all``, ``confirm_read_only``, ``scopes``
        per server) and its ``[session]`` table, with the keyword arguments
        over it. ``redact`` adds rules ``{"name", "pattern"}``. Every call
        made with it is audited: appended to ``audit_path`` as a JSON line,
        kept for :meth:`Policy.audit_events`, and passed to ``on_audit(event)``
        (on the thread that made the call, after it). ``pin_tools=True``
        pins tool definitions (see :meth:`Policy.pins`): a tool that changed
        since it was approved, or a new one, raises :class:`ToolChanged`.
        A bad value raises :class:`InvalidInput` naming it."""
        return Policy._make(self._native, _policy_settings(locals()), audit_path, on_audit)

    def close(self) -> None:
        """Closes every server (stdin, then SIGTERM, then SIGKILL for stdio)
        and waits until they are gone. Calling it again does nothing."""
        self._native.close()

    def __enter__(self) -> "Hub":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return _repr(self)

    def __del__(self) -> None:
        _warn_unclosed(self)


# ---------------------------------------------------------------- asyncio

_bridges: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any]" = (
    weakref.WeakKeyDictionary()
)
_bridges_lock = threading.Lock()
_get_running_loop = asyncio.get_running_loop


def _bridge_for(loop: asyncio.AbstractEventLoop) -> Any:
    """The native bridge of ``loop`` (created and registered on first use)."""
    bridge = _bridges.get(loop)
    if bridge is None:
        with _bridges_lock:
            bridge = _bridges.get(loop)
            if bridge is None:
                bridge = _native.Bridge()
                loop.add_reader(bridge.fileno(), bridge.drain)
                _bridges[loop] = bridge
    return bridge


# An answer read by an engine thread reaches the loop through the bridge's
# pipe. When the loop sleeps in the kernel meanwhile, every call pays for
# waking it (on a small VM about as much as the round trip to a fast server).
# So for _STAY_AWAKE_SECONDS after a call goes out, while one is pending, the
# loop keeps turning (``call_soon``) instead of sleeping: other callbacks
# still run, and a fast answer is taken on the next turn without a wake-up.
# (Core's rule: ``$MCPMUX_STAY_AWAKE_US``, default 60 µs; 0 turns it off.)
_STAY_AWAKE_SECONDS = _native.STAY_AWAKE_MICROS / 1e6
_perf_counter = time.perf_counter


class _LoopAwake:
    """Keeps one event loop turning while its tool calls may answer soon."""

    __slots__ = ("_loop", "_bridge", "_until", "_turning", "waiting")

    def __init__(self, loop: asyncio.AbstractEventLoop, bridge: Any) -> None:
        self._loop = loop
        self._bridge = bridge
        self._until = 0.0
        self._turning = False
        self.waiting = 0

    def call_went_out(self) -> None:
        if not _STAY_AWAKE_SECONDS:
            return
        self._until = _perf_counter() + _STAY_AWAKE_SECONDS
        if not self._turning:
            self._turning = True
            self._loop.call_soon(self._turn)

    def _turn(self) -> None:
        waiting = self.waiting
        if waiting > 0 and _perf_counter() < self._until:
            # A single call waiting (one after another): read its answer
            # on this thread instead of waiting for an engine thread to read
            # it and wake the loop. With more in flight the engine threads
            # read in parallel with the loop.
            if waiting == 1:
                self._bridge.read_now()
            self._loop.call_soon(self._turn)
        else:
            self._turning = False


_background: "set[asyncio.Future[Any]]" = set()


def _loop_progress(callback: Optional[ProgressCallback]) -> Optional[ProgressCallback]:
    """A progress callback for the loop's thread; a coroutine it returns runs as a task."""
    if callback is None:
        return None

    def call(progress: float, total: Optional[float], message: Optional[str]) -> None:
        result = callback(progress, total, message)
        if inspect.isawaitable(result):
            task = asyncio.ensure_future(result)
            _background.add(task)
            task.add_done_callback(_background.discard)

    return call


def _on_loop(loop: asyncio.AbstractEventLoop, callback: EventCallback) -> EventCallback:
    """``callback`` moved to ``loop``'s thread (an awaitable it returns runs
    as a task); events that come after the loop closed are dropped."""

    def call(event: Dict[str, Any]) -> None:
        result = callback(event)
        if inspect.isawaitable(result):
            task = asyncio.ensure_future(result)
            _background.add(task)
            task.add_done_callback(_background.discard)

    def hand_over(event: Dict[str, Any]) -> None:
        try:
            loop.call_soon_threadsafe(call, event)
        except RuntimeError:  # the loop is closed
            pass

    return hand_over


class _Connecting(collections.abc.Coroutine):
    """What :meth:`AsyncHub.connect` returns: a coroutine (``await`` it, or
    hand it to ``asyncio.create_task`` / ``asyncio.run``) that is also an
    async context manager (``async with AsyncHub.connect(config) as hub:``
    closes the hub at the end)."""

    __slots__ = ("_coro", "_hub")

    def __init__(self, coro: Any) -> None:
        self._coro = coro
        self._hub: Optional[AsyncHub] = None

    def send(self, value: Any) -> Any:
        return self._coro.send(value)

    def throw(self, *args: Any) -> Any:
        return self._coro.throw(*args)

    def close(self) -> None:
        self._coro.close()

    def __await__(self) -> Any:
        return self._coro.__await__()

    async def __aenter__(self) -> "AsyncHub":
        self._hub = await self._coro
        return self._hub

    async def __aexit__(self, *exc_info: Any) -> None:
        if self._hub is not None:
            await self._hub.close()


class AsyncHub:
    """Many MCP servers behind one tool list: the asyncio API.

    The same methods as :class:`Hub`, as coroutines. Create one with
    ``hub = await AsyncHub.connect(config)``, or use ``async with
    AsyncHub.connect(config) as hub:`` to close it at the end. Calls never
    block the event loop;
    any number may be in flight (``asyncio.gather``). Cancelling the task
    that awaits a call cancels the request (the server is sent
    ``notifications/cancelled``). Needs an event loop with ``add_reader``
    (the default loop on Linux and macOS, and uvloop).
    """

    __slots__ = ("_native", "_bound", "__weakref__")

    def __init__(self, native: Any) -> None:
        """Internal: use :meth:`AsyncHub.connect`."""
        if not isinstance(native, _native.Hub):
            raise InvalidInput("use await mcpmux.AsyncHub.connect(config) to create an AsyncHub")
        self._native = native
        # (loop, bridge, awake) of the loop used last, replaced as one tuple:
        # loops in several threads share the hub, and a call must never pair
        # its loop with another loop's bridge.
        self._bound: "tuple[Any, Any, Any]" = (None, None, None)

    @classmethod
    def connect(
        cls,
        config: Config,
        *,
        authorize: Optional[Callable[[str, str, str], str]] = None,
        on_event: Optional[EventCallback] = None,
        startup_timeout: Optional[float] = None,
        on_elicitation: Optional[RequestHandler] = None,
        on_sampling: Optional[RequestHandler] = None,
        roots: Optional[RootsArg] = None,
        deny_private: bool = False,
        allow_networks: Optional[Sequence[str]] = None,
        require_https: bool = False,
    ) -> _Connecting:
        """Starts every enabled server of ``config`` at once; gives the hub.

        ``hub = await AsyncHub.connect(config)``, or ``async with
        AsyncHub.connect(config) as hub:`` (closed at the end). It is a
        coroutine, so ``asyncio.create_task`` and ``asyncio.wait_for`` take
        it; cancelling it stops the servers it started. See
        :meth:`Hub.connect` for what ``config`` may be.

        ``on_event(event)`` gets every event of the hub, starting with each
        server's first ``server_state``, on the event loop's thread (the
        hub's ``mcpmux-events`` delivery thread hands each one over with
        ``loop.call_soon_threadsafe``); if it returns an awaitable, that
        runs as a task. ``startup_timeout`` as for :meth:`Hub.connect`.

        ``on_elicitation``, ``on_sampling``, ``roots``, ``deny_private``,
        ``allow_networks`` and ``require_https`` as for :meth:`Hub.connect`;
        a handler may be ``async def``: it then runs on the event loop that
        connected the hub.
        """
        _check_on_event(on_event)
        network = _network_options(deny_private, allow_networks, require_https)
        return _Connecting(
            cls._connect(
                config,
                authorize,
                on_event,
                startup_timeout,
                on_elicitation,
                on_sampling,
                roots,
                network,
            )
        )

    @classmethod
    async def _connect(
        cls,
        config: Config,
        authorize: Optional[Callable[[str, str, str], str]] = None,
        on_event: Optional[EventCallback] = None,
        startup_timeout: Optional[float] = None,
        on_elicitation: Optional[RequestHandler] = None,
        on_sampling: Optional[RequestHandler] = None,
        roots: Optional[RootsArg] = None,
        network: Optional[Dict[str, Any]] = None,
    ) -> "AsyncHub":
        kind, value = _config_args(config)
        on_request, requests = request_options(
            on_elicitation, on_sampling, _get_running_loop()
        )
        connect = functools.partial(
            _native.Hub.connect,
            authorize=authorize,
            events=on_event is not None,
            startup_timeout=startup_timeout,
            on_request=on_request,
            requests=requests,
            roots=None if roots is None else roots_list(roots),
            **(network or {}),
        )
        hub = cls(await _run(connect, kind, value))
        if on_event is not None:
            _deliver_events(hub._native, _on_loop(_get_running_loop(), on_event))
        return hub

    def _bound_to(self, loop: asyncio.AbstractEventLoop) -> "tuple[Any, Any, Any]":
        """``(loop, bridge, awake)`` for ``loop``, the running one."""
        bound = self._bound
        if bound[0] is not loop:
            bridge = _bridge_for(loop)
            # One awake per hub and loop (the hub holds its loop already; a
            # map keyed by loop would keep every loop alive through its value).
            bound = (loop, bridge, _LoopAwake(loop, bridge))
            self._bound = bound
        return bound

    def _aio(self) -> "tuple[asyncio.Future[Any], Any]":
        loop = _get_running_loop()
        return loop.create_future(), self._bound_to(loop)[1]

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._native.closed

    async def set_roots(self, roots: RootsArg) -> None:
        """See :meth:`Hub.set_roots`."""
        self._native.set_roots(roots_list(roots))

    @property
    def roots(self) -> List[Dict[str, Any]]:
        """See :attr:`Hub.roots`."""
        return self._native.roots()

    async def servers(self) -> List[Dict[str, Any]]:
        """See :meth:`Hub.servers`."""
        return self._native.servers()

    async def list_tools(self) -> List[Dict[str, Any]]:
        """See :meth:`Hub.list_tools`."""
        _warn_failed_servers(self._native)
        return self._native.list_tools()

    async def search_tools(self, query: str, limit: int = 10) -> List[Dict[str, Any]]:
        """See :meth:`Hub.search_tools`."""
        return self._native.search_tools(query, limit)

    async def tools_for(self, format: str) -> Any:
        """See :meth:`Hub.tools_for`."""
        _warn_failed_servers(self._native)
        return self._native.tools_for(format)

    async def call_tool(
        self,
        name: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        timeout: Optional[float] = None,
        on_progress: Optional[ProgressCallback] = None,
        policy: Optional["AsyncPolicy"] = None,
        task: bool = False,
        max_total_timeout: Optional[float] = None,
        task_ttl: Optional[float] = None,
        traceparent: Optional[str] = None,
        tracestate: Optional[str] = None,
        validate_output: Optional[str] = None,
    ) -> Dict[str, Any]:
        """See :meth:`Hub.call_tool`. ``on_progress`` runs on the event
        loop's thread; if it returns an awaitable, that runs as a task.
        The policy's ``on_audit`` runs on the event loop's thread too."""
        loop = _get_running_loop()
        _, bridge, awake = self._bound_to(loop)
        native = None if policy is None else _policy_native(policy)
        future = loop.create_future()
        try:
            pending = self._native.call_tool(
                name,
                arguments,
                timeout,
                on_progress and _loop_progress(on_progress),
                (future, bridge),
                policy=native,
                task=task,
                max_total_timeout=max_total_timeout,
                task_ttl=task_ttl,
                validate_output=validate_output,
                **_explicit_trace(traceparent, tracestate),
            )
            if pending is None:  # finished at once (e.g. an unknown tool)
                return future.result()
            awake.waiting += 1
            awake.call_went_out()
            try:
                return await future
            except BaseException:
                pending.cancel()
                raise
            finally:
                awake.waiting -= 1
        finally:
            if policy is not None:
                policy._deliver()

    async def list_resources(self, server: Optional[str] = None) -> List[Dict[str, Any]]:
        """See :meth:`Hub.list_resources`."""
        return await self._call(self._native.list_resources, server)

    async def list_resource_templates(self, server: Optional[str] = None) -> List[Dict[str, Any]]:
        """See :meth:`Hub.list_resource_templates`."""
        return await self._call(self._native.list_resource_templates, server)

    async def read_resource(self, uri: str, server: Optional[str] = None) -> Dict[str, Any]:
        """See :meth:`Hub.read_resource`."""
        return await self._call(self._native.read_resource, uri, server)

    async def list_prompts(self, server: Optional[str] = None) -> List[Dict[str, Any]]:
        """See :meth:`Hub.list_prompts`."""
        return await self._call(self._native.list_prompts, server)

    async def get_prompt(
        self,
        name: str,
        arguments: Optional[Mapping[str, str]] = None,
        server: Optional[str] = None,
    ) -> Dict[str, Any]:
        """See :meth:`Hub.get_prompt`."""
        return await self._call(self._native.get_prompt, name, arguments, server)

    async def refresh(self, server: str) -> None:
        """See :meth:`Hub.refresh`."""
        await self._call(self._native.refresh, server)

    async def reload(self, config: Config) -> None:
        """See :meth:`Hub.reload`."""
        kind, value = _config_args(config)
        await self._call(self._native.reload, kind, value)

    def events(self) -> AsyncEvents:
        """An async iterator of this hub's events from now on (``async for
        event in hub.events():``); see :meth:`Hub.events`."""
        return AsyncEvents(self._native.events())

    async def call_tool_as_task(
        self,
        name: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        timeout: Optional[float] = None,
        task_ttl: Optional[float] = None,
    ) -> Dict[str, str]:
        """See :meth:`Hub.call_tool_as_task`."""
        start = functools.partial(self._native.call_tool_as_task, task_ttl=task_ttl)
        return await self._call(start, name, arguments, timeout)

    async def task(self, server: str, task_id: str) -> Dict[str, Any]:
        """See :meth:`Hub.task`."""
        return await self._call(self._native.task, server, task_id)

    async def task_result(
        self, server: str, task_id: str, *, timeout: Optional[float] = None
    ) -> Dict[str, Any]:
        """See :meth:`Hub.task_result`."""
        return await self._call(self._native.task_result, server, task_id, timeout)

    async def cancel_task(self, server: str, task_id: str) -> Dict[str, Any]:
        """See :meth:`Hub.cancel_task`."""
        return await self._call(self._native.cancel_task, server, task_id)

    async def list_tasks(self, server: str) -> List[Dict[str, Any]]:
        """See :meth:`Hub.list_tasks`."""
        return await self._call(self._native.list_tasks, server)

    async def ping(self, server: str) -> float:
        """See :meth:`Hub.ping`."""
        return await self._call(self._native.ping, server)

    async def set_log_level(self, server: str, level: str) -> None:
        """See :meth:`Hub.set_log_level`."""
        await self._call(self._native.set_log_level, server, level)

    async def complete(
        self,
        ref: Mapping[str, Any],
        argument: Mapping[str, str],
        context: Optional[Mapping[str, Any]] = None,
        server: Optional[str] = None,
    ) -> Dict[str, Any]:
        """See :meth:`Hub.complete`."""
        return await self._call(self._native.complete, ref, argument, context, server)

    async def subscribe(self, uri: str, server: Optional[str] = None) -> None:
        """See :meth:`Hub.subscribe`."""
        await self._call(self._native.subscribe, uri, server, True)

    async def unsubscribe(self, uri: str, server: Optional[str] = None) -> None:
        """See :meth:`Hub.unsubscribe`."""
        await self._call(self._native.subscribe, uri, server, False)

    async def list_events(self, server: Optional[str] = None) -> List[Dict[str, Any]]:
        """See :meth:`Hub.list_events`."""
        return await self._call(self._native.list_events, server)

    async def poll_events(
        self,
        server: str,
        name: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        cursor: Optional[str] = None,
        max_events: Optional[int] = None,
        max_age: Optional[float] = None,
    ) -> Dict[str, Any]:
        """See :meth:`Hub.poll_events`."""
        return await self._call(
            self._native.poll_events, server, name, arguments, cursor, max_events, max_age
        )

    async def stream_events(
        self,
        server: str,
        name: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        cursor: Optional[str] = None,
        max_age: Optional[float] = None,
        heartbeat: Optional[float] = None,
    ) -> EventStream:
        """See :meth:`Hub.stream_events`; the occurrences arrive on
        :meth:`AsyncHub.events` (or ``on_event=``)."""
        return EventStream(
            await self._call(
                self._native.stream_events, server, name, arguments, cursor, max_age, heartbeat
            )
        )

    async def subscribe_events(
        self,
        server: str,
        name: str,
        url: str,
        secret: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        cursor: Optional[str] = None,
        ttl: Optional[float] = None,
        no_expiry: bool = False,
        max_age: Optional[float] = None,
    ) -> Dict[str, Any]:
        """See :meth:`Hub.subscribe_events`."""
        return await self._call(
            self._native.subscribe_events,
            server, name, url, secret, arguments, cursor, ttl, no_expiry, max_age,
        )

    async def unsubscribe_events(
        self,
        server: str,
        name: str,
        url: str,
        arguments: Optional[Mapping[str, Any]] = None,
    ) -> None:
        """See :meth:`Hub.unsubscribe_events`."""
        await self._call(self._native.unsubscribe_events, server, name, url, arguments)

    def policy(
        self,
        *,
        scope: Optional[str] = None,
        max_tool_calls: Optional[int] = None,
        call_timeout_seconds: Optional[float] = None,
        max_output_bytes: Optional[int] = None,
        redact: Optional[List[Mapping[str, str]]] = None,
        pin_tools: Optional[bool] = None,
        audit_path: Optional[Union[str, "os.PathLike[str]"]] = None,
        on_audit: Optional[AuditCallback] = None,
    ) -> "AsyncPolicy":
        """See :meth:`Hub.policy` (does not wait: nothing is started)."""
        return AsyncPolicy._make(self._native, _policy_settings(locals()), audit_path, on_audit)

    async def close(self) -> None:
        """See :meth:`Hub.close`."""
        await self._call(self._native.close)

    async def _call(self, method: Callable[..., Any], *args: Any) -> Any:
        aio = self._aio()
        pending = method(*args, aio)
        if pending is None:
            return aio[0].result()
        try:
            return await aio[0]
        except BaseException:
            pending.cancel()
            raise

    async def __aenter__(self) -> "AsyncHub":
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.close()

    def __repr__(self) -> str:
        return _repr(self)

    def __del__(self) -> None:
        _warn_unclosed(self)


async def _run(method: Callable[..., Any], *args: Any) -> Any:
    """Runs a native method that takes ``aio`` last, on the running loop."""
    loop = _get_running_loop()
    future = loop.create_future()
    pending = method(*args, (future, _bridge_for(loop)))
    if pending is None:
        return future.result()
    try:
        return await future
    except BaseException:
        pending.cancel()
        raise


# ---------------------------------------------------------------- policy

#: Receives one audit event per call made with a policy: ``{"time",
#: "server", "tool", "status", "bytes", "duration_ms", "redactions",
#: "truncated", "code"?}``.
AuditCallback = Callable[[Dict[str, Any]], Any]

_POLICY_KEYS = ("scope", "max_tool_calls", "call_timeout_seconds", "max_output_bytes", "redact", "pin_tools")


def _policy_settings(args: Mapping[str, Any]) -> Dict[str, Any]:
    """The settings the engine reads, from ``policy()``'s keyword arguments."""
    return {k: args[k] for k in _POLICY_KEYS if args.get(k) is not None}


def _policy_native(policy: Any) -> Any:
    if not isinstance(policy, (Policy, AsyncPolicy)):
        raise InvalidInput(
            f"argument 'policy' must be an mcpmux.Policy from hub.policy(), not {type(policy).__name__!r}"
        )
    # Whether it was made for this hub is the engine's check (INVALID_INPUT).
    return policy._native


class Policy:
    """A tool-use policy for a hub's calls: allow lists, ``max_tool_calls``,
    ``call_timeout_seconds``, ``max_output_bytes``, redaction and audit
    (the same rules a review session's model runs under). Made by
    :meth:`Hub.policy`; used as ``hub.call_tool(name, args, policy=p)``.
    Counts are per policy: make a new one for a new budget."""

    __slots__ = ("_native", "_hub", "_on_audit")

    def __init__(self) -> None:
        """Internal: use :meth:`Hub.policy`."""
        raise InvalidInput("use hub.policy(...) to create a Policy")

    @classmethod
    def _make(cls, hub_native: Any, settings: Dict[str, Any], audit_path: Any, on_audit: Any) -> Any:
        if on_audit is not None and not callable(on_audit):
            raise InvalidInput(f"argument 'on_audit' must be callable or None, not {type(on_audit).__name__!r}")
        self = object.__new__(cls)
        self._native = _native.Policy(hub_native, settings, audit_path, on_audit is not None)
        self._hub = hub_native
        self._on_audit = on_audit
        return self

    def _deliver(self) -> None:
        """Hands the events of the calls that just ended to ``on_audit``."""
        if self._on_audit is None:
            return
        for event in self._native.take_events():
            try:
                result = self._on_audit(event)
                if inspect.isawaitable(result):
                    asyncio.ensure_future(result)
            except Exception as e:  # a bad callback must not lose the call's result
                warnings.warn(f"mcpmux: on_audit raised {e!r}", RuntimeWarning, stacklevel=3)

    @property
    def calls_made(self) -> int:
        """Calls made with this policy so far, refused ones included."""
        return self._native.calls_made

    def offered(self) -> List[Dict[str, Any]]:
        """The tools this policy offers, as :meth:`Hub.list_tools` gives them;
        later calls are limited to these."""
        return self._native.offered()

    def verdicts(self) -> List[Dict[str, Any]]:
        """Every tool with the decision: ``{"name", "server", "tool",
        "offered", "refusal"?, "reason"?}`` (the entries of ``mcpmux policy --json``)."""
        return self._native.verdicts()

    def report(self) -> Dict[str, Any]:
        """The effective allow list per server, as ``mcpmux policy --json``
        prints it: ``{"scope", "servers": [{"name", "state", "scopes",
        "in_scope", "offered", "refused", "missing"}]}``."""
        return self._native.report()

    def audit_events(self) -> List[Dict[str, Any]]:
        """The audit events of the calls made so far, oldest first."""
        return self._native.audit_events()

    def pins(self, server: Optional[str] = None) -> List[Dict[str, Any]]:
        """Each pinned tool of ``server`` (or of every pinned server):
        ``{"server", "tool", "status", "changes"?, "pinned_at"?}`` with
        ``status`` one of ``pinned``, ``changed``, ``new``, ``removed`` and
        ``changes`` ``{"fields", "description"?, "added"?, "removed"?,
        "changed"?}``. For the operator: it quotes the server's new text."""
        return self._native.pins(server)

    def approve_tools(self, server: Optional[str] = None, tools: Optional[List[str]] = None) -> List[Dict[str, str]]:
        """Approves the definitions the servers list now: of ``tools`` of
        ``server``, of all its tools when ``tools`` is empty, of every pinned
        server's when ``server`` is None. Quarantined tools become callable.
        Returns ``[{"server", "tool"}]``."""
        return self._native.approve_tools(server, list(tools) if tools is not None else None)

    def revoke_pins(self, server: Optional[str] = None, tools: Optional[List[str]] = None) -> List[Dict[str, str]]:
        """Forgets pins (chosen as :meth:`approve_tools` chooses): a server
        without pins is pinned again as it is when next seen; a tool without
        a pin is quarantined as new. Returns ``[{"server", "tool"}]``."""
        return self._native.revoke_pins(server, list(tools) if tools is not None else None)

    def refresh(self, server: str) -> Dict[str, Any]:
        """Reconnects ``server``, lists its tools again and reports what
        changed for this policy: ``{"server", "offered", "dropped", "added",
        "missing"}``. Allowed tools the server no longer offers drop out
        (and are refused from then on)."""
        return self._native.refresh(server)

    def __repr__(self) -> str:
        return f"<mcpmux.{type(self).__name__} calls_made={self.calls_made}>"


class AsyncPolicy(Policy):
    """:class:`Policy` for an :class:`AsyncHub` (made by :meth:`AsyncHub.policy`)."""

    __slots__ = ()

    async def refresh(self, server: str) -> Dict[str, Any]:  # type: ignore[override]
        """See :meth:`Policy.refresh`."""
        return await _run(self._native.refresh, server)


# ---------------------------------------------------------------- review sessions

#: What a host reviewer returns: a completion ``{"text": ..., "tool_calls":
#: [{"id", "name", "arguments"}]}`` or the answer text.
HostReviewer = Callable[[Dict[str, Any]], Any]


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def _host_adapter(
    host: HostReviewer, loop_of: Callable[[], Optional[asyncio.AbstractEventLoop]]
) -> Callable[[str], str]:
    """Wraps the user's host reviewer for the engine: JSON text in and out.

    Runs on an engine thread with the GIL taken. A coroutine (``async def``
    reviewer) runs on ``loop_of()`` when that loop runs (the loop of an
    :class:`AsyncSessions`), else in a new event loop on this thread.
    """

    def call(request_json: str) -> str:
        result = host(json.loads(request_json))
        if inspect.isawaitable(result):
            loop = loop_of()
            if loop is not None and loop.is_running() and not loop.is_closed():
                result = asyncio.run_coroutine_threadsafe(_awaited(result), loop).result()
            else:
                result = asyncio.run(_awaited(result))
        if isinstance(result, str):
            return json.dumps(result)
        if isinstance(result, Mapping):
            return json.dumps(dict(result))
        raise TypeError(
            "the host reviewer must return a dict ({'text': ..., 'tool_calls': [...]}) "
            f"or a str, not {type(result).__name__!r}"
        )

    return call


def _params(**values: Any) -> Dict[str, Any]:
    """The JSON parameters of a verb: the arguments that are not None."""
    return {k: v for k, v in values.items() if v is not None}


def _native_sessions(config: Optional[Config], host: Optional[HostReviewer], loop_of: Any) -> Any:
    if host is not None and not callable(host):
        raise InvalidInput(f"argument 'host' must be callable or None, not {type(host).__name__!r}")
    adapter = _host_adapter(host, loop_of) if host is not None else None
    if config is None:
        return _native.Sessions(None, None, adapter)
    kind, value = _config_args(config)
    return _native.Sessions(kind, value, adapter)


class Sessions:
    """Review sessions (begin / wait / reply / end): the blocking API.

    ``config`` (optional) is what :meth:`Hub.connect` takes: its servers'
    tools are offered to the reviewer (through the policy) and its
    ``[session]`` table gives the defaults (``reviewer``, ``model``,
    ``max_turns``, ...). ``host`` (optional) is the ``host`` reviewer: a
    callable ``host(request: dict) -> dict | str`` (or ``async def``) that
    gets the completion request (``system``, ``messages``, ``tools``,
    ``model``, ``effort``, ``max_tokens``) and answers
    ``{"text": ..., "tool_calls": [{"id", "name", "arguments"}]}`` or the
    answer text. It is called on an engine thread with the GIL taken; an
    exception it raises fails the round with its message.

    Sessions live on disk under ``<working_dir>/.mcpmux/sessions/``; rounds
    run in the background of this process, and a later :meth:`wait` (from
    any process) resumes a round whose runner died. Every method returns
    the JSON result as a ``dict`` and raises :class:`McpmuxError`
    subclasses (:class:`UnknownSkill`, :class:`InvalidInput`,
    :class:`ReviewerNotFound`, :class:`InvalidSession`,
    :class:`RoundStillRunning`, :class:`ConfigInvalid`).
    """

    __slots__ = ("_native", "__weakref__")

    def __init__(self, config: Optional[Config] = None, *, host: Optional[HostReviewer] = None) -> None:
        self._native = _native_sessions(config, host, lambda: None)

    def begin(
        self,
        *,
        skill: str,
        input: str,
        working_dir: Union[str, "os.PathLike[str]"],
        mode: Optional[str] = None,
        model: Optional[str] = None,
        effort: Optional[str] = None,
        timeout_seconds: Optional[float] = None,
        reviewer: Optional[str] = None,
        max_turns: Optional[int] = None,
        max_tool_calls: Optional[int] = None,
        call_timeout_seconds: Optional[float] = None,
        max_output_bytes: Optional[int] = None,
        scope: Optional[str] = None,
    ) -> Dict[str, Any]:
        """Begins a session and its round 1 (in the background); returns
        ``{"session_dir", "round": 1, "status": "running"}`` (plus
        ``"analysis_prompt"`` for peer skills). ``max_turns``,
        ``max_tool_calls``, ``call_timeout_seconds``, ``max_output_bytes``
        and ``scope`` are this session's limits, over the config's
        ``[session]`` table."""
        params = _params(
            skill=skill,
            mode=mode,
            input=input,
            working_dir=os.fspath(working_dir),
            model=model,
            effort=effort,
            timeout_seconds=timeout_seconds,
            reviewer=reviewer,
            max_turns=max_turns,
            max_tool_calls=max_tool_calls,
            call_timeout_seconds=call_timeout_seconds,
            max_output_bytes=max_output_bytes,
            scope=scope,
        )
        return self._native.call("begin", params)

    def wait(
        self, session_dir: Union[str, "os.PathLike[str]"], max_wait_seconds: Optional[float] = None
    ) -> Dict[str, Any]:
        """Waits up to ``max_wait_seconds`` for the current round; returns
        ``{"status", "round", "elapsed_seconds", "thread_id", "review":
        {"verdict", "blocks"}, "activities", "next", "next_reason", ...}``."""
        params = _params(session_dir=os.fspath(session_dir), max_wait_seconds=max_wait_seconds)
        return self._native.call("wait", params)

    def reply(
        self,
        session_dir: Union[str, "os.PathLike[str]"],
        input: str,
        *,
        model: Optional[str] = None,
        effort: Optional[str] = None,
    ) -> Dict[str, Any]:
        """Starts the next round on the same thread; returns ``{"status":
        "started", "session_dir", "round", "thread_id"}``."""
        params = _params(session_dir=os.fspath(session_dir), input=input, model=model, effort=effort)
        return self._native.call("reply", params)

    def end(self, session_dir: Union[str, "os.PathLike[str]"], outcome: Optional[str] = None) -> Dict[str, Any]:
        """Finalizes the session (``outcome``: ``"consensus"`` or
        ``"stalemate"`` for peer skills); returns ``{"status": "ended",
        "session_dir", "finalized", "verdict"?, "error"?}``."""
        params = _params(session_dir=os.fspath(session_dir), outcome=outcome)
        return self._native.call("end", params)

    def __repr__(self) -> str:
        return "<mcpmux.Sessions>"


class AsyncSessions:
    """Review sessions: the asyncio API, the same methods as
    :class:`Sessions` as coroutines. They never block the event loop. An
    ``async def`` host reviewer runs on the loop this object was first used
    on; a plain function runs on an engine thread (GIL taken)."""

    __slots__ = ("_native", "_loop", "__weakref__")

    def __init__(self, config: Optional[Config] = None, *, host: Optional[HostReviewer] = None) -> None:
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        # A weak reference: the native context holds the host adapter, which
        # must not hold this object (a cycle the collector cannot see).
        me = weakref.ref(self)

        def loop_of() -> Optional[asyncio.AbstractEventLoop]:
            this = me()
            return this._loop if this is not None else None

        self._native = _native_sessions(config, host, loop_of)

    async def _call(self, verb: str, params: Dict[str, Any]) -> Dict[str, Any]:
        loop = _get_running_loop()
        if self._loop is None or self._loop.is_closed():
            self._loop = loop
        return await _run(self._native.call, verb, params)

    async def begin(
        self,
        *,
        skill: str,
        input: str,
        working_dir: Union[str, "os.PathLike[str]"],
        mode: Optional[str] = None,
        model: Optional[str] = None,
        effort: Optional[str] = None,
        timeout_seconds: Optional[float] = None,
        reviewer: Optional[str] = None,
        max_turns: Optional[int] = None,
        max_tool_calls: Optional[int] = None,
        call_timeout_seconds: Optional[float] = None,
        max_output_bytes: Optional[int] = None,
        scope: Optional[str] = None,
    ) -> Dict[str, Any]:
        """See :meth:`Sessions.begin`."""
        params = _params(
            skill=skill,
            mode=mode,
            input=input,
            working_dir=os.fspath(working_dir),
            model=model,
            effort=effort,
            timeout_seconds=timeout_seconds,
            reviewer=reviewer,
            max_turns=max_turns,
            max_tool_calls=max_tool_calls,
            call_timeout_seconds=call_timeout_seconds,
            max_output_bytes=max_output_bytes,
            scope=scope,
        )
        return await self._call("begin", params)

    async def wait(
        self, session_dir: Union[str, "os.PathLike[str]"], max_wait_seconds: Optional[float] = None
    ) -> Dict[str, Any]:
        """See :meth:`Sessions.wait`."""
        params = _params(session_dir=os.fspath(session_dir), max_wait_seconds=max_wait_seconds)
        return await self._call("wait", params)

    async def reply(
        self,
        session_dir: Union[str, "os.PathLike[str]"],
        input: str,
        *,
        model: Optional[str] = None,
        effort: Optional[str] = None,
    ) -> Dict[str, Any]:
        """See :meth:`Sessions.reply`."""
        params = _params(session_dir=os.fspath(session_dir), input=input, model=model, effort=effort)
        return await self._call("reply", params)

    async def end(self, session_dir: Union[str, "os.PathLike[str]"], outcome: Optional[str] = None) -> Dict[str, Any]:
        """See :meth:`Sessions.end`."""
        params = _params(session_dir=os.fspath(session_dir), outcome=outcome)
        return await self._call("end", params)

    def __repr__(self) -> str:
        return "<mcpmux.AsyncSessions>"


# ---------------------------------------------------------------- process hooks


def _after_fork_in_child() -> None:
    _native.after_fork_in_child()
    _bridges.clear()


atexit.register(lambda: _native.shutdown(EXIT_GRACE_SECONDS))
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)

