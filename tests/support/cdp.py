"""A small Chrome DevTools Protocol driver for headless Chromium (stdlib only).

The browser is Debian's chromium that ``tests/setup.sh`` unpacks into
``.deps/chromium`` and runs through ``.deps/chromium/run-chromium``. It is
driven over ``--remote-debugging-pipe``: Chromium reads commands from its fd 3
and writes responses and events to its fd 4, each message one JSON text
followed by a NUL byte. No port, no websocket.

    from cdp import Browser

    with Browser.launch() as browser:
        page = browser.new_page()
        page.set_viewport(1280, 800)
        page.goto("http://127.0.0.1:8080/")
        assert page.evaluate("document.title") == "mcpmux"
        page.wait_for("document.querySelector('#ready')", timeout=5)
        page.screenshot("/tmp/shot.png")
        assert page.errors == []

Every wait is bounded (``timeout`` in seconds) and raises :class:`CDPTimeout`
with what it was waiting for. A reader thread dispatches responses by id and
events by session id. Leaving the ``with`` block (or :meth:`Browser.close`)
ends the whole process group of the browser and removes its temporary
profile; a finalizer does the same if a Browser is dropped unclosed.
"""

from __future__ import annotations

import base64
import collections
import fcntl
import itertools
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from pathlib import Path
from typing import Any, Callable, Iterable

__all__ = [
    "Browser",
    "Page",
    "CDPError",
    "CDPTimeout",
    "JSError",
    "BrowserExited",
    "DEFAULT_BINARY",
    "DEFAULT_ARGS",
]

#: ``.deps/chromium/run-chromium`` of this checkout (written by tests/setup.sh);
#: the environment variable ``MCPMUX_CHROMIUM`` overrides it.
DEFAULT_BINARY = Path(
    os.environ.get(
        "MCPMUX_CHROMIUM",
        Path(__file__).resolve().parents[2] / ".deps" / "chromium" / "run-chromium",
    )
)

#: Flags every launch passes (before ``extra_args``; a later flag wins).
#: ``--no-sandbox`` because the tests run as root in containers;
#: ``--disable-dev-shm-usage`` because containers often have a 64 MB /dev/shm;
#: ``--hide-scrollbars`` for stable screenshots.
DEFAULT_ARGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-sync",
    "--disable-breakpad",
    "--disable-features=Translate,MediaRouter,OptimizationHints",
    "--password-store=basic",
    "--mute-audio",
    "--hide-scrollbars",
)

_STDERR_TAIL_LINES = 15

# Runs in the child: fds argv[1], argv[2] onto 3 and 4, then exec argv[3:].
_TRAMPOLINE = (
    "import os, sys\n"
    "r, w = int(sys.argv[1]), int(sys.argv[2])\n"
    "os.dup2(r, 3)\n"
    "os.dup2(w, 4)\n"
    "os.close(r)\n"
    "os.close(w)\n"
    "os.execv(sys.argv[3], sys.argv[3:])\n"
)


class CDPError(RuntimeError):
    """A DevTools command failed, or the browser could not be driven."""


class CDPTimeout(CDPError, TimeoutError):
    """A bounded wait ran out; the message says what was awaited."""


class BrowserExited(CDPError):
    """The browser process went away (or closed its pipe) while in use."""


class JSError(CDPError):
    """JavaScript evaluated by :meth:`Page.evaluate` threw.

    ``details`` holds the protocol's ``exceptionDetails`` object.
    """

    def __init__(self, message: str, details: dict[str, Any]):
        """``message`` for humans, ``details`` as the protocol sent it."""
        super().__init__(message)
        self.details = details


class _Pending:
    """One command awaiting its response."""

    __slots__ = ("method", "session_id", "done", "result", "error")

    def __init__(self, method: str, session_id: str | None):
        self.method = method
        self.session_id = session_id
        self.done = threading.Event()
        self.result: dict[str, Any] | None = None
        self.error: BaseException | None = None


