#!/usr/bin/env python3
"""Checks the relative links of every tracked Markdown file.

Every link that is not a URL with a scheme (http:, https:, mailto:, ...)
must name a file or directory of the checkout, relative to the Markdown
file (or to the repository root when it starts with /), and a #fragment
must name a heading (GitHub's anchor rules) or an explicit <a id/name> of
the target Markdown file. Links inside code blocks and code spans are not
links. Prints each broken link as FILE:LINE: LINK (reason) and exits 1 when
there is one; plain Python 3, no packages.

    python3 tests/doc_links.py            # every tracked *.md
    python3 tests/doc_links.py FILE...    # only these
"""

import os
import re
import subprocess
import sys
import unicodedata

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# [text](target "title") and ![alt](target); the target may be in <...>.
INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+[\"'(][^)]*)?\s*\)")
# [label]: target
REFDEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ANCHOR = re.compile(r"<a\s+[^>]*(?:id|name)\s*=\s*[\"']([^\"']+)[\"']", re.I)
FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def tracked_markdown():
    out = subprocess.run(
        ["git", "-C", ROOT, "ls-files", "-z", "--", "*.md", "*.markdown"],
        check=True,
        capture_output=True,
    ).stdout
    return [p for p in out.decode().split("\0") if p]


def prose_lines(text):
    """(line number, line) outside fenced code blocks, code spans blanked."""
    fence = None
    for number, line in enumerate(text.split("\n"), 1):
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
            continue
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip()[len(m.group(1)):].strip():
                fence = None
            continue
        yield number, blank_code_spans(line)


def blank_code_spans(line):
    """Replaces every `code span` by spaces (so its brackets are not links)."""
    out, i = [], 0
    while i < len(line):
        if line[i] == "`":
            j = i
            while j < len(line) and line[j] == "`":
                j += 1
            ticks = line[i:j]
            end = line.find(ticks, j)
            while end != -1 and end + len(ticks) < len(line) and line[end + len(ticks)] == "`":
                end = line.find(ticks, end + len(ticks) + 1)
            if end == -1:
                out.append(line[i:j])
                i = j
                continue
            out.append(" " * (end + len(ticks) - i))
            i = end + len(ticks)
        else:
            out.append(line[i])
            i += 1
    return "".join(out)


def slug(heading):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links: their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.replace("`", "")
    text = text.lower()
    kept = []
    for ch in text:
        cat = unicodedata.category(ch)
        if ch in " -_" or cat[0] in "LN" or cat == "Mn":
            kept.append(ch)
    return "".join(kept).replace(" ", "-")


_anchor_cache = {}


def anchors(path):
    """Every anchor a Markdown file offers (headings, <a id/name>)."""
    if path in _anchor_cache:
        return _anchor_cache[path]
    with open(path, encoding="utf-8") as f:
        text = f.read()
    found, seen = set(), {}
    fence = None
    for line in text.split("\n"):
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
            continue
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            continue
        for a in HTML_ANCHOR.findall(line):
            found.add(a)
        h = HEADING.match(line)
        if h:
            base = slug(h.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
    _anchor_cache[path] = found
    return found


def links(text):
    for number, line in prose_lines(text):
        for m in INLINE.finditer(line):
            yield number, m.group(1)
        m = REFDEF.match(line)
        if m:
            yield number, m.group(1)


def check(md):
    errors = []
    path = os.path.join(ROOT, md)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for number, target in links(text):
        target = target.strip("<>")
        if SCHEME.match(target) or target.startswith("//"):
            continue
        file_part, _, fragment = target.partition("#")
        file_part = file_part.split("?", 1)[0]
        if file_part:
            from urllib.parse import unquote

            rel = unquote(file_part)
            if rel.startswith("/"):
                dest = os.path.join(ROOT, rel.lstrip("/"))
            else:
                dest = os.path.join(os.path.dirname(path), rel)
            dest = os.path.normpath(dest)
            if not os.path.exists(dest):
                errors.append(f"{md}:{number}: {target} (no such file)")
                continue
            if not dest.startswith(ROOT + os.sep) and dest != ROOT:
                errors.append(f"{md}:{number}: {target} (outside the repository)")
                continue
        else:
            dest = path
        if fragment:
            if os.path.isdir(dest) or not dest.lower().endswith((".md", ".markdown")):
                continue  # GitHub's line anchors (#L10) and the like: not checked
            if fragment.lower() not in {a.lower() for a in anchors(dest)}:
                where = os.path.relpath(dest, ROOT)
                errors.append(f"{md}:{number}: {target} (no heading #{fragment} in {where})")
    return errors


def main(argv):
    files = argv[1:] or tracked_markdown()
    errors = []
    for md in files:
        errors.extend(check(os.path.relpath(os.path.abspath(md), ROOT) if argv[1:] else md))
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        print(f"doc_links: {len(errors)} broken link(s) in {len(files)} Markdown file(s)", file=sys.stderr)
        return 1
    print(f"doc_links: every relative link of {len(files)} Markdown file(s) resolves")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
