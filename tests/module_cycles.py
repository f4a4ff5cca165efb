#!/usr/bin/env python3
"""Fails when the top-level modules of a crate form a cycle.

Cargo keeps the crates in layers (a lower crate never names a higher one);
inside a crate nothing does, so this check does: for each crate's `src/`, a
module that names another depends on it, and the dependencies must form no
cycle. A module's sub-modules (files below it and inline `mod x { }`) count
as the module; an inline module of the crate root counts as a module of its
own. A module names another through any path that starts at `crate`,
`$crate`, `super` or `self`, in a `use` tree (groups nested to any depth,
`pub`/`pub(crate)`, aliases) or anywhere in the code: `super` is resolved
against the module the path is written in (so `super::x` in a top-level
file is `crate::x`, in `a/b.rs` it is `crate::a::x`), and a name the crate
root re-exports (`pub use store::Lock;` then `crate::Lock`) counts as the
module it comes from. Comments and string literals are skipped. Prints each
cycle found, with the file and line of each edge, and exits 1.

The parser's own cases run first (`self_test`), so a form it stops
understanding fails here rather than letting a cycle through.

Usage: python3 tests/module_cycles.py [CRATE_DIR ...]  (default: every
member of the workspace with a src/ directory, read from Cargo.toml).
"""
import pathlib
import re
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent

IDENT = re.compile(r"(?:r#)?[A-Za-z_][A-Za-z0-9_]*")
PATH_START = ("crate", "super", "self")


def workspace_crates():
    """Every workspace member with a src/ directory, in Cargo.toml's order."""
    with open(ROOT / "Cargo.toml", "rb") as f:
        members = tomllib.load(f)["workspace"]["members"]
    return [m for m in members if (ROOT / m / "src").is_dir()]


# --- lexing ----------------------------------------------------------------

def tokens(text):
    """(token, line) pairs: identifiers, `::` and single punctuation marks;
    comments, string and char literals, lifetimes and numbers dropped."""
    out, i, n, line = [], 0, len(text), 1

    def skip_string(j):
        # text[j] == '"'; returns the index after the closing quote.
        j += 1
        while j < n and text[j] != '"':
            j += 2 if text[j] == "\\" else 1
        return j + 1

    def skip_raw_string(j):
        # text[j] is '#' or '"' right after the `r`.
        hashes = 0
        while j < n and text[j] == "#":
            hashes += 1
            j += 1
        if j >= n or text[j] != '"':
            return None
        end = text.find('"' + "#" * hashes, j + 1)
        return n if end < 0 else end + 1 + hashes

    def skip_char(j):
        # text[j] == "'"; a char literal's end, or None for a lifetime.
        if j + 1 < n and text[j + 1] == "\\":
            end = text.find("'", j + 2)
            while end > 0 and text[end - 1] == "\\" and text[end - 2] != "\\":
                end = text.find("'", end + 1)
            return n if end < 0 else end + 1
        if j + 2 < n and text[j + 2] == "'":
            return j + 3
        return None

    while i < n:
        c = text[i]
        start = i
        if c == "\n":
            line += 1
            i += 1
            continue
        if c.isspace():
            i += 1
            continue
        if text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
            line += text.count("\n", start, i)
            continue
        if c == '"':
            i = skip_string(i)
            line += text.count("\n", start, i)
            continue
        if c == "'":
            end = skip_char(i)
            if end is None:  # a lifetime or label: drop the name too
                m = IDENT.match(text, i + 1)
                i = m.end() if m else i + 1
            else:
                i = end
            continue
        m = IDENT.match(text, i)
        if m:
            word = m.group(0)
            j = m.end()
            if word in ("b", "c") and j < n and text[j] == '"':
                i = skip_string(j)
                line += text.count("\n", start, i)
                continue
            if word == "b" and j < n and text[j] == "'":
                end = skip_char(j)
                if end is not None:
                    i = end
                    continue
            if word in ("r", "br", "cr") and j < n and text[j] in '"#':
                end = skip_raw_string(j)
                if end is not None:
                    i = end
                    line += text.count("\n", start, i)
                    continue
            if word.startswith("r#"):
                word = word[2:]
            out.append((word, line))
            i = j
            continue
        if c.isdigit():
            m = re.compile(r"[0-9][0-9A-Za-z_.]*").match(text, i)
            i = m.end()
            continue
        if text.startswith("::", i):
            out.append(("::", line))
            i += 2
            continue
        out.append((c, line))
        i += 1
    return out


