"""A hub as an MCP server of the OpenAI Agents SDK.

>>> from agents import Agent, Runner                          # doctest: +SKIP
>>> agent = Agent(name="a", mcp_servers=[mcpmux.openai_agents.HubServer(hub)])

:class:`HubServer` is an ``agents.mcp.MCPServer`` whose tools are the
tools the hub can call (a failed server's tools are left out), named as
the hub names them (``mcp_{server}_{tool}``). The SDK reads the list at
every turn, so it follows ``tools_changed``. Calls run on the event loop
(a blocking :class:`~mcpmux.Hub` is called through an asyncio view of the
same servers); cancelling the run's task cancels the MCP request.

A refused call (``TOOL_NOT_ALLOWED``, ``LIMIT_EXCEEDED``) or an engine
failure (``TIMEOUT`` ...) comes back as an ``isError`` result whose text
starts with the code, like a tool's own ``isError`` result: the SDK hands
its text to the model (its default error handler, used for exceptions,
would hide it), and the run goes on. The SDK has no place for progress.

``connect()`` and ``cleanup()`` do nothing: the hub belongs to the caller,
who closes it. Needs ``openai-agents`` (``pip install openai-agents``);
``import mcpmux`` never imports it.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from . import _adapters
from ._adapters import AnyHub, AnyPolicy

_ADAPTER = "mcpmux.openai_agents"
_agents_mcp = _adapters.require("agents.mcp", "openai-agents", _ADAPTER)
_mcp_types = _adapters.require("mcp.types", "openai-agents", _ADAPTER)

MCPServer = _agents_mcp.MCPServer

__all__ = ["HubServer"]


def _mcp_tool(tool: Dict[str, Any]) -> Any:
    fields: Dict[str, Any] = {
        "name": tool["name"],
        "description": _adapters.description(tool),
        "inputSchema": _adapters.input_schema(tool),
    }
    if tool.get("title"):
        fields["title"] = tool["title"]
    if tool.get("output_schema"):
        fields["outputSchema"] = tool["output_schema"]
    if tool.get("annotations"):
        fields["annotations"] = tool["annotations"]
    return _mcp_types.Tool.model_validate(fields)


class HubServer(MCPServer):  # type: ignore[misc, valid-type]
    """The hub's tools for ``Agent(mcp_servers=[HubServer(hub)])``; see
    the module. ``policy`` (from ``hub.policy()``): every call goes through
    it (allow list, refusal of destructive tools, redaction and capping,
    audit) and text output is framed as untrusted data. Other keyword
    arguments go to ``MCPServer`` (``require_approval``,
    ``use_structured_content``, ...)."""

    def __init__(
        self,
        hub: AnyHub,
        *,
        name: str = "mcpmux",
        policy: Optional[AnyPolicy] = None,
        **kwargs: Any,
    ) -> None:
        _adapters.check_hub(hub, _ADAPTER)
        _adapters.check_policy(policy, hub, _ADAPTER)
        super().__init__(**kwargs)
        self.hub = hub
        self.policy = policy
        self._name = name
        self._async = _adapters.async_hub(hub)
        self._cached: Optional[List[Any]] = None
        _adapters.callable_tools(hub, warn=True)

    @property
    def name(self) -> str:
        return self._name

    async def connect(self) -> None:
        """Nothing to do: the hub is connected."""

    async def cleanup(self) -> None:
        """Nothing to do: the hub belongs to the caller."""

    async def __aenter__(self) -> "HubServer":
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        pass

    async def list_tools(self, run_context: Any = None, agent: Any = None) -> List[Any]:
        """The tools the hub can call now (as ``mcp.types.Tool``)."""
        tools = [_mcp_tool(t) for t in _adapters.callable_tools(self.hub)]
        self._cached = tools
        return tools

    @property
    def cached_tools(self) -> Optional[List[Any]]:
        return self._cached

    async def call_tool(
        self, tool_name: str, arguments: Optional[Dict[str, Any]], meta: Optional[Dict[str, Any]] = None
    ) -> Any:
        """Calls ``tool_name`` (its hub name) through the hub (and the
        policy); returns an ``mcp.types.CallToolResult``, with ``isError``
        for a tool error, a refusal or a failure."""
        outcome = await _adapters.acall(self._async, tool_name, arguments, self.policy)
        result = dict(outcome.model_result)
        if outcome.is_error:
            result["isError"] = True
        return _mcp_types.CallToolResult.model_validate(result)

    async def list_prompts(self) -> Any:
        prompts = await self._async.list_prompts()
        return _mcp_types.ListPromptsResult.model_validate(
            {"prompts": [{k: v for k, v in p.items() if k != "server"} for p in prompts]}
        )

    async def get_prompt(self, name: str, arguments: Optional[Dict[str, Any]] = None) -> Any:
        return _mcp_types.GetPromptResult.model_validate(await self._async.get_prompt(name, arguments))

    async def list_resources(self, cursor: Optional[str] = None) -> Any:
        resources = await self._async.list_resources()
        return _mcp_types.ListResourcesResult.model_validate(
            {"resources": [{k: v for k, v in r.items() if k != "server"} for r in resources]}
        )

    async def list_resource_templates(self, cursor: Optional[str] = None) -> Any:
        templates = await self._async.list_resource_templates()
        return _mcp_types.ListResourceTemplatesResult.model_validate(
            {"resourceTemplates": [{k: v for k, v in r.items() if k != "server"} for r in templates]}
        )

    async def read_resource(self, uri: str) -> Any:
        return _mcp_types.ReadResourceResult.model_validate(await self._async.read_resource(str(uri)))

    def __repr__(self) -> str:
        return f"<mcpmux.openai_agents.HubServer name={self._name!r}>"
