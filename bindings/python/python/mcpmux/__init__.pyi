"""Type stubs of the mcpmux package (see __init__.py for the documentation)."""

import os
from types import TracebackType
from typing import (
    Any,
    Awaitable,
    Callable,
    Coroutine,
    Dict,
    Generator,
    Iterable,
    List,
    Literal,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Type,
    Union,
)

__version__: str
ERROR_CODES: Tuple[str, ...]
EXIT_GRACE_SECONDS: float

#: A config: a path to a TOML or JSON file, TOML or JSON text, or a dict.
Config = Union[str, os.PathLike[str], Mapping[str, Any]]
#: ``on_progress(progress, total, message)``; for AsyncHub it may be a coroutine function.
ProgressCallback = Callable[[float, Optional[float], Optional[str]], Any]
#: ``on_elicitation(params)`` / ``on_sampling(params)``: the result dict (or an awaitable of it).
RequestHandler = Callable[[Dict[str, Any]], Any]
#: Roots: paths or ``file://`` URIs.
RootsArg = Iterable[Union[str, os.PathLike[str]]]
#: ``tools_for`` formats.
ToolFormat = Literal["anthropic", "openai", "openai-responses", "mcp"]

#: One hub event: ``{"type": "server_state" | "tools_changed" |
#: "resources_changed" | "prompts_changed" | "resource_updated" | "log" |
#: "task_status" | "event" | "event_stream" | "lagged", ...}`` (see ``Events``).
HubEvent = Dict[str, Any]
#: ``on_event(event)``; for AsyncHub it runs on the event loop and may be a coroutine function.
EventCallback = Callable[[HubEvent], Any]
#: ``complete()`` result: the server's ``completion`` (``values``, ``total``?, ``hasMore``?).
Completion = Dict[str, Any]

class Events:
    """A hub's events from when ``Hub.events()`` was called; blocking
    iteration that ends when the hub is closed."""

    def __iter__(self) -> Events: ...
    def __next__(self) -> HubEvent: ...

class AsyncEvents:
    """A hub's events as an async iterator (``AsyncHub.events()``)."""

    def __aiter__(self) -> AsyncEvents: ...
    async def __anext__(self) -> HubEvent: ...

class EventStream:
    """An open stream of an event type (``stream_events``); its
    occurrences arrive on the hub's events as ``event``."""

    @property
    def id(self) -> int: ...
    @property
    def cursor(self) -> Optional[str]: ...
    def stop(self) -> None: ...
    def __enter__(self) -> EventStream: ...
    def __exit__(self, *exc_info: Any) -> None: ...
    async def __aenter__(self) -> EventStream: ...
    async def __aexit__(self, *exc_info: Any) -> None: ...

#: ``poll_events()`` result: ``events``, ``cursor``, ``truncated``,
#: ``has_more``, ``next_poll_ms``.
EventsPage = Dict[str, Any]
#: ``subscribe_events()`` result: ``id``, ``refresh_before``?, ``cursor``?,
#: ``truncated``, ``delivery_status``?.
WebhookSubscription = Dict[str, Any]

#: ``servers()`` item, as ``mcpmux servers --json`` prints it.
ServerStatus = Dict[str, Any]
#: ``list_tools()`` item, as ``mcpmux tools --json`` prints it (``ui_resource_uri``
#: and ``app_only`` when the tool has an MCP app).
HubTool = Dict[str, Any]
#: An MCP ``CallToolResult`` as the server sent it (``content``,
#: ``structuredContent``, ``isError``, ...).
CallToolResult = Dict[str, Any]
#: ``call_tool_as_task()`` result: ``server`` and ``task_id`` (plain strings).
TaskHandle = Dict[str, str]
#: ``task()`` result: ``server``, ``task_id``, ``status`` ("working",
#: "input_required", "completed", "failed", "cancelled"), ``message``,
#: ``created_at``, ``last_updated_at``, ``ttl_ms``, ``poll_interval_ms``.
TaskInfo = Dict[str, Any]
#: One audit event: ``time``, ``server``, ``tool``, ``status`` ("ok",
#: "error", "not_allowed", "limit_exceeded", "timeout"), ``bytes``,
#: ``duration_ms``, ``redactions``, ``truncated``, ``code`` (refusals, failures).
AuditEvent = Dict[str, Any]
#: ``on_audit(event)``; for AsyncHub policies it may be a coroutine function.
AuditCallback = Callable[[AuditEvent], Any]
#: ``Policy.refresh`` result: ``server``, ``offered``, ``dropped``, ``added``, ``missing``.
RefreshReport = Dict[str, Any]

