"""A well-behaved MCP peer written with the official Python SDK (FastMCP).

Run over stdio (after `bash tests/setup.sh`):

    .deps/venv/bin/python tests/servers/fastmcp_server.py

Tools:
  greet(name: str) -> str        text content "Hello, <name>!"; FastMCP also
                                 wraps it as structuredContent {"result": ...}
  add(a: int, b: int) -> int     structuredContent {"result": a + b}, with an
                                 outputSchema
  weather(city: str) -> Weather  structuredContent {"city", "temperature_c",
                                 "conditions"} (a Pydantic model), with an
                                 outputSchema; deterministic fake data
  boom() -> str                  always raises; FastMCP answers isError: true
                                 with the text "Error executing tool boom: ..."
Resource: info://server          text/plain description of this server
Prompt:   review(code: str)      one user message asking to review the code
"""

from mcp.server.fastmcp import FastMCP
from pydantic import BaseModel, Field

mcp = FastMCP("mcpmux-fastmcp-test", instructions="Test peer for the mcpmux test suite.")


class Weather(BaseModel):
    """Current weather for a city (fake, deterministic)."""

    city: str = Field(description="The city asked for")
    temperature_c: float = Field(description="Temperature in degrees Celsius")
    conditions: str = Field(description="Short description, e.g. 'Sunny'")


@mcp.tool()
def greet(name: str) -> str:
    """Greet someone by name."""
    return f"Hello, {name}!"


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@mcp.tool()
def weather(city: str) -> Weather:
    """Get the (fake) current weather for a city."""
    conditions = ["Sunny", "Cloudy", "Rainy", "Windy", "Snowy"]
    seed = sum(city.encode("utf-8"))
    return Weather(
        city=city,
        temperature_c=round(-5.0 + (seed % 400) / 10.0, 1),
        conditions=conditions[seed % len(conditions)],
    )


@mcp.tool()
def boom() -> str:
    """Always fails (the server turns the exception into an isError result)."""
    raise RuntimeError("boom: this tool always fails")


@mcp.resource("info://server", name="server-info", mime_type="text/plain")
def server_info() -> str:
    """Describes this test server."""
    return "mcpmux FastMCP test server: tools greet, add, weather, boom; prompt review."


@mcp.prompt()
def review(code: str) -> str:
    """Ask for a code review of the given code."""
    return f"Please review this code:\n\n{code}"


if __name__ == "__main__":
    mcp.run(transport="stdio")
