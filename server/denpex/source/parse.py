"""Error-tolerant, incremental parsing of Python source with tree-sitter.

A `ParsedSource` keeps the text, its UTF-8 bytes, the tree and the line table. Tree-sitter points are
(row, byte column); everything Denpex hands out uses code-point columns, converted here.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache

import tree_sitter_python
from tree_sitter import Language, Node, Parser, Query, QueryCursor, Tree


@cache
def language() -> Language:
    return Language(tree_sitter_python.language())


@cache
def _parser() -> Parser:
    return Parser(language())


@cache
def compile_query(source: str) -> Query:
    query: Query = Query(language(), source)
    return query


def _in_document_order(caps: dict[str, list[Node]]) -> dict[str, list[Node]]:
    # the cursor's order is not document order, and differs between a fresh and an incrementally reparsed tree
    # of the same text: sorted, results do not depend on the edit history
    for nodes in caps.values():
        nodes.sort(key=_doc_key)
    return caps


def _doc_key(n: Node) -> tuple[int, int]:
    return n.start_byte, -n.end_byte


def run_query(source: str, node: Node) -> dict[str, list[Node]]:
    """Captures of a (cached) query under `node`, by capture name, each list in document order."""
    return _in_document_order(QueryCursor(compile_query(source)).captures(node))


def run_query_range(source: str, node: Node, start_byte: int, end_byte: int) -> dict[str, list[Node]]:
    """Captures of a (cached) query for matches intersecting [start_byte, end_byte), in document order."""
    cursor = QueryCursor(compile_query(source))
    cursor.set_byte_range(max(0, start_byte), max(start_byte, end_byte))
    return _in_document_order(cursor.captures(node))


def any_of(names: object) -> str:
    """A query predicate list for #any-of? (names sorted, quoted)."""
    items = sorted({str(n) for n in names if str(n).isidentifier()})  # type: ignore[attr-defined]
    return " ".join(f'"{n}"' for n in items) or '"__denpex_none__"'


def _line_starts(data: bytes) -> list[int]:
    starts = [0]
    find = data.find
    i = find(b"\n")
    while i >= 0:
        starts.append(i + 1)
        i = find(b"\n", i + 1)
    return starts