def _group_alive(pgid: int) -> bool:
    """Whether a process of group ``pgid`` is still running (zombies do not count).

    Exited helpers of the browser are reparented to PID 1, which in a
    container may reap them late or never; ``kill(-pgid, 0)`` would still
    succeed for them.
    """
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parens.
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) >= 3 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False


def _stragglers(tmpdir: str) -> list[int]:
    """Running processes whose command line names ``tmpdir``.

    Chromium's crashpad handlers leave the browser's process group (they
    daemonize); their ``--database`` lies in the temporary HOME that
    run-chromium gets, so they are found by that path.
    """
    needle = tmpdir.encode()
    found = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        state = stat[stat.rfind(b")") + 2:].split()[:1]
        if needle in cmdline and state not in ([b"Z"], [b"X"]):
            found.append(int(entry))
    return found


def _kill_group(proc: subprocess.Popen, pgid: int, tmpdir: str | None) -> None:
    """Ends the browser's process group and removes its temporary folder.

    Module-level so that the finalizer holds no reference to the Browser.
    Processes that left the group but name the temporary folder (crashpad
    handlers) get a second to exit on their own, then SIGKILL.
    """
    for sig, grace in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 5.0)):
        if not _group_alive(pgid):
            break
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            break
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and _group_alive(pgid):
            time.sleep(0.05)
    try:
        proc.wait(timeout=1)
    except subprocess.TimeoutExpired:
        pass
    if tmpdir:
        deadline = time.monotonic() + 1.0
        while (left := _stragglers(tmpdir)) and time.monotonic() < deadline:
            time.sleep(0.05)
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        shutil.rmtree(tmpdir, ignore_errors=True)


def _describe_exception(details: dict[str, Any]) -> str:
    """One line for a protocol ``exceptionDetails`` object."""
    exc = details.get("exception") or {}
    if exc.get("description"):  # "TypeError: ...\n    at ..." with its stack
        return exc["description"]
    text = exc.get("value") or details.get("text") or "exception"
    where = details.get("url") or ""
    if where:
        where = f" ({where}:{details.get('lineNumber', 0) + 1}:{details.get('columnNumber', 0) + 1})"
    return f"{text}{where}"