class Policy:
    """A tool-use policy for a hub's calls (made by ``Hub.policy``)."""

    @property
    def calls_made(self) -> int: ...
    def offered(self) -> List[HubTool]: ...
    def verdicts(self) -> List[Dict[str, Any]]: ...
    def report(self) -> Dict[str, Any]: ...
    def audit_events(self) -> List[AuditEvent]: ...
    def pins(self, server: Optional[str] = None) -> List[Dict[str, Any]]: ...
    def approve_tools(self, server: Optional[str] = None, tools: Optional[List[str]] = None) -> List[Dict[str, str]]: ...
    def revoke_pins(self, server: Optional[str] = None, tools: Optional[List[str]] = None) -> List[Dict[str, str]]: ...
    def refresh(self, server: str) -> RefreshReport: ...

class AsyncPolicy(Policy):
    """A tool-use policy for an AsyncHub's calls (made by ``AsyncHub.policy``)."""

    async def refresh(self, server: str) -> RefreshReport: ...  # type: ignore[override]

class Hub:
    """Many MCP servers behind one tool list: the blocking API."""

    def __init__(self, native: Any) -> None: ...
    @classmethod
    def connect(
        cls,
        config: Config,
        *,
        authorize: Optional[Callable[[str, str, str], str]] = ...,
        on_event: Optional[EventCallback] = ...,
        startup_timeout: Optional[float] = ...,
        on_elicitation: Optional[RequestHandler] = ...,
        on_sampling: Optional[RequestHandler] = ...,
        roots: Optional[RootsArg] = ...,
        deny_private: bool = ...,
        allow_networks: Optional[Sequence[str]] = ...,
        require_https: bool = ...,
    ) -> Hub: ...
    @property
    def closed(self) -> bool: ...
    def set_roots(self, roots: RootsArg) -> None: ...
    @property
    def roots(self) -> List[Dict[str, Any]]: ...
    def servers(self) -> List[ServerStatus]: ...
    def list_tools(self) -> List[HubTool]: ...
    def search_tools(self, query: str, limit: int = ...) -> List[HubTool]: ...
    def tools_for(self, format: Union[ToolFormat, str]) -> List[Dict[str, Any]]: ...
    def call_tool(
        self,
        name: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        timeout: Optional[float] = None,
        on_progress: Optional[ProgressCallback] = None,
        policy: Optional[Policy] = None,
        task: bool = False,
        max_total_timeout: Optional[float] = None,
        task_ttl: Optional[float] = None,
        traceparent: Optional[str] = None,
        tracestate: Optional[str] = None,
        validate_output: Optional[str] = None,
    ) -> CallToolResult: ...
    def call_tool_as_task(
        self,
        name: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        timeout: Optional[float] = None,
        task_ttl: Optional[float] = None,
    ) -> TaskHandle: ...
    def task(self, server: str, task_id: str) -> TaskInfo: ...
    def task_result(
        self, server: str, task_id: str, *, timeout: Optional[float] = None
    ) -> CallToolResult: ...
    def cancel_task(self, server: str, task_id: str) -> TaskInfo: ...
    def list_tasks(self, server: str) -> List[TaskInfo]: ...
    def list_resources(self, server: Optional[str] = None) -> List[Dict[str, Any]]: ...
    def list_resource_templates(self, server: Optional[str] = None) -> List[Dict[str, Any]]: ...
    def read_resource(self, uri: str, server: Optional[str] = None) -> Dict[str, Any]: ...
    def list_prompts(self, server: Optional[str] = None) -> List[Dict[str, Any]]: ...
    def get_prompt(
        self,
        name: str,
        arguments: Optional[Mapping[str, str]] = None,
        server: Optional[str] = None,
    ) -> Dict[str, Any]: ...
    def refresh(self, server: str) -> None: ...
    def reload(self, config: Config) -> None: ...
    def events(self) -> Events: ...
    def ping(self, server: str) -> float: ...
    def set_log_level(self, server: str, level: str) -> None: ...
    def complete(
        self,
        ref: Mapping[str, Any],
        argument: Mapping[str, str],
        context: Optional[Mapping[str, Any]] = None,
        server: Optional[str] = None,
    ) -> Completion: ...
    def subscribe(self, uri: str, server: Optional[str] = None) -> None: ...
    def unsubscribe(self, uri: str, server: Optional[str] = None) -> None: ...
    def list_events(self, server: Optional[str] = None) -> List[Dict[str, Any]]: ...
    def poll_events(
        self,
        server: str,
        name: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        cursor: Optional[str] = None,
        max_events: Optional[int] = None,
        max_age: Optional[float] = None,
    ) -> EventsPage: ...
    def stream_events(
        self,
        server: str,
        name: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        cursor: Optional[str] = None,
        max_age: Optional[float] = None,
        heartbeat: Optional[float] = None,
    ) -> EventStream: ...
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
    ) -> WebhookSubscription: ...
    def unsubscribe_events(
        self,
        server: str,
        name: str,
        url: str,
        arguments: Optional[Mapping[str, Any]] = None,
    ) -> None: ...
    def policy(
        self,
        *,
        scope: Optional[str] = None,
        max_tool_calls: Optional[int] = None,
        call_timeout_seconds: Optional[float] = None,
        max_output_bytes: Optional[int] = None,
        redact: Optional[List[Mapping[str, str]]] = None,
        pin_tools: Optional[bool] = None,
        audit_path: Optional[Union[str, os.PathLike[str]]] = None,
        on_audit: Optional[AuditCallback] = None,
    ) -> Policy: ...
    def close(self) -> None: ...
    def __enter__(self) -> Hub: ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None: ...

