#!/usr/bin/env python3
"""Hostile server: pagination that does not end.

Offers tools, resources and prompts. The list named by ENDLESS_LIST
(`tools/list`, `resources/list`, `resources/templates/list` or
`prompts/list`; default `tools/list`) answers every page with a new
`nextCursor`; the other lists have one short page. ENDLESS_MODE picks the
pages:

- `items` (default): 1000 items per page;
- `bytes`: 4 items per page, each with a 256 KiB description (1 MiB pages);
- `slow`: 1 item per page, each page answered after 0.25 s;
- `dense`: 5,000,000 empty objects `{}` per page (15 MB: under the default
  message cap, but many items for their size).

ENDLESS_PAGES (default 0: never) makes the list end after that many pages,
so that a client without bounds gets an answer instead of running forever.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _mini  # noqa: E402

ENDLESS = os.environ.get("ENDLESS_LIST", "tools/list")
MODE = os.environ.get("ENDLESS_MODE", "items")
PAGES = int(os.environ.get("ENDLESS_PAGES", "0"))
KEYS = {
    "tools/list": "tools",
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
    "prompts/list": "prompts",
}
FILLER = "d" * (256 * 1024)


def item(method, page, i):
    name = "p%d_%d" % (page, i)
    desc = FILLER if MODE == "bytes" else "item %s" % name
    if method == "tools/list":
        return {"name": name, "description": desc, "inputSchema": {"type": "object"}}
    if method == "resources/list":
        return {"uri": "mem://%s" % name, "name": name, "description": desc}
    if method == "resources/templates/list":
        return {"uriTemplate": "mem://%s/{x}" % name, "name": name, "description": desc}
    return {"name": name, "description": desc}


def page_of(method, cursor):
    key = KEYS[method]
    if method != ENDLESS:
        return {key: [item(method, 0, 0)]}
    page = int(cursor) if cursor else 0
    if MODE == "dense":
        items = [{}] * 5000000
    else:
        count = {"items": 1000, "bytes": 4, "slow": 1}[MODE]
        if MODE == "slow":
            time.sleep(0.25)
        items = [item(method, page, i) for i in range(count)]
    result = {key: items}
    if PAGES == 0 or page + 1 < PAGES:
        result["nextCursor"] = str(page + 1)
    return result


def main():
    caps = {"tools": {}, "resources": {}, "prompts": {}}
    while True:
        msg = _mini.read_message()
        if msg is None:
            return
        if not _mini.is_request(msg):
            continue
        rid = msg["id"]
        method = msg["method"]
        params = msg.get("params") or {}
        if method == "initialize":
            ok = _mini.respond(rid, _mini.initialize_result(params, "endless_pages", capabilities=caps))
        elif method == "ping":
            ok = _mini.respond(rid, {})
        elif method in KEYS:
            ok = _mini.respond(rid, page_of(method, params.get("cursor")))
        else:
            ok = _mini.respond_error(rid, _mini.METHOD_NOT_FOUND, "Method not found: %s" % method)
        if not ok:
            return


if __name__ == "__main__":
    main()
    sys.exit(0)
