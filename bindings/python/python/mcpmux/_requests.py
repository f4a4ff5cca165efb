"""Requests a server sends to the host: elicitation, sampling, roots.

The host gives ``on_elicitation`` / ``on_sampling`` handlers and ``roots`` to
``connect``; this module checks them and builds the one ``on_request``
callable the engine calls. A capability is declared to servers only when
its handler (or ``roots``) is given.

Threads: the engine calls ``on_request`` on one of its blocking threads
(never the event loop's), with the GIL held. A handler that returns an
awaitable (an ``async def`` handler) is run to completion: on the
``AsyncHub``'s event loop when the hub has one, else in a new loop on that
thread. What a handler raises reaches the server as a JSON-RPC error; a
handler slower than the server's ``timeout_seconds`` is answered for it
with an error.
"""

from __future__ import annotations

import asyncio
import inspect
import os
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple, Union

from ._errors import InvalidInput

#: A handler: the request's params in, the result the specification defines out.
RequestHandler = Callable[[Dict[str, Any]], Any]

#: What ``roots`` takes: paths (``str`` or ``os.PathLike``) or ``file://`` URIs.
RootsArg = Iterable[Union[str, "os.PathLike[str]"]]

_METHODS = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
}


def roots_list(roots: Any, arg: str = "roots") -> List[str]:
    """``roots`` as the engine takes them: a list of ``str``. The engine
    turns each into a ``file://`` URI (and refuses other schemes)."""
    if isinstance(roots, (str, bytes, os.PathLike)):
        raise InvalidInput(f"argument '{arg}': a list of paths or file:// URIs, not one {type(roots).__name__}")
    try:
        items = list(roots)
    except TypeError:
        raise InvalidInput(
            f"argument '{arg}': a list of paths or file:// URIs, not {type(roots).__name__}"
        ) from None
    out = []
    for i, item in enumerate(items):
        if isinstance(item, os.PathLike):
            item = os.fspath(item)
        if not isinstance(item, str):
            raise InvalidInput(f"argument '{arg}'[{i}]: a path or file:// URI, not {type(item).__name__}")
        out.append(item)
    return out


def request_options(
    on_elicitation: Optional[RequestHandler],
    on_sampling: Optional[RequestHandler],
    loop: Optional[asyncio.AbstractEventLoop] = None,
) -> Tuple[Optional[Callable[[str, Dict[str, Any]], Dict[str, Any]]], List[str]]:
    """The engine's ``on_request`` callable and the request kinds it answers
    (``[]`` and ``None`` when the host gave no handler)."""
    handlers = {}
    for name, kind, fn in (
        ("on_elicitation", "elicitation", on_elicitation),
        ("on_sampling", "sampling", on_sampling),
    ):
        if fn is None:
            continue
        if not callable(fn):
            raise InvalidInput(f"argument '{name}': must be callable, not {type(fn).__name__}")
        handlers[kind] = fn
    if not handlers:
        return None, []

    def on_request(method: str, params: Dict[str, Any]) -> Dict[str, Any]:
        fn = handlers[_METHODS[method]]
        result = fn(params)
        if inspect.isawaitable(result):
            result = _complete(result, loop)
        if not isinstance(result, dict):
            raise TypeError(
                f"the {method} handler returned {type(result).__name__}, not a dict"
            )
        return result

    return on_request, list(handlers)


def _complete(awaitable: Any, loop: Optional[asyncio.AbstractEventLoop]) -> Any:
    async def wait() -> Any:
        return await awaitable

    if loop is not None and not loop.is_closed():
        return asyncio.run_coroutine_threadsafe(wait(), loop).result()
    return asyncio.run(wait())