class _Connecting(Coroutine[Any, Any, AsyncHub]):
    """What ``AsyncHub.connect`` returns: await it, or ``async with`` it."""

    def send(self, value: Any) -> Any: ...
    def throw(self, *args: Any) -> Any: ...
    def close(self) -> None: ...
    def __await__(self) -> Generator[Any, None, AsyncHub]: ...
    async def __aenter__(self) -> AsyncHub: ...
    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None: ...

class AsyncHub:
    """Many MCP servers behind one tool list: the asyncio API."""

    def __init__(self, native: Any) -> None: ...
    @classmethod
    def connect(
        cls,
        config: Config,
        *,
        authorize: Optional[Callable[[str, str, str], str]] = ...,
        on_event: Optional[EventCallback] = ...,
        startup_timeout: Optional[float] = ...,
        on_elicitation: Optional[RequestHandler] = ...,
        on_sampling: Optional[RequestHandler] = ...,
        roots: Optional[RootsArg] = ...,
        deny_private: bool = ...,
        allow_networks: Optional[Sequence[str]] = ...,
        require_https: bool = ...,
    ) -> _Connecting: ...
    @property
    def closed(self) -> bool: ...
    async def set_roots(self, roots: RootsArg) -> None: ...
    @property
    def roots(self) -> List[Dict[str, Any]]: ...
    async def servers(self) -> List[ServerStatus]: ...
    async def list_tools(self) -> List[HubTool]: ...
    async def search_tools(self, query: str, limit: int = ...) -> List[HubTool]: ...
    async def tools_for(self, format: Union[ToolFormat, str]) -> List[Dict[str, Any]]: ...
    async def call_tool(
        self,
        name: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        timeout: Optional[float] = None,
        on_progress: Optional[
            Callable[[float, Optional[float], Optional[str]], Union[None, Awaitable[None]]]
        ] = None,
        policy: Optional[AsyncPolicy] = None,
        task: bool = False,
        max_total_timeout: Optional[float] = None,
        task_ttl: Optional[float] = None,
        traceparent: Optional[str] = None,
        tracestate: Optional[str] = None,
        validate_output: Optional[str] = None,
    ) -> CallToolResult: ...
    async def call_tool_as_task(
        self,
        name: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        timeout: Optional[float] = None,
        task_ttl: Optional[float] = None,
    ) -> TaskHandle: ...
    async def task(self, server: str, task_id: str) -> TaskInfo: ...
    async def task_result(
        self, server: str, task_id: str, *, timeout: Optional[float] = None
    ) -> CallToolResult: ...
    async def cancel_task(self, server: str, task_id: str) -> TaskInfo: ...
    async def list_tasks(self, server: str) -> List[TaskInfo]: ...
    async def list_resources(self, server: Optional[str] = None) -> List[Dict[str, Any]]: ...
    async def list_resource_templates(self, server: Optional[str] = None) -> List[Dict[str, Any]]: ...
    async def read_resource(self, uri: str, server: Optional[str] = None) -> Dict[str, Any]: ...
    async def list_prompts(self, server: Optional[str] = None) -> List[Dict[str, Any]]: ...
    async def get_prompt(
        self,
        name: str,
        arguments: Optional[Mapping[str, str]] = None,
        server: Optional[str] = None,
    ) -> Dict[str, Any]: ...
    async def refresh(self, server: str) -> None: ...
    async def reload(self, config: Config) -> None: ...
    def events(self) -> AsyncEvents: ...
    async def ping(self, server: str) -> float: ...
    async def set_log_level(self, server: str, level: str) -> None: ...
    async def complete(
        self,
        ref: Mapping[str, Any],
        argument: Mapping[str, str],
        context: Optional[Mapping[str, Any]] = None,
        server: Optional[str] = None,
    ) -> Completion: ...
    async def subscribe(self, uri: str, server: Optional[str] = None) -> None: ...
    async def unsubscribe(self, uri: str, server: Optional[str] = None) -> None: ...
    async def list_events(self, server: Optional[str] = None) -> List[Dict[str, Any]]: ...
    async def poll_events(
        self,
        server: str,
        name: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        cursor: Optional[str] = None,
        max_events: Optional[int] = None,
        max_age: Optional[float] = None,
    ) -> EventsPage: ...
    async def stream_events(
        self,
        server: str,
        name: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        cursor: Optional[str] = None,
        max_age: Optional[float] = None,
        heartbeat: Optional[float] = None,
    ) -> EventStream: ...
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
    ) -> WebhookSubscription: ...
    async def unsubscribe_events(
        self,
        server: str,
        name: str,
        url: str,
        arguments: Optional[Mapping[str, Any]] = None,
    ) -> None: ...
    def policy(
        self,
        *,
        scope: Optional[str] = None,
        max_tool_calls: Optional[int] = None,
        call_timeout_seconds: Optional[float] = None,
        max_output_bytes: Optional[int] = None,
        redact: Optional[List[Mapping[str, str]]] = None,
        pin_tools: Optional[bool] = None,
        audit_path: Optional[Union[str, os.PathLike[str]]] = None,
        on_audit: Optional[AuditCallback] = None,
    ) -> AsyncPolicy: ...
    async def close(self) -> None: ...
    async def __aenter__(self) -> AsyncHub: ...
    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None: ...

