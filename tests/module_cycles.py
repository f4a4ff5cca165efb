#!/usr/bin/env python3
"""Fails when the top-level modules of a crate form a cycle.

Cargo keeps the crates in layers (a lower crate never names a higher one);
inside a crate nothing does, so this check does: for each crate's `src/`, a
module that names another (`crate::other`, `use crate::{other, ...}`)
depends on it, and the dependencies must form no cycle. A module's
sub-modules count as the module. Prints each cycle found and exits 1.

Usage: python3 tests/module_cycles.py [CRATE_DIR ...]  (default: every
crate of the workspace with a src/ directory).
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
DEFAULT = ["core", "crates/policy", "crates/sessions", "crates/gateway",
           "ffi", "bindings/python", "bindings/node", "bindings/cli"]


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(line.split("//", 1)[0] for line in text.splitlines())


def uses(text):
    """Top-level module names this text refers to through `crate::`."""
    names = set(re.findall(r"\bcrate::([a-z_][a-z0-9_]*)", text))
    for group in re.findall(r"\bcrate::\{([^}]*)\}", text, flags=re.S):
        for item in group.split(","):
            item = item.strip()
            m = re.match(r"([a-z_][a-z0-9_]*)", item)
            if m:
                names.add(m.group(1))
    return names


def modules(src):
    """Top-level module name -> its source files."""
    out = {}
    for path in sorted(src.rglob("*.rs")):
        rel = path.relative_to(src)
        top = rel.parts[0]
        if top.endswith(".rs"):
            top = top[:-3]
        if top in ("lib", "main"):
            continue
        out.setdefault(top, []).append(path)
    return out


def cycles(graph):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
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


def edges_between(graph_files, comp):
    lines = []
    for a in comp:
        for b in comp:
            if a != b and b in graph_files[a]:
                lines.append(f"    {a} -> {b} ({graph_files[a][b]})")
    return lines


def check(crate_dir):
    src = ROOT / crate_dir / "src"
    mods = modules(src)
    graph, where = {}, {}
    for name, files in mods.items():
        graph[name] = set()
        where[name] = {}
        for f in files:
            for other in uses(strip_comments(f.read_text())):
                if other != name and other in mods:
                    graph[name].add(other)
                    where[name].setdefault(other, str(f.relative_to(ROOT)))
    found = cycles(graph)
    for comp in found:
        print(f"{crate_dir}: module cycle: {' <-> '.join(comp)}")
        print("\n".join(edges_between(where, comp)))
    return not found


def main(argv):
    crates = argv or DEFAULT
    ok = all([check(c) for c in crates])
    if ok:
        print(f"no module cycle in {len(crates)} crate(s)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
