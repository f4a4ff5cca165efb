#!/usr/bin/env python3
"""Conformance fixture server: what the official suite's server scenarios
(`conformance server --url ...`) expect of the server under test, served over
Streamable HTTP at http://127.0.0.1:PORT/mcp with the official Python SDK
(FastMCP, mcp 1.30.0).

tests/conformance/gateway.sh runs the suite against this server directly and
then through `mcpmux gateway --http ... --no-prefix` fronting it, and compares
the two. The names and payloads below are the ones the suite's scenario
descriptions give (tools `test_*`, resources `test://...`, prompts
`test_*_prompt...`); what each returns is only as specific as the suite's
checks need.

Usage: fixture_server.py --port PORT   (0 is not accepted: the caller picks a
free port and polls it until it answers).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import logging

from mcp.server.fastmcp import Context, FastMCP
from mcp.server.fastmcp.prompts.base import UserMessage
from mcp.server.fastmcp.tools import Tool
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp.types import (
    AudioContent,
    Completion,
    CompletionArgument,
    CompletionContext,
    EmbeddedResource,
    ImageContent,
    JSONRPCMessage,
    PromptReference,
    ResourceTemplateReference,
    SamplingMessage,
    ServerCapabilities,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)

# A 1x1 PNG and a header-only WAV: the smallest valid payloads of each kind.
PNG_1X1 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
WAV_EMPTY = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA="
# Every tool here only reads: saying so lets a policy that requires the hint
# (mcpmux's confirm_read_only rule) offer them under allow_all.
READ_ONLY = ToolAnnotations(readOnlyHint=True)

# The tool the json-schema-2020-12 scenario lists: its inputSchema must reach
# the client with every 2020-12 keyword intact ($schema, $defs with an
# $anchor, allOf/anyOf, if/then/else, additionalProperties).
JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


class MemoryEventStore(EventStore):
    """Keeps every SSE event so that a client reconnecting with
    Last-Event-ID gets what it missed; the SDK only closes a request's stream
    early (server-sse-polling's test_reconnection) when it has one."""

    def __init__(self) -> None:
        self._events: list[tuple[str, str, JSONRPCMessage | None]] = []

    async def store_event(self, stream_id: str, message: JSONRPCMessage | None) -> str:
        event_id = str(len(self._events) + 1)
        self._events.append((stream_id, event_id, message))
        return event_id

    async def replay_events_after(self, last_event_id: str, send_callback: EventCallback) -> str | None:
        stream = next((s for s, e, _ in self._events if e == last_event_id), None)
        if stream is None:
            return None
        after = int(last_event_id)
        for s, e, message in self._events:
            # A None message is the stream's priming event: nothing to replay.
            if s == stream and int(e) > after and message is not None:
                await send_callback(EventMessage(message, e))
        return stream


def build(port: int) -> FastMCP:
    """The server, every scenario's tools, resources and prompts registered."""
    mcp = FastMCP(
        name="mcpmux-conformance-fixture",
        host="127.0.0.1",
        port=port,
        event_store=MemoryEventStore(),
        # Short, so that the polling scenario's reconnect comes quickly.
        retry_interval=100,
        log_level="WARNING",
    )
    subscriptions: set[str] = set()

    @mcp.tool(annotations=READ_ONLY)
    def test_simple_text() -> str:
        """Returns one text block."""
        return "This is a simple text response for testing."

    @mcp.tool(annotations=READ_ONLY)
    def test_image_content() -> list[ImageContent]:
        """Returns one PNG image block."""
        return [ImageContent(type="image", data=PNG_1X1, mimeType="image/png")]

    @mcp.tool(annotations=READ_ONLY)
    def test_audio_content() -> list[AudioContent]:
        """Returns one WAV audio block."""
        return [AudioContent(type="audio", data=WAV_EMPTY, mimeType="audio/wav")]

    @mcp.tool(annotations=READ_ONLY)
    def test_embedded_resource() -> list[EmbeddedResource]:
        """Returns one embedded text resource."""
        return [
            EmbeddedResource(
                type="resource",
                resource=TextResourceContents(
                    uri="test://embedded-resource",
                    mimeType="text/plain",
                    text="This is an embedded resource content.",
                ),
            )
        ]

    @mcp.tool(annotations=READ_ONLY)
    def test_multiple_content_types() -> list[TextContent | ImageContent | EmbeddedResource]:
        """Returns a text, an image and an embedded resource block."""
        return [
            TextContent(type="text", text="Multiple content types test:"),
            ImageContent(type="image", data=PNG_1X1, mimeType="image/png"),
            EmbeddedResource(
                type="resource",
                resource=TextResourceContents(
                    uri="test://mixed-content-resource",
                    mimeType="application/json",
                    text='{"test":"data","value":123}',
                ),
            ),
        ]

    @mcp.tool(annotations=READ_ONLY)
    async def test_tool_with_logging(ctx: Context) -> str:
        """Sends three info log messages while it runs."""
        await ctx.info("Tool execution started")
        await asyncio.sleep(0.05)
        await ctx.info("Tool processing data")
        await asyncio.sleep(0.05)
        await ctx.info("Tool execution completed")
        return "Tool with logging executed successfully"

    @mcp.tool(annotations=READ_ONLY)
    async def test_tool_with_progress(ctx: Context) -> str:
        """Reports progress 0, 50 and 100 of 100 to the request's progressToken."""
        for step in (0, 50, 100):
            await ctx.report_progress(progress=step, total=100, message=f"step {step} of 100")
            if step < 100:
                await asyncio.sleep(0.05)
        meta = ctx.request_context.meta
        return str(meta.progressToken if meta and meta.progressToken is not None else "")

    @mcp.tool(annotations=READ_ONLY)
    def test_error_handling() -> str:
        """Always fails: the SDK turns the exception into an isError result."""
        raise RuntimeError("This tool intentionally returns an error for testing")

    @mcp.tool(annotations=READ_ONLY)
    async def test_sampling(prompt: str, ctx: Context) -> str:
        """Asks the client's model (sampling/createMessage) and returns its answer."""
        result = await ctx.session.create_message(
            messages=[SamplingMessage(role="user", content=TextContent(type="text", text=prompt))],
            max_tokens=100,
            related_request_id=ctx.request_id,
        )
        text = result.content.text if isinstance(result.content, TextContent) else "(no text)"
        return f"LLM response: {text}"

    async def elicit(ctx: Context, message: str, schema: dict, label: str) -> str:
        # Raw schemas, so that the client gets exactly what the scenario
        # checks (defaults, enum shapes), not what a model class derives.
        result = await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)
        return f"{label}: action={result.action}, content={json.dumps(result.content or {})}"

    @mcp.tool(annotations=READ_ONLY)
    async def test_elicitation(message: str, ctx: Context) -> str:
        """Asks the user (elicitation/create) for a username and an email."""
        schema = {
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            },
            "required": ["username", "email"],
        }
        return await elicit(ctx, message, schema, "User response")

    @mcp.tool(annotations=READ_ONLY)
    async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
        """Elicitation whose schema has a default for every primitive type (SEP-1034)."""
        schema = {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "User name", "default": "John Doe"},
                "age": {"type": "integer", "description": "User age", "default": 30},
                "score": {"type": "number", "description": "User score", "default": 95.5},
                "status": {
                    "type": "string",
                    "description": "User status",
                    "enum": ["active", "inactive", "pending"],
                    "default": "active",
                },
                "verified": {"type": "boolean", "description": "Verified", "default": True},
            },
        }
        return await elicit(ctx, "Please provide user information", schema, "Elicitation completed")

    @mcp.tool(annotations=READ_ONLY)
    async def test_elicitation_sep1330_enums(ctx: Context) -> str:
        """Elicitation with the five enum shapes of SEP-1330."""
        schema = {
            "type": "object",
            "properties": {
                "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                "titledSingle": {
                    "type": "string",
                    "oneOf": [
                        {"const": "value1", "title": "First Option"},
                        {"const": "value2", "title": "Second Option"},
                        {"const": "value3", "title": "Third Option"},
                    ],
                },
                "legacyEnum": {
                    "type": "string",
                    "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"],
                },
                "untitledMulti": {
                    "type": "array",
                    "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
                },
                "titledMulti": {
                    "type": "array",
                    "items": {
                        "anyOf": [
                            {"const": "value1", "title": "First Choice"},
                            {"const": "value2", "title": "Second Choice"},
                            {"const": "value3", "title": "Third Choice"},
                        ]
                    },
                },
            },
        }
        return await elicit(ctx, "Please select options", schema, "Elicitation completed")

    @mcp.tool(annotations=READ_ONLY)
    async def test_reconnection(ctx: Context) -> str:
        """Closes its own SSE stream mid-call; the client reconnects and gets the rest (SEP-1699)."""
        await ctx.info("Before disconnect")
        await ctx.close_sse_stream()
        await asyncio.sleep(0.2)
        await ctx.info("After reconnect")
        return "Reconnection test completed"

    def json_schema_tool() -> str:
        return "ok"

    # FastMCP derives a tool's inputSchema from its signature; this one must
    # be listed with the scenario's schema verbatim.
    tool = Tool.from_function(
        json_schema_tool,
        name="json_schema_2020_12_tool",
        description="Tool with JSON Schema 2020-12 features",
        annotations=READ_ONLY,
    )
    tool.parameters = JSON_SCHEMA_2020_12
    mcp._tool_manager._tools[tool.name] = tool  # noqa: SLF001 (no public API takes a raw schema)

    @mcp.resource("test://static-text", mime_type="text/plain")
    def static_text() -> str:
        """A static text resource."""
        return "This is the content of the static text resource."

    @mcp.resource("test://static-binary", mime_type="image/png")
    def static_binary() -> bytes:
        """A static binary resource (a PNG)."""
        return base64.b64decode(PNG_1X1)

    @mcp.resource("test://template/{id}/data", mime_type="application/json")
    def template_data(id: str) -> str:  # noqa: A002 (the template's parameter name)
        """A template: {id} is substituted into the content."""
        return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})

    @mcp.resource("test://watched-resource", mime_type="text/plain")
    def watched() -> str:
        """A resource clients can subscribe to."""
        return "Watched resource content"

    @mcp.prompt()
    def test_simple_prompt() -> list[UserMessage]:
        """A prompt without arguments."""
        return [UserMessage(content=TextContent(type="text", text="This is a simple prompt for testing."))]

    @mcp.prompt()
    def test_prompt_with_arguments(arg1: str, arg2: str) -> list[UserMessage]:
        """A prompt whose two arguments are substituted into its text."""
        return [
            UserMessage(
                content=TextContent(type="text", text=f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")
            )
        ]

    @mcp.prompt()
    def test_prompt_with_embedded_resource(resourceUri: str) -> list[UserMessage]:  # noqa: N803
        """A prompt that embeds the resource its argument names."""
        return [
            UserMessage(
                content=EmbeddedResource(
                    type="resource",
                    resource=TextResourceContents(
                        uri=resourceUri, mimeType="text/plain", text="Embedded resource content for testing."
                    ),
                )
            ),
            UserMessage(content=TextContent(type="text", text="Please process the embedded resource above.")),
        ]

    @mcp.prompt()
    def test_prompt_with_image() -> list[UserMessage]:
        """A prompt with an image."""
        return [
            UserMessage(content=ImageContent(type="image", data=PNG_1X1, mimeType="image/png")),
            UserMessage(content=TextContent(type="text", text="Please analyze the image above.")),
        ]

    @mcp.completion()
    async def complete(
        ref: PromptReference | ResourceTemplateReference,
        argument: CompletionArgument,
        context: CompletionContext | None,
    ) -> Completion:
        # Any argument completes to values that start with what was typed.
        values = [v for v in ("alpha", "beta", "gamma") if v.startswith(argument.value)]
        return Completion(values=values, total=len(values), hasMore=False)

    lowlevel = mcp._mcp_server  # noqa: SLF001 (FastMCP has no public hooks for these)

    @lowlevel.set_logging_level()
    async def set_level(level: str) -> None:
        # The SDK answers {}; the level itself only matters to real loggers.
        logging.getLogger(__name__).info("log level %s", level)

    @lowlevel.subscribe_resource()
    async def subscribe(uri: object) -> None:
        subscriptions.add(str(uri))

    @lowlevel.unsubscribe_resource()
    async def unsubscribe(uri: object) -> None:
        subscriptions.discard(str(uri))

    # The SDK always declares resources.subscribe = false, even with the
    # handlers above; a client that honours capabilities (the gateway does)
    # would then never subscribe.
    declared = lowlevel.get_capabilities

    def get_capabilities(*args: object, **kwargs: object) -> ServerCapabilities:
        capabilities = declared(*args, **kwargs)
        if capabilities.resources is not None:
            capabilities.resources.subscribe = True
        return capabilities

    lowlevel.get_capabilities = get_capabilities

    return mcp


def main() -> None:
    """Parses --port and serves until killed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    port = parser.parse_args().port
    if not 0 < port < 65536:
        parser.error("--port must be 1..65535")
    build(port).run(transport="streamable-http")


if __name__ == "__main__":
    main()