#: A host reviewer: gets the completion request (``system``, ``messages``,
#: ``tools``, ``model``, ``effort``, ``max_tokens``) and answers a completion
#: ``{"text": ..., "tool_calls": [{"id", "name", "arguments"}]}`` or the
#: answer text; it may be an ``async def``.
HostReviewer = Callable[
    [Dict[str, Any]],
    Union[Dict[str, Any], str, Awaitable[Union[Dict[str, Any], str]]],
]
#: ``begin()`` result: ``session_dir``, ``round``, ``status`` (and
#: ``analysis_prompt`` for peer skills).
SessionBegun = Dict[str, Any]
#: ``wait()`` result: ``status``, ``round``, ``elapsed_seconds``,
#: ``thread_id``, ``review`` (``verdict``, ``blocks``), ``activities``,
#: ``next``, ``next_reason`` (plus ``error``, ``failure_reason``, ...).
SessionStatus = Dict[str, Any]
#: ``reply()`` result: ``status`` ("started"), ``session_dir``, ``round``, ``thread_id``.
SessionReplied = Dict[str, Any]
#: ``end()`` result: ``status`` ("ended"), ``session_dir``, ``finalized``, ``verdict``, ``error``.
SessionEnded = Dict[str, Any]
PathLike = Union[str, os.PathLike[str]]

