"""Results checked against the tool's ``outputSchema`` from Python: the
demo server's ``add`` with ``DEMO_ADD_OUTPUT`` breaks its own schema, and
``validate_output`` chooses what that becomes (``"error"``, the default,
raises :class:`mcpmux.OutputInvalid` naming the tool and the path)."""

from __future__ import annotations

import asyncio

import pytest

import mcpmux
from conftest import config, demo

ARGS = {"a": 2, "b": 3}


def bad(mode: str = "wrong_type") -> dict:
    return config(demo=demo(env={"DEMO_ADD_OUTPUT": mode}))


def test_a_violation_raises_output_invalid_and_warn_or_off_return_the_result() -> None:
    with mcpmux.Hub.connect(bad()) as hub:
        with pytest.raises(mcpmux.OutputInvalid, match=r"tool 'add'.*'/sum'") as e:
            hub.call_tool("mcp_demo_add", ARGS)
        assert e.value.code == "OUTPUT_INVALID"
        for mode in ("warn", "off"):
            result = hub.call_tool("mcp_demo_add", ARGS, validate_output=mode)
            assert result["structuredContent"] == {"sum": "5"}, result
        with pytest.raises(mcpmux.InvalidInput, match="'validate_output'"):
            hub.call_tool("mcp_demo_add", ARGS, validate_output="loud")
    with mcpmux.Hub.connect(bad("missing")) as hub:
        with pytest.raises(mcpmux.OutputInvalid, match="no structuredContent"):
            hub.call_tool("mcp_demo_add", ARGS)


def test_async_calls_check_too() -> None:
    async def main() -> None:
        async with mcpmux.AsyncHub.connect(bad()) as hub:
            with pytest.raises(mcpmux.OutputInvalid, match="'/sum'"):
                await hub.call_tool("mcp_demo_add", ARGS)
            result = await hub.call_tool("mcp_demo_add", ARGS, validate_output="off")
            assert result["structuredContent"] == {"sum": "5"}, result

    asyncio.run(main())