class Browser:
    """A running headless Chromium, driven over ``--remote-debugging-pipe``.

    Create one with :meth:`Browser.launch`; use it as a context manager so that
    the browser's process group is ended and its profile removed on exit.
    """

    def __init__(self, proc: subprocess.Popen, cmd_fd: int, event_fd: int, tmpdir: str, log_path: Path):
        """Internal: use :meth:`Browser.launch`."""
        self._proc = proc
        self._pgid = proc.pid  # start_new_session: the child leads its group
        self._cmd_fd = cmd_fd
        self._event_fd = event_fd
        self._tmpdir = tmpdir
        self.log_path = log_path
        """File with the browser's stdout and stderr (inside the temporary folder)."""
        self.version: dict[str, Any] = {}
        """``Browser.getVersion`` of the running browser (product, revision, userAgent, ...)."""
        self._ids = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self._pages: dict[str, Page] = {}
        self._cond = threading.Condition()
        self._write_lock = threading.Lock()
        self._closed = False
        self._exit_reason: str | None = None
        self._finalizer = weakref.finalize(self, _kill_group, proc, self._pgid, tmpdir)
        self._reader = threading.Thread(target=self._read_loop, name=f"cdp-reader-{proc.pid}", daemon=True)
        self._reader.start()

    # ------------------------------------------------------------------ launch
    @classmethod
    def launch(
        cls,
        binary: str | os.PathLike[str] | None = None,
        extra_args: Iterable[str] = (),
        *,
        timeout: float = 30.0,
        env: dict[str, str] | None = None,
    ) -> "Browser":
        """Starts Chromium and returns once it answers a first command.

        ``binary`` defaults to :data:`DEFAULT_BINARY` (``run-chromium``, which
        sets the library path, fonts and XDG dirs); any Chromium executable
        works. Flags are :data:`DEFAULT_ARGS`, ``--remote-debugging-pipe``,
        a fresh ``--user-data-dir`` in a temporary folder, then
        ``extra_args``. ``env`` is added to this process's environment;
        ``MCPMUX_CHROMIUM_HOME`` (HOME and XDG dirs of ``run-chromium``) is
        set to the temporary folder too. Raises :class:`CDPError` when the
        binary is missing and :class:`CDPTimeout` / :class:`BrowserExited`
        when it does not come up within ``timeout`` seconds.
        """
        binary = Path(binary) if binary is not None else DEFAULT_BINARY
        if not os.access(binary, os.X_OK):
            raise CDPError(f"no executable Chromium at {binary} (run tests/setup.sh)")
        tmpdir = tempfile.mkdtemp(prefix="mcpmux-cdp-")
        profile = Path(tmpdir, "profile")
        home = Path(tmpdir, "home")
        profile.mkdir()
        home.mkdir()
        log_path = Path(tmpdir, "chromium.log")
        args = [
            *DEFAULT_ARGS,
            "--remote-debugging-pipe",
            f"--user-data-dir={profile}",
            *extra_args,
            "about:blank",
        ]
        child_env = dict(os.environ)
        child_env["MCPMUX_CHROMIUM_HOME"] = str(home)
        if env:
            child_env.update(env)

        # Two pipes: Chromium reads commands on its fd 3, writes on its fd 4.
        # The child ends are moved to fds >= 10 so that a tiny Python
        # trampoline can dup them onto 3 and 4 without clobbering, then exec
        # the browser (no preexec_fn, which is unsafe with threads; dash
        # cannot redirect fds above 9).
        cmd_r, cmd_w = os.pipe()
        ev_r, ev_w = os.pipe()
        child_r = fcntl.fcntl(cmd_r, fcntl.F_DUPFD_CLOEXEC, 10)
        child_w = fcntl.fcntl(ev_w, fcntl.F_DUPFD_CLOEXEC, 10)
        for fd in (cmd_r, ev_w):
            os.close(fd)
        log_file = open(log_path, "wb")
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _TRAMPOLINE, str(child_r), str(child_w), str(binary), *args],
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                pass_fds=(child_r, child_w),
                start_new_session=True,
                env=child_env,
            )
        except BaseException:
            for fd in (child_r, child_w, cmd_w, ev_r):
                os.close(fd)
            shutil.rmtree(tmpdir, ignore_errors=True)
            raise
        finally:
            log_file.close()
        os.close(child_r)
        os.close(child_w)
        os.set_blocking(cmd_w, False)
        browser = cls(proc, cmd_w, ev_r, tmpdir, log_path)
        try:
            browser.version = browser.send("Browser.getVersion", timeout=timeout)
        except CDPError as e:
            browser.close()
            raise type(e)(f"launching {binary}: {e}") from e
        except BaseException:
            browser.close()
            raise
        return browser

    # ------------------------------------------------------------------ context manager
    def __enter__(self) -> "Browser":
        """Returns the browser itself."""
        return self

    def __exit__(self, *exc_info: object) -> None:
        """Closes the browser (see :meth:`close`)."""
        self.close()

    # ------------------------------------------------------------------ public API
    @property
    def pid(self) -> int:
        """Process id of the launched process (the leader of its group)."""
        return self._proc.pid

    @property
    def alive(self) -> bool:
        """Whether the browser is still running and its pipe open."""
        return not self._closed and self._exit_reason is None and self._proc.poll() is None

    def stderr_tail(self, lines: int = _STDERR_TAIL_LINES) -> str:
        """The last ``lines`` lines the browser wrote to stdout/stderr."""
        try:
            data = self.log_path.read_bytes()
        except OSError:
            return ""
        return "\n".join(data.decode("utf-8", "replace").splitlines()[-lines:])

    def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        session_id: str | None = None,
        timeout: float = 10.0,
    ) -> dict[str, Any]:
        """Sends one DevTools command and returns its ``result`` object.

        ``session_id`` routes it to an attached target (see :class:`Page`).
        Raises :class:`CDPError` with the protocol's message on an error
        response, :class:`CDPTimeout` after ``timeout`` seconds without a
        response and :class:`BrowserExited` if the browser goes away.
        """
        deadline = time.monotonic() + timeout
        msg_id = next(self._ids)
        message: dict[str, Any] = {"id": msg_id, "method": method, "params": params or {}}
        if session_id is not None:
            message["sessionId"] = session_id
        pending = _Pending(method, session_id)
        with self._cond:
            self._check_usable(method)
            self._pending[msg_id] = pending
        try:
            self._write(json.dumps(message).encode() + b"\0", deadline, method)
            if not pending.done.wait(max(0.0, deadline - time.monotonic())):
                self._check_usable(method)
                raise CDPTimeout(f"{method}: no response within {timeout:g} s")
        finally:
            with self._cond:
                self._pending.pop(msg_id, None)
        if pending.error is not None:
            raise pending.error
        assert pending.result is not None
        return pending.result

    def new_page(self, url: str = "about:blank", *, timeout: float = 10.0) -> "Page":
        """Opens a new tab, attaches to it (flat session) and returns its Page.

        The Page, Runtime, Log and Network domains are enabled and lifecycle
        events switched on, so that errors are collected from the start.
        """
        target_id = self.send("Target.createTarget", {"url": "about:blank"}, timeout=timeout)["targetId"]
        session_id = self.send(
            "Target.attachToTarget", {"targetId": target_id, "flatten": True}, timeout=timeout
        )["sessionId"]
        page = Page(self, target_id, session_id)
        with self._cond:
            self._pages[session_id] = page
        for method, params in (
            ("Page.enable", None),
            ("Page.setLifecycleEventsEnabled", {"enabled": True}),
            ("Runtime.enable", None),
            ("Log.enable", None),
            ("Network.enable", None),
        ):
            page.send(method, params, timeout=timeout)
        if url != "about:blank":
            page.goto(url, timeout=timeout)
        return page

    def close(self, timeout: float = 5.0) -> None:
        """Asks the browser to quit, then ends its whole process group.

        Idempotent. Waits at most about ``timeout`` seconds for a clean exit
        before SIGTERM and then SIGKILL to the group; removes the temporary
        profile.
        """
        with self._cond:
            if self._closed:
                return
            was_alive = self._exit_reason is None and self._proc.poll() is None
        if was_alive:
            try:
                self.send("Browser.close", timeout=min(timeout, 2.0))
            except CDPError:
                pass
            try:
                self._proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                pass
        with self._cond:
            self._closed = True
            self._fail_pending(lambda p: True, BrowserExited("browser closed"))
            self._cond.notify_all()
        self._finalizer()  # SIGTERM/SIGKILL whatever is left of the group, rm -r tmpdir
        try:
            os.close(self._cmd_fd)
        except OSError:
            pass
        self._reader.join(timeout=2.0)  # sees EOF once the group is gone
        if not self._reader.is_alive():
            # (A reader still blocked in read() keeps its fd: closing it under
            # the thread could make it read a reused descriptor.)
            os.close(self._event_fd)

    def kill(self) -> None:
        """Ends the browser's process group at once (SIGTERM, then SIGKILL).

        For watchdogs and failure paths; :meth:`close` is the polite way.
        Safe from any thread; removes the temporary profile too.
        """
        self._finalizer()

    # ------------------------------------------------------------------ internals
    def _check_usable(self, what: str) -> None:
        """Raises BrowserExited when the browser can no longer be driven."""
        if self._closed:
            raise BrowserExited(f"{what}: browser already closed")
        if self._exit_reason is not None or self._proc.poll() is not None:
            reason = self._exit_reason or f"exit status {self._proc.poll()}"
            raise BrowserExited(f"{what}: browser gone ({reason}); last output:\n{self.stderr_tail()}")

    def _write(self, data: bytes, deadline: float, what: str) -> None:
        """Writes all of ``data`` to the command pipe before ``deadline``."""
        view = memoryview(data)
        with self._write_lock:
            while view:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise CDPTimeout(f"{what}: browser did not read its command pipe in time")
                _, writable, _ = select.select([], [self._cmd_fd], [], min(remaining, 0.5))
                if not writable:
                    self._check_usable(what)
                    continue
                try:
                    n = os.write(self._cmd_fd, view)
                except BlockingIOError:
                    continue
                except (BrokenPipeError, OSError) as e:
                    raise BrowserExited(f"{what}: cannot write to the browser ({e})") from e
                view = view[n:]

    def _fail_pending(self, which: Callable[[_Pending], bool], error: BaseException) -> None:
        """Completes matching pending commands with ``error`` (holding _cond)."""
        for pending in self._pending.values():
            if not pending.done.is_set() and which(pending):
                pending.error = error
                pending.done.set()

    def _read_loop(self) -> None:
        """Reader thread: splits the event pipe on NUL and dispatches."""
        buf = bytearray()
        reason = "pipe closed"
        try:
            while True:
                chunk = os.read(self._event_fd, 1 << 20)
                if not chunk:
                    break
                buf += chunk
                start = 0
                while (end := buf.find(b"\0", start)) != -1:
                    raw = bytes(buf[start:end])
                    start = end + 1
                    try:
                        message = json.loads(raw)
                    except ValueError:
                        continue
                    self._dispatch(message)
                del buf[:start]
        except OSError as e:
            reason = f"read error: {e}"
        except Exception as e:  # a bug in dispatch; do not leave waiters hanging
            reason = f"reader crashed: {e!r}"
        if reason == "pipe closed":
            try:
                reason = f"pipe closed, exit status {self._proc.wait(timeout=1.0)}"
            except subprocess.TimeoutExpired:
                pass
        with self._cond:
            self._exit_reason = reason
            if not self._closed:
                self._fail_pending(
                    lambda p: True,
                    BrowserExited(f"browser gone ({reason}); last output:\n{self.stderr_tail()}"),
                )
            self._cond.notify_all()

    def _dispatch(self, message: dict[str, Any]) -> None:
        """Routes one message: a response by id, an event by session id."""
        with self._cond:
            if "id" in message:
                pending = self._pending.get(message["id"])
                if pending is not None:
                    if "error" in message:
                        err = message["error"]
                        detail = f" ({err['data']})" if err.get("data") else ""
                        pending.error = CDPError(f"{pending.method}: {err.get('message')}{detail}")
                    else:
                        pending.result = message.get("result", {})
                    pending.done.set()
            else:
                method = message.get("method", "")
                params = message.get("params", {})
                session_id = message.get("sessionId")
                if session_id is not None:
                    page = self._pages.get(session_id)
                    if page is not None:
                        page._on_event(method, params)
                elif method == "Target.detachedFromTarget":
                    gone = params.get("sessionId")
                    page = self._pages.pop(gone, None)
                    if page is not None:
                        page._detached = True
                    self._fail_pending(
                        lambda p: p.session_id == gone,
                        CDPError(f"target detached (session {gone})"),
                    )
            self._cond.notify_all()

    def _wait(self, predicate: Callable[[], Any], deadline: float, what: str, page: "Page | None" = None) -> Any:
        """Waits on the event condition until ``predicate()`` is truthy."""
        with self._cond:
            while True:
                value = predicate()
                if value:
                    return value
                self._check_usable(what)
                if page is not None:
                    page._check_usable(what)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise CDPTimeout(what)
                self._cond.wait(min(remaining, 0.5))