class Sessions:
    """Review sessions (begin / wait / reply / end): the blocking API."""

    def __init__(self, config: Optional[Config] = None, *, host: Optional[HostReviewer] = None) -> None: ...
    def begin(
        self,
        *,
        skill: str,
        input: str,
        working_dir: PathLike,
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
    ) -> SessionBegun: ...
    def wait(self, session_dir: PathLike, max_wait_seconds: Optional[float] = None) -> SessionStatus: ...
    def reply(
        self,
        session_dir: PathLike,
        input: str,
        *,
        model: Optional[str] = None,
        effort: Optional[str] = None,
    ) -> SessionReplied: ...
    def end(self, session_dir: PathLike, outcome: Optional[str] = None) -> SessionEnded: ...

class AsyncSessions:
    """Review sessions: the asyncio API."""

    def __init__(self, config: Optional[Config] = None, *, host: Optional[HostReviewer] = None) -> None: ...
    async def begin(
        self,
        *,
        skill: str,
        input: str,
        working_dir: PathLike,
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
    ) -> SessionBegun: ...
    async def wait(self, session_dir: PathLike, max_wait_seconds: Optional[float] = None) -> SessionStatus: ...
    async def reply(
        self,
        session_dir: PathLike,
        input: str,
        *,
        model: Optional[str] = None,
        effort: Optional[str] = None,
    ) -> SessionReplied: ...
    async def end(self, session_dir: PathLike, outcome: Optional[str] = None) -> SessionEnded: ...

class McpmuxError(Exception):
    """Base class of every mcpmux error; ``code`` is the stable code string."""

    code: str
    message: str
    def __init__(self, message: str, *, code: Optional[str] = None) -> None: ...

class ConfigInvalid(McpmuxError, ValueError): ...
class InvalidInput(McpmuxError, ValueError, TypeError): ...
class UnknownServer(McpmuxError): ...
class UnknownTool(McpmuxError): ...
class ToolNotAllowed(McpmuxError): ...
class ConnectFailed(McpmuxError): ...
class TransportClosed(McpmuxError): ...
class Timeout(McpmuxError): ...
class Cancelled(McpmuxError): ...
class ProtocolError(McpmuxError): ...

class ServerError(McpmuxError):
    """The server answered with a JSON-RPC error."""

    rpc_code: Optional[int]
    data: Any

class LimitExceeded(McpmuxError): ...
class ProviderError(McpmuxError): ...
class UnknownSkill(McpmuxError): ...
class ReviewerNotFound(McpmuxError): ...
class InvalidSession(McpmuxError): ...
class RoundStillRunning(McpmuxError): ...
class Internal(McpmuxError): ...
class AuthRequired(McpmuxError): ...
class AuthFailed(McpmuxError): ...
class ConfigUntrusted(McpmuxError): ...
class OutputInvalid(McpmuxError): ...
class ToolChanged(McpmuxError): ...
