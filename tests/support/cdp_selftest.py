#!/usr/bin/env python3
"""Self-test of tests/support/cdp.py against the Chromium of tests/setup.sh.

Serves a tiny page from http.server on 127.0.0.1, then: navigates to it,
reads a paragraph's text, waits for a DOM change a setTimeout makes, checks
that extra HTTP headers and the viewport apply, that console errors and
uncaught exceptions land in page.errors, and that a screenshot is a PNG over
1 KB. Exits 0 on success, 1 with a message on failure. Bounded: a watchdog
ends the run after 90 s.

    python3 tests/support/cdp_selftest.py [path/to/run-chromium]
"""

from __future__ import annotations

import http.server
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cdp import Browser, CDPTimeout, JSError  # noqa: E402

#: Browsers to kill if the watchdog fires.
LAUNCHED: list[Browser] = []

PAGE = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>cdp selftest</title>
<style>body { font: 24px sans-serif; margin: 20px } #late { color: #06c }</style></head>
<body>
<p>hello from mcpmux</p>
<div id="late">waiting</div>
<script>
  setTimeout(() => { document.getElementById('late').textContent = 'changed'; }, 300);
</script>
</body></html>
"""

BROKEN = b"""<!doctype html><html><body><p>broken</p>
<script>console.error('deliberate console error'); undefinedFunction();</script>
</body></html>
"""


class Handler(http.server.BaseHTTPRequestHandler):
    """Serves PAGE at /, BROKEN at /broken, echoes X-Mcpmux-Test at /header."""

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        """Answers the three paths; 404 otherwise."""
        if self.path == "/":
            body, status = PAGE, 200
        elif self.path == "/broken":
            body, status = BROKEN, 200
        elif self.path == "/header":
            value = self.headers.get("X-Mcpmux-Test", "none")
            body, status = f"<p id='h'>{value}</p>".encode(), 200
        else:
            body, status = b"not found", 404
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        """Quiet."""


def check(condition: bool, what: str) -> None:
    """Raises AssertionError with ``what`` unless ``condition``."""
    if not condition:
        raise AssertionError(what)


def run(binary: str | None) -> None:
    """The test proper; raises on the first failure."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    started = time.monotonic()
    try:
        with Browser.launch(binary) as browser:
            LAUNCHED.append(browser)
            print(f"launched {browser.version.get('product')} in {time.monotonic() - started:.2f} s")
            page = browser.new_page()
            page.set_viewport(800, 600)

            status = page.goto(base + "/", timeout=15)
            check(status == 200, f"status of / is {status}")
            text = page.evaluate("document.querySelector('p').textContent")
            check(text == "hello from mcpmux", f"paragraph text is {text!r}")
            check(page.evaluate("innerWidth") == 800, "viewport width not applied")
            check(page.evaluate("Promise.resolve(6 * 7)") == 42, "promise not awaited")
            late = page.wait_for(
                "document.getElementById('late').textContent === 'changed' && "
                "document.getElementById('late').textContent",
                timeout=5,
            )
            check(late == "changed", f"wait_for returned {late!r}")

            with tempfile.TemporaryDirectory(prefix="mcpmux-cdp-selftest-") as tmp:
                shot = Path(tmp, "page.png")
                data = page.screenshot(shot)
                check(shot.read_bytes() == data, "screenshot file differs from the returned bytes")
                check(data[:8] == b"\x89PNG\r\n\x1a\n", "screenshot is not a PNG")
                check(len(data) > 1024, f"screenshot is only {len(data)} bytes")
                print(f"screenshot: {len(data)} bytes PNG")
            check(page.errors == [], f"errors on a clean page: {page.errors}")

            try:
                page.evaluate("null.x")
            except JSError as e:
                check("TypeError" in str(e), f"unexpected JSError text: {e}")
            else:
                raise AssertionError("evaluate of a throwing expression did not raise")
            try:
                page.wait_for("false", timeout=0.3)
            except CDPTimeout:
                pass
            else:
                raise AssertionError("wait_for('false') did not time out")

            page.set_extra_headers({"X-Mcpmux-Test": "yes"})
            page.goto(base + "/header")
            check(page.evaluate("document.getElementById('h').textContent") == "yes",
                  "extra HTTP header not sent")

            page.goto(base + "/broken")
            page.wait_for("document.readyState === 'complete'", timeout=5)
            deadline = time.monotonic() + 5
            while len(page.errors) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            joined = "\n".join(page.errors)
            check("deliberate console error" in joined and "undefinedFunction" in joined,
                  f"console error / exception not collected: {page.errors}")
            print(f"collected errors: {page.errors}")
            page.close()
        check(not browser.alive, "browser still alive after close")
    finally:
        server.shutdown()
        server.server_close()
    print(f"cdp selftest passed in {time.monotonic() - started:.2f} s")


def main() -> int:
    """Runs the test under a watchdog; returns the exit status."""
    binary = sys.argv[1] if len(sys.argv) > 1 else None

    def expire() -> None:
        print("cdp selftest FAILED: watchdog: over 90 s", file=sys.stderr)
        for browser in LAUNCHED:
            browser.kill()
        os._exit(2)

    watchdog = threading.Timer(90, expire)
    watchdog.daemon = True
    watchdog.start()
    try:
        run(binary)
    except Exception as e:  # report any failure as one line plus the type
        print(f"cdp selftest FAILED: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    finally:
        watchdog.cancel()
    return 0


if __name__ == "__main__":
    sys.exit(main())
