"""A hub's tools as LangChain tools.

>>> from langchain.agents import create_agent              # doctest: +SKIP
>>> agent = create_agent(model, mcpmux.langchain.tools(hub, policy=hub.policy()))

``tools(hub)`` gives one :class:`HubTool` (a ``BaseTool``) per tool the hub
can call, named as the hub names it (``mcp_{server}_{tool}``), with the
tool's ``inputSchema`` as its args schema. Each tool works with ``invoke``
and ``ainvoke`` for a :class:`~mcpmux.Hub` and an :class:`~mcpmux.AsyncHub`
alike (both views share the hub's servers); ``ainvoke`` runs on the event
loop, and cancelling its task cancels the MCP request.

The tool answers ``(text, CallToolResult)`` (``response_format =
"content_and_artifact"``): the model reads the text, the program gets the
whole result as the ``ToolMessage``'s artifact. A result with ``isError``,
a call the policy refuses (``TOOL_NOT_ALLOWED``, ``LIMIT_EXCEEDED``) and an
engine failure (``TIMEOUT``, ``TRANSPORT_CLOSED`` ...) raise a
:class:`HubToolError` (a ``ToolException``), which the tool handles
(``handle_tool_error=True``): the model reads the message in a
``ToolMessage`` with ``status="error"``; the run goes on.

Progress notifications are dispatched as the custom callback event
``"mcpmux_progress"`` (``astream_events``, callback handlers'
``on_custom_event``) and, inside a LangGraph graph, written to its
``stream_mode="custom"`` stream as ``{"mcpmux_progress": {...}}``.

LangChain keeps the tool list it was given: after a ``tools_changed``
event, call :func:`tools` again for the new list.

Needs ``langchain-core`` (``pip install langchain-core``); ``import mcpmux``
never imports it.
"""

from __future__ import annotations

import contextvars
import sys
from typing import Any, Dict, List, Optional

from . import _adapters
from ._adapters import AnyHub, AnyPolicy

_ADAPTER = "mcpmux.langchain"
_tools_mod = _adapters.require("langchain_core.tools", "langchain-core", _ADAPTER)
_config_mod = _adapters.require("langchain_core.runnables.config", "langchain-core", _ADAPTER)
_callbacks_mod = _adapters.require("langchain_core.callbacks.manager", "langchain-core", _ADAPTER)

_pydantic = _adapters.require("pydantic", "langchain-core", _ADAPTER)

BaseTool = _tools_mod.BaseTool
ToolException = _tools_mod.ToolException

__all__ = ["tools", "HubTool", "HubToolError", "PROGRESS_EVENT"]

#: The name of the custom callback event that carries progress.
PROGRESS_EVENT = "mcpmux_progress"


class HubToolError(ToolException):
    """A hub tool's error result, refusal or failure, as the model reads
    it (``str(e)``). ``result`` is the ``CallToolResult`` (``isError``) or
    ``None``; ``error`` the :class:`mcpmux.McpmuxError` of a refusal or
    failure, else ``None``."""

    def __init__(self, message: str, result: Optional[Dict[str, Any]] = None, error: Any = None) -> None:
        super().__init__(message)
        self.result = result
        self.error = error


def _stream_writer() -> Any:
    """LangGraph's custom stream writer when running inside a graph."""
    config = sys.modules.get("langgraph.config")
    if config is None:
        return None
    try:
        return config.get_stream_writer()
    except Exception:
        return None


def _progress_data(tool: str, progress: float, total: Optional[float], message: Optional[str]) -> Dict[str, Any]:
    return {"tool": tool, "progress": progress, "total": total, "message": message}


class HubTool(BaseTool):  # type: ignore[misc, valid-type]
    """One hub tool (see the module)."""

    response_format: str = "content_and_artifact"
    handle_tool_error: Any = True
    hub: Any = None
    """The :class:`~mcpmux.Hub` or :class:`~mcpmux.AsyncHub` it calls."""
    policy: Any = None
    """The :class:`~mcpmux.Policy` its calls go through, or ``None``."""

    model_config = {"arbitrary_types_allowed": True}

    _mcpmux_views: Any = _pydantic.PrivateAttr(default=None)

    def _views(self) -> Any:
        """A blocking and an asyncio view of the hub (the same servers)."""
        if self._mcpmux_views is None:
            self._mcpmux_views = (_adapters.sync_hub(self.hub), _adapters.async_hub(self.hub))
        return self._mcpmux_views

    def _answer(self, outcome: Any) -> Any:
        if outcome.is_error:
            raise HubToolError(outcome.text, outcome.result, outcome.error)
        return outcome.text, outcome.result

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        config = _config_mod.ensure_config()
        writer = _stream_writer()
        context = contextvars.copy_context()

        def on_progress(progress: float, total: Optional[float], message: Optional[str]) -> None:
            data = _progress_data(self.name, progress, total, message)
            try:
                _callbacks_mod.dispatch_custom_event(PROGRESS_EVENT, data, config=config)
            except Exception:
                pass
            if writer is not None:
                try:  # the writer reads the graph's config from the context
                    context.run(writer, {PROGRESS_EVENT: data})
                except Exception:
                    pass

        hub = self._views()[0]
        return self._answer(_adapters.call(hub, self.name, kwargs, self.policy, on_progress))

    async def _arun(self, *args: Any, **kwargs: Any) -> Any:
        config = _config_mod.ensure_config()
        writer = _stream_writer()
        context = contextvars.copy_context()

        async def on_progress(progress: float, total: Optional[float], message: Optional[str]) -> None:
            data = _progress_data(self.name, progress, total, message)
            try:
                await _callbacks_mod.adispatch_custom_event(PROGRESS_EVENT, data, config=config)
            except Exception:
                pass
            if writer is not None:
                try:  # the writer reads the graph's config from the context
                    context.run(writer, {PROGRESS_EVENT: data})
                except Exception:
                    pass

        hub = self._views()[1]
        return self._answer(await _adapters.acall(hub, self.name, kwargs, self.policy, on_progress))


class _ToolList(list):  # type: ignore[type-arg]
    """The list :func:`tools` returns; also awaitable (it gives itself), so
    ``await tools(async_hub)`` works as well as ``tools(async_hub)``."""

    def __await__(self) -> Any:
        if False:  # pragma: no cover - makes this a generator
            yield None
        return self


def tools(hub: AnyHub, *, policy: Optional[AnyPolicy] = None) -> List[Any]:
    """One LangChain tool per tool the hub can call (a failed server's tools
    are left out), named as the hub names them. With ``policy`` (from
    ``hub.policy()``) every call goes through it: the allow list, refusal
    of destructive tools, redaction and capping of output, the audit log;
    text output is framed as untrusted data. For an ``AsyncHub`` the list
    may be awaited (``await tools(hub)``)."""
    _adapters.check_hub(hub, _ADAPTER)
    _adapters.check_policy(policy, hub, _ADAPTER)
    found = _ToolList()
    for tool in _adapters.callable_tools(hub, warn=True):
        found.append(
            HubTool(
                name=tool["name"],
                description=_adapters.description(tool),
                args_schema=_adapters.input_schema(tool),
                hub=hub,
                policy=policy,
                metadata={
                    "mcpmux": {
                        "server": tool["server"],
                        "tool": tool["tool"],
                        "title": tool.get("title"),
                        "annotations": tool.get("annotations"),
                        "output_schema": tool.get("output_schema"),
                    }
                },
            )
        )
    return found
