"""mcpmux exceptions: one class per stable error code (docs/errors.md#codes).

This is the one place where engine errors become Python exceptions: the
native module hands over ``(code, message, rpc_code, data)`` and
:func:`_from_core` picks the class for the code. Every exception is a
:class:`McpmuxError` with ``.code`` (the same string the CLI, C and Node
report) and ``.message``; :class:`ServerError` also has ``.rpc_code`` and
``.data`` from the server's JSON-RPC error.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Optional, Type

__all__ = [
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
    "AuthRequired",
    "AuthFailed",
    "Internal",
]


class McpmuxError(Exception):
    """Base class of every mcpmux error.

    ``code`` is the stable code string (for example ``"TIMEOUT"``) and
    ``message`` the human-readable text (``str(error)`` is the message).
    Catch a subclass (``mcpmux.Timeout``) or test ``error.code``.
    """

    code: str = "INTERNAL"
    message: str

    def __init__(self, message: str, *, code: Optional[str] = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None and code != type(self).code:
            self.code = code

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, code={self.code!r})"

    def __reduce__(self) -> Any:
        return (_rebuild, (type(self), self.message), self.__dict__)


def _rebuild(cls: Type[McpmuxError], message: str) -> McpmuxError:
    error = cls.__new__(cls)
    Exception.__init__(error, message)
    error.message = message
    return error


class ConfigInvalid(McpmuxError, ValueError):
    """The configuration is malformed or names something invalid (``CONFIG_INVALID``)."""

    code = "CONFIG_INVALID"


class InvalidInput(McpmuxError, ValueError, TypeError):
    """An argument is invalid; the message names it (``INVALID_INPUT``).

    Also a ``ValueError`` and a ``TypeError``, so either catches it.
    """

    code = "INVALID_INPUT"


class UnknownServer(McpmuxError):
    """No configured server has this name, or it is disabled (``UNKNOWN_SERVER``)."""

    code = "UNKNOWN_SERVER"


class UnknownTool(McpmuxError):
    """No connected server offers a tool of this name (``UNKNOWN_TOOL``)."""

    code = "UNKNOWN_TOOL"


class ToolNotAllowed(McpmuxError):
    """Policy refused the tool (``TOOL_NOT_ALLOWED``)."""

    code = "TOOL_NOT_ALLOWED"


class ConnectFailed(McpmuxError):
    """A server could not be started or did not initialize (``CONNECT_FAILED``)."""

    code = "CONNECT_FAILED"


class TransportClosed(McpmuxError):
    """The connection is gone: the server exited, or the hub is closed (``TRANSPORT_CLOSED``)."""

    code = "TRANSPORT_CLOSED"


class Timeout(McpmuxError):
    """A request did not complete in time; the server was told to cancel it (``TIMEOUT``)."""

    code = "TIMEOUT"


class Cancelled(McpmuxError):
    """The request was cancelled (``CANCELLED``)."""

    code = "CANCELLED"


class ProtocolError(McpmuxError):
    """The server broke the protocol (``PROTOCOL_ERROR``)."""

    code = "PROTOCOL_ERROR"


class ServerError(McpmuxError):
    """The server answered with a JSON-RPC error (``SERVER_ERROR``).

    ``rpc_code`` is the JSON-RPC error code (for example ``-32602``) and
    ``data`` the error's optional ``data`` member (``None`` when absent).
    """

    code = "SERVER_ERROR"
    rpc_code: Optional[int] = None
    data: Any = None


class LimitExceeded(McpmuxError):
    """A configured limit was reached (``LIMIT_EXCEEDED``)."""

    code = "LIMIT_EXCEEDED"


class ProviderError(McpmuxError):
    """An LLM provider failed (``PROVIDER_ERROR``)."""

    code = "PROVIDER_ERROR"


class UnknownSkill(McpmuxError):
    """A session skill name is not known (``UNKNOWN_SKILL``)."""

    code = "UNKNOWN_SKILL"


class ReviewerNotFound(McpmuxError):
    """A session reviewer could not be found (``REVIEWER_NOT_FOUND``)."""

    code = "REVIEWER_NOT_FOUND"


class InvalidSession(McpmuxError):
    """A directory is not a readable session (``INVALID_SESSION``)."""

    code = "INVALID_SESSION"


class RoundStillRunning(McpmuxError):
    """A reply was sent while the previous round still runs (``ROUND_STILL_RUNNING``)."""

    code = "ROUND_STILL_RUNNING"


class Internal(McpmuxError):
    """A bug or an unexpected condition inside mcpmux (``INTERNAL``)."""

    code = "INTERNAL"


class AuthRequired(McpmuxError):
    """The server needs authorization and there is no usable token and no way to ask for one (``AUTH_REQUIRED``)."""

    code = "AUTH_REQUIRED"


class AuthFailed(McpmuxError):
    """The server or its authorization server refused the authorization (``AUTH_FAILED``)."""

    code = "AUTH_FAILED"


class ConfigUntrusted(McpmuxError):
    """A config found in the current directory is not trusted, or changed since it was trusted (``CONFIG_UNTRUSTED``).

    Nothing was started; the message names the file and the command that
    trusts it (``mcpmux trust PATH``). Configs a host passes are always trusted.
    """

    code = "CONFIG_UNTRUSTED"


class OutputInvalid(McpmuxError):
    """A tool's result does not satisfy the tool's ``outputSchema`` (``OUTPUT_INVALID``).

    The message names the server, the tool and the first failing path;
    ``validate_output="warn"`` or ``"off"`` on the call returns the result instead.
    """

    code = "OUTPUT_INVALID"
class ToolChanged(McpmuxError):
    """A pinned tool's definition changed since it was approved, or the tool is new (``TOOL_CHANGED``).

    The tool is quarantined: not offered, and the server was not asked. The
    message names the server, the tool and the fields that changed;
    ``mcpmux policy approve SERVER TOOL`` (or ``approve_tools``) makes it
    callable again.
    """

    code = "TOOL_CHANGED"


#: The exception class of each error code.
BY_CODE: Dict[str, Type[McpmuxError]] = {
    cls.code: cls
    for cls in (
        ConfigInvalid,
        InvalidInput,
        UnknownServer,
        UnknownTool,
        ToolNotAllowed,
        ConnectFailed,
        TransportClosed,
        Timeout,
        Cancelled,
        ProtocolError,
        ServerError,
        LimitExceeded,
        ProviderError,
        UnknownSkill,
        ReviewerNotFound,
        InvalidSession,
        RoundStillRunning,
        Internal,
        AuthRequired,
        AuthFailed,
        ConfigUntrusted,
        OutputInvalid,
        ToolChanged,
    )
}

# Shown as mcpmux.Timeout (not mcpmux._errors.Timeout) in tracebacks.
for _cls in (McpmuxError, *BY_CODE.values()):
    _cls.__module__ = "mcpmux"
del _cls


def _from_core(
    code: str, message: str, rpc_code: Optional[int], data: Optional[str]
) -> McpmuxError:
    """The exception for an engine error (called by the native module).

    A code this version does not know (a newer engine) still gives a
    ``McpmuxError`` carrying that code.
    """
    cls = BY_CODE.get(code)
    error = cls(message) if cls is not None else McpmuxError(message, code=code)
    if isinstance(error, ServerError):
        error.rpc_code = rpc_code
        if data is not None:
            try:
                error.data = json.loads(data)
            except ValueError:
                error.data = data
    return error