class Page:
    """One tab, attached as a flat session; created by :meth:`Browser.new_page`.

    ``errors`` collects, as readable strings, uncaught exceptions
    (``Runtime.exceptionThrown``), ``console.error``/``console.assert`` calls
    (``Runtime.consoleAPICalled``) and error-level log entries
    (``Log.entryAdded``, e.g. failed loads; but not a failed load of
    ``/favicon.ico``, which the browser requests on its own), so that a test
    can end with ``assert page.errors == []``. ``console`` keeps every
    console message as ``(type, text)``.
    """

    def __init__(self, browser: Browser, target_id: str, session_id: str):
        """Internal: use :meth:`Browser.new_page`."""
        self.browser = browser
        """The Browser this page belongs to."""
        self.target_id = target_id
        """DevTools target id of the tab."""
        self.session_id = session_id
        """Flat session id the page's commands and events carry."""
        self.errors: list[str] = []
        """Uncaught exceptions, console errors and error log entries, in order."""
        self.console: collections.deque[tuple[str, str]] = collections.deque(maxlen=1000)
        """The last 1000 console messages as ``(type, text)``."""
        self._lifecycle: set[tuple[str, str]] = set()  # (loaderId, name)
        self._doc_status: dict[str, int] = {}  # loaderId -> HTTP status of the document
        self._crashed = False
        self._detached = False

    # ------------------------------------------------------------------ commands
    def send(self, method: str, params: dict[str, Any] | None = None, *, timeout: float = 10.0) -> dict[str, Any]:
        """Sends a DevTools command to this page's session (see :meth:`Browser.send`)."""
        self._check_usable(method)
        return self.browser.send(method, params, session_id=self.session_id, timeout=timeout)

    def goto(self, url: str, timeout: float = 10.0) -> int | None:
        """Navigates the tab and waits for that navigation's load event.

        Returns the HTTP status of the main document (``None`` when there was
        no response, e.g. for ``about:blank`` and same-document navigations;
        ``data:`` URLs count as 200). Raises :class:`CDPError`
        when the navigation fails (e.g. ``net::ERR_CONNECTION_REFUSED``) and
        :class:`CDPTimeout` when the page has not loaded within ``timeout``.
        """
        deadline = time.monotonic() + timeout
        result = self.send("Page.navigate", {"url": url}, timeout=timeout)
        if result.get("errorText"):
            raise CDPError(f"navigating to {url}: {result['errorText']}")
        loader_id = result.get("loaderId")
        if not loader_id:  # same-document navigation (fragment, history API)
            return None
        self.browser._wait(
            lambda: (loader_id, "load") in self._lifecycle,
            deadline,
            f"{url}: no load event within {timeout:g} s",
            self,
        )
        return self._doc_status.get(loader_id)

    def evaluate(self, expression: str, timeout: float = 10.0) -> Any:
        """Evaluates a JavaScript expression in the page and returns its value.

        Promises are awaited; the value comes back by value (JSON-like; DOM
        nodes become ``{}``, ``undefined`` becomes ``None``). Raises
        :class:`JSError` when the expression throws.
        """
        result = self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True, "userGesture": True},
            timeout=timeout,
        )
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise JSError(f"{expression!r} threw: {_describe_exception(details)}", details)
        return result.get("result", {}).get("value")

    def wait_for(self, expression: str, timeout: float = 10.0, interval: float = 0.05) -> Any:
        """Polls ``expression`` until it is truthy and returns that value.

        A throwing expression counts as not yet true (the element may not
        exist yet); the last exception is named in the :class:`CDPTimeout`
        raised after ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        last_error = ""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                suffix = f"; last error: {last_error}" if last_error else ""
                raise CDPTimeout(f"{expression!r} not truthy within {timeout:g} s{suffix}")
            try:
                value = self.evaluate(expression, timeout=remaining)
            except JSError as e:
                last_error = str(e)
                value = None
            if value:
                return value
            time.sleep(min(interval, max(0.0, deadline - time.monotonic())))

    def screenshot(self, path: str | os.PathLike[str] | None = None, *, full_page: bool = False,
                   timeout: float = 10.0) -> bytes:
        """Captures the viewport (or the whole page) as PNG; returns the bytes.

        Writes them to ``path`` too when given.
        """
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            params["captureBeyondViewport"] = True
        data = base64.b64decode(self.send("Page.captureScreenshot", params, timeout=timeout)["data"])
        if path is not None:
            Path(path).write_bytes(data)
        return data

    def set_viewport(self, width: int, height: int, mobile: bool = False, scale: float = 1.0,
                     timeout: float = 10.0) -> None:
        """Emulates a ``width`` x ``height`` CSS-pixel viewport.

        ``mobile`` also emulates a phone: touch input, and a 980 px wide
        layout viewport for pages without ``<meta name="viewport">``.
        ``scale`` is the device pixel ratio (screenshots grow with it).
        """
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": scale, "mobile": mobile},
            timeout=timeout,
        )
        self.send("Emulation.setTouchEmulationEnabled", {"enabled": mobile, "maxTouchPoints": 5},
                  timeout=timeout)

    def set_extra_headers(self, headers: dict[str, str], timeout: float = 10.0) -> None:
        """Adds these HTTP headers to every request the page makes from now on.

        An empty dict removes them again.
        """
        self.send("Network.setExtraHTTPHeaders", {"headers": dict(headers)}, timeout=timeout)

    def close(self, timeout: float = 10.0) -> None:
        """Closes the tab (no-op when the browser or tab is already gone)."""
        if self._detached or not self.browser.alive:
            return
        try:
            self.browser.send("Target.closeTarget", {"targetId": self.target_id}, timeout=timeout)
        except BrowserExited:
            pass

    # ------------------------------------------------------------------ internals
    def _check_usable(self, what: str) -> None:
        """Raises CDPError when the tab crashed or was detached."""
        if self._crashed:
            raise CDPError(f"{what}: the page's renderer crashed")
        if self._detached:
            raise CDPError(f"{what}: the page is closed (detached)")

    def _on_event(self, method: str, params: dict[str, Any]) -> None:
        """Records one event of this session (reader thread, holding the condition)."""
        if method == "Page.lifecycleEvent":
            self._lifecycle.add((params.get("loaderId", ""), params.get("name", "")))
        elif method == "Network.responseReceived":
            if params.get("type") == "Document" and params.get("loaderId"):
                self._doc_status[params["loaderId"]] = params.get("response", {}).get("status")
        elif method == "Runtime.exceptionThrown":
            self.errors.append("uncaught " + _describe_exception(params.get("exceptionDetails", {})))
        elif method == "Runtime.consoleAPICalled":
            parts = []
            for arg in params.get("args", []):
                if "value" in arg:
                    parts.append(arg["value"] if isinstance(arg["value"], str) else json.dumps(arg["value"]))
                else:
                    parts.append(arg.get("description") or arg.get("type", ""))
            kind = params.get("type", "log")
            text = " ".join(parts)
            self.console.append((kind, text))
            if kind in ("error", "assert"):
                self.errors.append(f"console.{kind}: {text}")
        elif method == "Log.entryAdded":
            entry = params.get("entry", {})
            # The browser's own request for /favicon.ico is no error of the page.
            if entry.get("level") == "error" and not (
                entry.get("source") == "network" and entry.get("url", "").split("?")[0].endswith("/favicon.ico")
            ):
                where = f" ({entry['url']})" if entry.get("url") else ""
                self.errors.append(f"{entry.get('source', 'log')}: {entry.get('text', '')}{where}")
        elif method == "Inspector.targetCrashed":
            self._crashed = True
            self.errors.append("renderer crashed")
            self.browser._fail_pending(
                lambda p: p.session_id == self.session_id, CDPError("the page's renderer crashed")
            )
        elif method == "Inspector.detached":
            self._detached = True
