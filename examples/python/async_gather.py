"""Many calls at once with asyncio, and cancelling one (asyncio API).

    python examples/python/async_gather.py
"""

import asyncio
import os
import time
from pathlib import Path

import mcpmux

ROOT = Path(__file__).resolve().parents[2]
DEMO = os.environ.get("MCPMUX_DEMO_SERVER", str(ROOT / "target" / "debug" / "mcpmux-demo-server"))


async def main() -> None:
    async with mcpmux.AsyncHub.connect({"mcpServers": {"demo": {"command": DEMO}}}) as hub:
        start = time.perf_counter()
        results = await asyncio.gather(
            *(hub.call_tool("mcp_demo_echo", {"text": f"call {i}"}) for i in range(500))
        )
        elapsed = time.perf_counter() - start
        print(f"{len(results)} calls in {elapsed * 1000:.0f} ms; last: {results[-1]['content'][0]['text']}")

        # Cancelling the awaiting task cancels the request on the server.
        slow = asyncio.ensure_future(hub.call_tool("mcp_demo_slow", {"seconds": 30}))
        await asyncio.sleep(0.1)
        slow.cancel()
        try:
            await slow
        except asyncio.CancelledError:
            print("slow call cancelled")

        # asyncio.wait_for works the same way.
        try:
            await asyncio.wait_for(hub.call_tool("mcp_demo_slow", {"seconds": 30}), 0.2)
        except asyncio.TimeoutError:
            print("slow call timed out and was cancelled")


asyncio.run(main())
