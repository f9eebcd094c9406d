"""Suppression comments: `# denpex: ignore[RULE, ...]` (rule ids or codes) and a bare `# denpex: ignore`.

A suppression applies to findings that start on the comment's line. The suppression *edit* appends such a
comment to the finding's line (or extends an existing one), placed after any multi-line string that the
line ends inside, so the result stays valid Python.
"""

from __future__ import annotations

import re

from tree_sitter import Node

from denpex.source.model import Fix, TextEdit
from denpex.source.syntax.parse import ParsedSource

_IGNORE = re.compile(r"#\s*denpex:\s*ignore(?:\[([^\]]*)\])?", re.IGNORECASE)
ALL = "*"


def suppressions(src: ParsedSource) -> dict[int, set[str]]:
    """line -> rule ids/codes suppressed there (ALL for a bare ignore)."""
    out: dict[int, set[str]] = {}
    if b"denpex" not in src.data:
        return out
    for c in _comments(src):
        text = src.node_text(c)
        m = _IGNORE.search(text)
        if m is None:
            continue
        rules = {r.strip() for r in (m.group(1) or "").split(",") if r.strip()} if m.group(1) is not None else {ALL}
        out.setdefault(c.start_point[0], set()).update(rules or {ALL})
    return out


_COMMENTS: dict[int, tuple[ParsedSource, list[Node]]] = {}


def _comments(src: ParsedSource) -> list[Node]:
    cached = _COMMENTS.get(id(src))
    if cached is not None and cached[0] is src:
        return cached[1]
    found: list[Node] = []
    seen: set[int] = set()
    data = src.data
    find = src.root.descendant_for_byte_range
    i = data.find(b"denpex")
    while i >= 0:  # the comments that mention denpex, found from the text rather than by a walk of the tree
        node = find(i, i + 6)
        if node is not None and node.type == "comment" and node.id not in seen:
            seen.add(node.id)
            found.append(node)
        i = data.find(b"denpex", i + 6)
    if len(_COMMENTS) > 64:
        _COMMENTS.clear()
    _COMMENTS[id(src)] = (src, found)
    return found


def is_suppressed(table: dict[int, set[str]], line: int, rule_id: str, code: str) -> bool:
    rules = table.get(line)
    if not rules:
        return False
    return ALL in rules or rule_id in rules or code in rules or code.lower() in {r.lower() for r in rules}


def _comment_on(src: ParsedSource, line: int) -> Node | None:
    for c in _comments(src):  # remembered per source: no rescan of the text for each finding
        if c.start_point[0] == line and _IGNORE.search(src.node_text(c)):
            return c
    return None


_STRING = frozenset({"string"})


def suppression_fix(src: ParsedSource, line: int, rule_id: str) -> Fix:
    # a line that ends inside a multi-line string: put the comment after the string
    row_end_byte = (src.line_starts[line + 1] - 1) if line + 1 < len(src.line_starts) else len(src.data)
    probe = src.root.descendant_for_byte_range(max(row_end_byte - 1, 0), max(row_end_byte - 1, 0))
    nav = src.nav
    n = probe if probe is None or probe.type == "string" else nav.enclosing(probe, _STRING)
    while n is not None:  # the strings around the row's last byte, innermost first
        if n.start_point[0] <= line < n.end_point[0]:
            line = n.end_point[0]
            break
        n = nav.enclosing(n, _STRING)
    existing = _comment_on(src, line)
    if existing is not None:
        text = src.node_text(existing)
        m = _IGNORE.search(text)
        assert m is not None
        sl, sc = src.start(existing)
        if m.group(1) is None:
            return Fix(f"Suppress {rule_id} on this line", "safe", ())
        close = sc + m.end() - 1  # the "]"
        return Fix(f"Suppress {rule_id} on this line", "safe", (TextEdit(sl, close, sl, close, f", {rule_id}"),))
    text = src.line_text(line)
    end = len(text.rstrip())
    return Fix(f"Suppress {rule_id} on this line", "safe",
               (TextEdit(line, end, line, len(text), f"  # denpex: ignore[{rule_id}]"),))