def is_ident(tok):
    return IDENT.fullmatch(tok) is not None


# --- use trees and paths ---------------------------------------------------

def parse_tree(toks, i):
    """Parses a use tree (or a plain path) starting at toks[i].

    Returns (paths, end): each path a list of segments, the last one
    `("*",)`-like for a glob, with the name it binds; end is the index
    after the tree. Groups expand: `a::{b, c::{d, self}}` gives
    [a, b], [a, c, d], [a, c, self].
    """
    prefix = []
    while i < len(toks):
        tok = toks[i][0]
        if tok == "{":
            paths, i = [], i + 1
            while i < len(toks) and toks[i][0] != "}":
                if toks[i][0] == ",":
                    i += 1
                    continue
                sub, i = parse_tree(toks, i)
                paths.extend(prefix + p for p in sub)
            return paths, i + 1
        if tok == "*":
            return [prefix + ["*"]], i + 1
        if is_ident(tok) and tok != "as":
            prefix.append(tok)
            i += 1
            if i < len(toks) and toks[i][0] == "::":
                i += 1
                continue
            if i + 1 < len(toks) and toks[i][0] == "as":
                # the alias is the name bound, kept as a marker segment
                return [prefix + ["as " + toks[i + 1][0]]], i + 2
            return [prefix], i
        return [prefix] if prefix else [], i
    return [prefix] if prefix else [], i


def resolve(path, module):
    """The absolute segments of a path written in `module` (a list), or
    None when the path does not start at the crate (an extern crate, a
    local name)."""
    if not path:
        return None
    head = path[0]
    if head == "crate":
        return path[1:]
    if head == "self":
        return module + path[1:]
    if head == "super":
        base, k = list(module), 0
        while k < len(path) and path[k] == "super":
            if not base:
                return None
            base.pop()
            k += 1
        return base + path[k:]
    return None


def scan(toks, module):
    """Yields (absolute path, line, enclosing module, in_use) for every path
    in a file whose module is `module`, and (module, line) markers of
    inline modules as ("mod", path)."""
    stack = []  # (module path, brace depth it closes at)
    depth, i, n = 0, 0, len(toks)
    current = list(module)
    while i < n:
        tok, line = toks[i]
        if tok == "mod" and i + 2 < n and is_ident(toks[i + 1][0]) \
                and toks[i + 2][0] == "{":
            stack.append((current, depth))
            current = current + [toks[i + 1][0]]
            yield ("mod", current, line, None)
            depth += 1
            i += 3
            continue
        if tok == "{":
            depth += 1
        elif tok == "}":
            depth -= 1
            if stack and stack[-1][1] == depth:
                current, _ = stack.pop()
        elif tok == "use":
            paths, end = parse_tree(toks, i + 1)
            for p in paths:
                yield ("use", current, line, p)
            i = end
            continue
        elif tok in PATH_START and i + 1 < n and toks[i + 1][0] == "::" \
                and (i == 0 or toks[i - 1][0] != "::"):
            paths, end = parse_tree(toks, i)
            for p in paths:
                yield ("path", current, line, p)
            i = end
            continue
        i += 1


# --- the graph -------------------------------------------------------------

def module_of(rel):
    """The module path of a file below src/ (`a/b.rs`, `a/b/mod.rs` ->
    [a, b]; `lib.rs`, `main.rs` -> [])."""
    parts = list(rel.parts)
    last = parts.pop()
    if last == "mod.rs" or (not parts and last in ("lib.rs", "main.rs")):
        return parts
    return parts + [last[:-3]]


def crate_graph(files):
    """files: {display name: (module path, text)}. Returns (top-level
    modules, {a: {b: "file:line"}})."""
    scanned = {}
    tops = set()
    for name, (module, text) in files.items():
        if module:
            tops.add(module[0])
        events = list(scan(tokens(text), module))
        scanned[name] = (module, events)
        for kind, mod, _, _ in events:
            if kind == "mod" and len(mod) == 1:
                tops.add(mod[0])

    # Names the crate root binds with `use` (re-exports included) -> the
    # top-level module they come from.
    reexports = {}
    for name, (module, events) in scanned.items():
        for kind, mod, _, path in events:
            if kind != "use" or mod:
                continue
            absolute = resolve(path, []) if path[0] in PATH_START else path
            if not absolute or absolute[0] not in tops:
                continue
            leaf = absolute[-1]
            if leaf.startswith("as "):
                reexports[leaf[3:]] = absolute[0]
            elif leaf not in ("*", "self"):
                reexports[leaf] = absolute[0]

    graph = {t: {} for t in tops}
    for name, (module, events) in scanned.items():
        for kind, mod, line, path in events:
            if kind == "mod" or not mod:
                continue
            absolute = resolve(path, mod)
            if not absolute:
                continue
            head = absolute[0]
            if head not in tops:
                head = reexports.get(head)
            if head and head != mod[0]:
                graph[mod[0]].setdefault(head, f"{name}:{line}")
    return tops, graph