@dataclass
class ParsedSource:
    """One parsed file. `text` is what the caller gave; `data` its UTF-8 encoding."""

    text: str
    data: bytes
    tree: Tree
    line_starts: list[int] = field(default_factory=list)
    ascii: bool = True
    # (bytes, whole-word?) -> start offsets of its occurrences (see `occurrences`); carried across edits
    _occ: dict[tuple[bytes, bool], list[int]] = field(default_factory=dict, repr=False, compare=False)

    def occurrences(self, word: bytes, word_end: bool = False) -> list[int]:
        """Start offsets of `word` in the data, in order (with `word_end`: the matches of `_word_re(word)`, i.e.
        not followed by a word character when the word ends with one). Remembered, and after an edit derived from
        the previous source's list: only the bytes around the edit are searched again."""
        key = (word, word_end)
        found = self._occ.get(key)
        if found is None:
            rx = _word_re(word) if word_end else _plain_re(word)
            found = self._occ[key] = [m.start() for m in rx.finditer(self.data)]
        return found

    def _carry_occurrences(self, new: ParsedSource, s: int, t: int, new_t: int) -> None:
        """Fill `new`'s remembered occurrences from this source's, for the edit replacing bytes [s, t) by the
        bytes [s, new_t) of `new`."""
        delta = new_t - t
        for (word, word_end), old in self._occ.items():
            if any(word[:k] == word[-k:] for k in range(1, len(word))):
                continue  # a word that can overlap itself: searched afresh when asked
            n = len(word) + (1 if word_end else 0)  # the bytes a match at o reads: [o, o + n)
            keep = bisect_right(old, s - n)  # matches that read only bytes before the edit
            moved = bisect_left(old, t)  # matches that start at or after its end
            rx = _word_re(word) if word_end else _plain_re(word)
            # the new matches start in [s - n + 1, new_t) and read no byte past new_t - 1 + n
            end = min(len(new.data), new_t - 1 + n)
            mid = [m.start() for m in rx.finditer(new.data, max(0, s - n + 1), end) if m.start() < new_t]
            after = [o + delta for o in old[moved:]] if delta else old[moved:]
            new._occ[(word, word_end)] = old[:keep] + mid + after

    @property
    def root(self) -> Node:
        return self.tree.root_node

    def node_text(self, node: Node) -> str:
        return self.data[node.start_byte : node.end_byte].decode("utf-8", "surrogatepass")

    def line_text(self, row: int) -> str:
        if row >= len(self.line_starts):
            return ""
        start = self.line_starts[row]
        end = self.line_starts[row + 1] - 1 if row + 1 < len(self.line_starts) else len(self.data)
        return self.data[start:end].decode("utf-8", "surrogatepass").rstrip("\r")

    def col(self, row: int, byte_col: int) -> int:
        """Code-point column of a byte column on a row."""
        if self.ascii or row >= len(self.line_starts):
            return byte_col
        start = self.line_starts[row]
        return len(self.data[start : start + byte_col].decode("utf-8", "surrogatepass"))

    def byte_offset(self, row: int, col: int) -> int:
        """Byte offset of a (row, code-point column) position."""
        if row >= len(self.line_starts):
            return len(self.data)
        start = self.line_starts[row]
        if self.ascii:
            return start + col
        line = self.line_text(row)
        return start + len(line[:col].encode("utf-8", "surrogatepass"))

    def start(self, node: Node) -> tuple[int, int]:
        row, bcol = node.start_point
        return row, self.col(row, bcol)

    def end(self, node: Node) -> tuple[int, int]:
        row, bcol = node.end_point
        return row, self.col(row, bcol)

    def indent_of(self, node: Node) -> str:
        """The leading whitespace of the line a statement starts on."""
        line = self.line_text(node.start_point[0])
        return line[: len(line) - len(line.lstrip())]

    def edit(self, start_line: int, start_col: int, end_line: int, end_col: int, new_text: str) -> ParsedSource:
        """A new ParsedSource after replacing a range, reparsed incrementally from this tree."""
        start_b = self.byte_offset(start_line, start_col)
        end_b = self.byte_offset(end_line, end_col)
        new_bytes = new_text.encode("utf-8", "surrogatepass")
        data = self.data[:start_b] + new_bytes + self.data[end_b:]
        new_end_b = start_b + len(new_bytes)
        # points in bytes
        nl = new_bytes.count(b"\n")
        if nl:
            new_end_point = (start_line + nl, len(new_bytes) - new_bytes.rfind(b"\n") - 1)
        else:
            new_end_point = (start_line, start_b - self.line_starts[start_line] + len(new_bytes)) if start_line < len(self.line_starts) else (start_line, len(new_bytes))
        tree = self.tree.copy()
        tree.edit(
            start_byte=start_b,
            old_end_byte=end_b,
            new_end_byte=new_end_b,
            start_point=(start_line, start_b - self._ls(start_line)),
            old_end_point=(end_line, end_b - self._ls(end_line)),
            new_end_point=new_end_point,
        )
        new_tree = _parser().parse(data, tree)
        text = data.decode("utf-8", "surrogatepass")
        # the line starts outside the replaced range carry over (shifted after it): no scan of the whole file
        old_starts = self.line_starts
        i1 = bisect_right(old_starts, start_b)
        i2 = bisect_right(old_starts, end_b)
        delta = len(new_bytes) - (end_b - start_b)
        inserted = [start_b + i + 1 for i, ch in enumerate(new_bytes) if ch == 10] if nl else []
        starts = old_starts[:i1] + inserted + ([x + delta for x in old_starts[i2:]] if delta else old_starts[i2:])
        out = ParsedSource(text, data, new_tree, starts, data.isascii())
        self._carry_occurrences(out, start_b, end_b, new_end_b)
        return out

    def _ls(self, row: int) -> int:
        return self.line_starts[row] if row < len(self.line_starts) else len(self.data)


def parse(text: str) -> ParsedSource:
    data = text.encode("utf-8", "surrogatepass")
    tree = _parser().parse(data)
    return ParsedSource(text, data, tree, _line_starts(data), data.isascii())


@cache
def _plain_re(word: bytes) -> re.Pattern[bytes]:
    return re.compile(re.escape(word))


@cache
def _word_re(word: bytes) -> re.Pattern[bytes]:
    # a literal followed by \b is much faster than one wrapped in \b...\b; the node check does the rest
    return re.compile(re.escape(word) + (rb"\b" if word[-1:].isalnum() or word[-1:] == b"_" else b""))


def tokens(src: ParsedSource, word: str, node_type: str | None = None) -> list[Node]:
    """The leaf nodes spelled exactly `word` (a keyword, an identifier, an operator), in document order,
    found by a text search and a lookup in the tree instead of a walk over every node. `node_type` is the
    expected type (default: `word` itself, i.e. a keyword/operator token); occurrences inside strings,
    comments or longer names are dropped because the node found there is not that token."""
    want = node_type or word
    w = word.encode()
    offsets = src.occurrences(w, word_end=True)
    if not offsets:
        return []
    find = src.root.descendant_for_byte_range
    n = len(w)
    out: list[Node] = []
    for s in offsets:
        node = find(s, s + n)
        if node is not None and node.type == want and node.start_byte == s and node.end_byte == s + n:
            out.append(node)
    return out


def walk(node: Node) -> Iterator[Node]:
    """All nodes under `node` (pre-order), including `node`."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        children = n.children
        if children:
            stack.extend(reversed(children))


def ancestors(node: Node) -> Iterator[Node]:
    p = node.parent
    while p is not None:
        yield p
        p = p.parent


def enclosing_statement(node: Node) -> Node:
    """The innermost simple or compound statement containing `node` (itself if it is one)."""
    n: Node | None = node
    while n is not None:
        parent = n.parent
        if parent is not None and parent.type in ("block", "module"):
            return n
        n = parent
    return node


def strip_parens(node: Node) -> Node:
    while node.type == "parenthesized_expression" and node.named_child_count == 1:
        child = node.named_children[0]
        node = child
    return node
