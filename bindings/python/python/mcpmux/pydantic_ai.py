"""A hub as a Pydantic AI toolset.

>>> from pydantic_ai import Agent                            # doctest: +SKIP
>>> agent = Agent(model, toolsets=[mcpmux.pydantic_ai.HubToolset(hub)])

:class:`HubToolset` offers the tools the hub can call (a failed server's
tools are left out), named as the hub names them (``mcp_{server}_{tool}``),
with each tool's ``inputSchema`` as its parameters. Pydantic AI asks for the
tools at every step, so the list follows ``tools_changed``. Calls run on the
event loop (a blocking :class:`~mcpmux.Hub` is called through an asyncio
view of the same servers); cancelling the run cancels the MCP request.

The tool returns the result's text to the model (``ToolReturn``, with the
whole ``CallToolResult`` as its ``metadata``). A result with ``isError``
and an engine failure (``TIMEOUT`` ...) raise ``ModelRetry`` with the text,
so the model reads it and may try again; a call the policy refuses
(``TOOL_NOT_ALLOWED``, ``LIMIT_EXCEEDED``) raises ``ToolFailed``: the model
reads it too, but it spends no retry (trying again cannot help). Progress
notifications are emitted into the run's event stream as
:class:`HubProgress` events (``ctx.emit``).

Needs ``pydantic-ai-slim`` (``pip install pydantic-ai-slim``); ``import
mcpmux`` never imports it.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any, Dict, List, Optional

from . import _adapters
from ._adapters import AnyHub, AnyPolicy

_ADAPTER = "mcpmux.pydantic_ai"
_toolsets = _adapters.require("pydantic_ai.toolsets", "pydantic-ai-slim", _ADAPTER)
_tools = _adapters.require("pydantic_ai.tools", "pydantic-ai-slim", _ADAPTER)
_messages = _adapters.require("pydantic_ai.messages", "pydantic-ai-slim", _ADAPTER)
_exceptions = _adapters.require("pydantic_ai.exceptions", "pydantic-ai-slim", _ADAPTER)
_pydantic_core = _adapters.require("pydantic_core", "pydantic-ai-slim", _ADAPTER)

AbstractToolset = _toolsets.AbstractToolset
ToolsetTool = _toolsets.ToolsetTool

__all__ = ["HubToolset", "HubProgress"]

#: Refusals: the policy said no; the same call would be refused again.
_REFUSALS = frozenset({"TOOL_NOT_ALLOWED", "LIMIT_EXCEEDED"})

_ARGS_VALIDATOR = _pydantic_core.SchemaValidator(
    schema=_pydantic_core.core_schema.dict_schema(
        _pydantic_core.core_schema.str_schema(), _pydantic_core.core_schema.any_schema()
    )
)


@dataclasses.dataclass(kw_only=True)
class HubProgress(_messages.CustomEvent, name="mcpmux.progress"):  # type: ignore[misc, call-arg]
    """A progress notification of a hub tool call (``tool_call_id`` and
    ``tool_name`` are stamped by Pydantic AI)."""

    progress: float
    total: Optional[float] = None
    message: Optional[str] = None


class HubToolset(AbstractToolset):  # type: ignore[misc, valid-type]
    """The hub's tools for ``Agent(model, toolsets=[HubToolset(hub)])``;
    see the module. ``policy`` (from ``hub.policy()``): every call goes
    through it (allow list, refusal of destructive tools, redaction and
    capping, audit) and text output is framed as untrusted data.
    ``max_retries``: the retries of each tool (default: the agent's);
    ``id``: the toolset's id (default ``"mcpmux"``)."""

    def __init__(
        self,
        hub: AnyHub,
        *,
        policy: Optional[AnyPolicy] = None,
        id: Optional[str] = None,
        max_retries: Optional[int] = None,
    ) -> None:
        _adapters.check_hub(hub, _ADAPTER)
        _adapters.check_policy(policy, hub, _ADAPTER)
        self.hub = hub
        self.policy = policy
        self.max_retries = max_retries
        self._id = id
        self._async = _adapters.async_hub(hub)
        _adapters.callable_tools(hub, warn=True)

    @property
    def id(self) -> Optional[str]:
        return self._id if self._id is not None else "mcpmux"

    @property
    def _explicit_id(self) -> Optional[str]:
        return self._id

    @property
    def label(self) -> str:
        return f"mcpmux HubToolset {self.id!r}"

    async def get_tools(self, ctx: Any) -> Dict[str, Any]:
        """The tools the hub can call now."""
        retries = self.max_retries if self.max_retries is not None else ctx.max_retries
        found: Dict[str, Any] = {}
        for tool in _adapters.callable_tools(self.hub):
            tool_def = _tools.ToolDefinition(
                name=tool["name"],
                description=_adapters.description(tool),
                parameters_json_schema=_adapters.input_schema(tool),
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
            found[tool["name"]] = ToolsetTool(
                toolset=self, tool_def=tool_def, max_retries=retries, args_validator=_ARGS_VALIDATOR
            )
        return found

    async def call_tool(self, name: str, tool_args: Dict[str, Any], ctx: Any, tool: Any) -> Any:
        """Calls ``name`` through the hub (and the policy)."""
        loop = asyncio.get_running_loop()
        emitted: List["asyncio.Future[Any]"] = []

        def on_progress(progress: float, total: Optional[float], message: Optional[str]) -> None:
            event = HubProgress(progress=progress, total=total, message=message)
            emitted.append(loop.create_task(ctx.emit(event)))

        try:
            outcome = await _adapters.acall(self._async, name, tool_args, self.policy, on_progress)
        except BaseException:  # cancelled: the MCP request is cancelled; so are the events
            for task in emitted:
                task.cancel()
            raise
        if emitted:  # in order, before the result; a run without an event stream drops them
            await asyncio.gather(*emitted, return_exceptions=True)
        if outcome.is_error:
            if outcome.error is not None and outcome.error.code in _REFUSALS:
                raise _exceptions.ToolFailed(outcome.text)
            raise _exceptions.ModelRetry(outcome.text)
        return _messages.ToolReturn(return_value=outcome.text, metadata=outcome.result)

    def __repr__(self) -> str:
        return f"<mcpmux.pydantic_ai.HubToolset id={self.id!r}>"