def cycles(graph):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def report(label, graph):
    found = cycles(graph)
    for comp in found:
        print(f"{label}: module cycle: {' <-> '.join(comp)}")
        for a in comp:
            for b in comp:
                if b in graph[a]:
                    print(f"    {a} -> {b} ({graph[a][b]})")
    return not found


def check(crate_dir):
    src = ROOT / crate_dir / "src"
    files = {}
    for path in sorted(src.rglob("*.rs")):
        rel = path.relative_to(src)
        files[str(path.relative_to(ROOT))] = (module_of(rel), path.read_text())
    _, graph = crate_graph(files)
    return report(crate_dir, graph)


# --- the parser's own cases ------------------------------------------------

SELF_TEST = [
    # (files {path below src: text}, the edges expected, at least)
    ({"a.rs": "use super::b::X;", "b.rs": "use super::a;"},
     {("a", "b"), ("b", "a")}),
    ({"a.rs": "use super::{b, c::{self, D}};", "b.rs": "", "c.rs": ""},
     {("a", "b"), ("a", "c")}),
    ({"a.rs": "use crate::{b::{X, Y as Z}};\nfn f() { crate::c::g() }",
      "b.rs": "", "c.rs": ""},
     {("a", "b"), ("a", "c")}),
    ({"a.rs": "pub(crate) use crate::b::X;", "b.rs": ""}, {("a", "b")}),
    ({"a.rs": "fn f() -> super::b::T { super::super_x() }", "b.rs": ""},
     {("a", "b")}),
    ({"a.rs": "fn f() { let _ = super::b::new(); }", "b.rs": ""},
     {("a", "b")}),
    ({"a.rs": "fn f() { x(super::b::K, $crate::c::M) }",
      "b.rs": "", "c.rs": ""},
     {("a", "b"), ("a", "c")}),
    ({"a/inner.rs": "use super::super::b;", "a.rs": "mod inner;", "b.rs": ""},
     {("a", "b")}),
    ({"a.rs": "mod tests {\n use super::*;\n use super::super::b::Y;\n}",
      "b.rs": ""},
     {("a", "b")}),
    ({"lib.rs": "mod a; mod b;\npub use b::Thing;\nuse a::{Other as O};",
      "a.rs": "use crate::Thing;", "b.rs": "fn f(_: super::O) {}"},
     {("a", "b"), ("b", "a")}),
    ({"lib.rs": "mod a;\npub mod internal { pub use crate::a::X; }",
      "a.rs": "use crate::internal;"},
     {("internal", "a"), ("a", "internal")}),
    # Not dependencies: comments, strings, one's own sub-modules, extern
    # crates, `pub(crate)` items, a lifetime before a path.
    ({"a.rs": "// use super::b;\n/* crate::b */ const S: &str = \"crate::b\";"
              "\nconst R: &str = r#\"super::b\"#;\nuse other::b::X;",
      "b.rs": ""}, set()),
    ({"a.rs": "use self::inner::X; mod inner { use super::super::a::Y; }",
      "b.rs": "pub(crate) fn f<'a>(x: &'a str) -> char { 'c' }"}, set()),
]


def self_test():
    ok = True
    for files, expected in SELF_TEST:
        _, graph = crate_graph({
            name: (module_of(pathlib.PurePath(name)), text)
            for name, text in files.items()})
        got = {(a, b) for a, bs in graph.items() for b in bs}
        if expected and not expected <= got or not expected and got:
            print(f"module_cycles.py self-test: {files}: "
                  f"expected {sorted(expected)}, found {sorted(got)}")
            ok = False
    return ok


def main(argv):
    if not self_test():
        return 1
    crates = argv or workspace_crates()
    ok = all([check(c) for c in crates])
    if ok:
        print(f"no module cycle in {len(crates)} crate(s)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
