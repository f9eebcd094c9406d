"""Error-tolerant, incremental parsing of Python source with tree-sitter.

A `ParsedSource` keeps the text, its UTF-8 bytes, the tree and the line table. Tree-sitter points are
(row, byte column); everything Denpex hands out uses code-point columns, converted here.
"""

from __future__ import annotations

import itertools
import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from time import perf_counter

import tree_sitter_python
from tree_sitter import Language, Node, Parser, Point, Query, QueryCursor, Range, Tree

from denpex.source.syntax import chunks as _chunks
from denpex.source.syntax.nav import TreeNav

_STAR_IMPORT = re.compile(rb"\bimport\s*\*")  # `from m import *`, within one import statement's bytes


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
    return [0, *itertools.accumulate(len(line) + 1 for line in data.split(b"\n")[:-1])]


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
    # a lazily parsed file: its top-level chunks and which the tree holds (None: the tree holds everything)
    lazy: _chunks.Chunks | None = field(default=None, repr=False, compare=False)
    epoch: int = field(default=0, compare=False)  # bumped when the tree grows: indexes of older trees are stale
    _nav: TreeNav | None = field(default=None, repr=False, compare=False)
    # how `edit` tells the parser the next edit: as its whole lines (True) or exactly (see edit)
    _tell_lines: bool = field(default=False, repr=False, compare=False)
    # the lazy chunks holding a `from M import *` of this text (None: not looked for yet)
    _star_chunks: frozenset[int] | None = field(default=None, repr=False, compare=False)

    @property
    def nav(self) -> TreeNav:
        """Parents and enclosing nodes of the current tree, at a cost linear in its depth (see nav.py)."""
        nav = self._nav
        if nav is None or nav.root.id != self.tree.root_node.id:
            nav = self._nav = TreeNav(self.tree)
        return nav

    # ---- lazy parsing: what an analysis asks for that the tree may not hold yet (see chunks.py) -----------
    def need_def(self, name: str) -> None:
        """The analysis looks up a function or class `name`: its definitions must be in the tree."""
        lazy = self.lazy
        if lazy is not None:
            ids = lazy.defs.get(name.encode("utf-8", "surrogatepass"))
            if ids and lazy.want(ids):
                _WANTING[id(self)] = self

    def need_word(self, word: str, start: int = 0, end: int | None = None, whole: bool = True) -> None:
        """The analysis reads every mention of `word` in bytes [start, end): they must be in the tree."""
        lazy = self.lazy
        if lazy is None:
            return
        root = self.tree.root_node
        # the module node spans only the parsed chunks: its range stands for the whole file
        start = 0 if start <= root.start_byte else start
        stop = len(self.data) if end is None or end >= root.end_byte else end
        first, last = lazy.chunk_at(start), lazy.chunk_at(max(start, stop - 1))
        if all(lazy.parsed[first : last + 1]):
            return  # a range of parsed code (a function's body): the tree holds every mention
        offsets = self.occurrences(word.encode("utf-8", "surrogatepass"), word_end=whole)
        data = self.data
        ids = {lazy.chunk_at(o) for o in offsets[bisect_left(offsets, start):bisect_left(offsets, stop)]
               if not (whole and o and _WORD_BYTE[data[o - 1]])}  # a longer name ending in the word
        if lazy.want(ids):
            _WANTING[id(self)] = self

    def need_import(self, name: str, current: str | None) -> None:
        """The analysis resolves `name` through the file's imports and the tree's imports bind it to `current`
        (None: unbound): an import elsewhere that binds it to something else is needed (in a whole-file parse
        the last such binding wins)."""
        lazy = self.lazy
        if lazy is not None:
            binds = lazy.imports.get(name)
            if binds and lazy.want([i for i, target in binds if target is not None and target != current]):
                _WANTING[id(self)] = self

    def need_star_imports(self) -> None:
        """The analysis reads the file's `from M import *` statements: the chunks holding them must be parsed
        (found once per text: every name a module lacks asks again)."""
        lazy = self.lazy
        if lazy is None:
            return
        ids = self._star_chunks
        if ids is None:
            data = self.data
            ids = self._star_chunks = frozenset(
                lazy.chunk_at(start) for _kw, _line, start, end in _chunks.import_statements(data)
                if _STAR_IMPORT.search(data, start, end)) if b"*" in data else frozenset()
        if ids and lazy.want(set(ids)):
            _WANTING[id(self)] = self

    def need_binding_of(self, target: str) -> None:
        """The analysis looks for the names bound to `target`, in binding order: every import of it is needed."""
        lazy = self.lazy
        if lazy is not None and lazy.want(lazy.binding_chunks(target)):
            _WANTING[id(self)] = self

    def unparsed_modules(self) -> set[str]:
        """The modules imported by the code the tree does not hold (read from the text)."""
        lazy = self.lazy
        if lazy is None:
            return set()
        return {mod for i, mod in lazy.modules if not lazy.parsed[i]}

    def grow(self) -> None:
        """Parse the chunks asked for (and what they name) in place: a new tree, a new epoch."""
        lazy = self.lazy
        if lazy is None or not lazy.demand:
            return
        new = sorted(lazy.demand)
        for i in new:
            lazy.parsed[i] = True
        lazy.demand.clear()
        _chunks.close_over_names(lazy, self.data, new)
        self._reparse()

    def complete(self) -> None:
        """Parse the whole file in place (before an edit, or when growing does not settle)."""
        if self.lazy is not None:
            self.lazy = None
            _WANTING.pop(id(self), None)
            self._reparse()

    def _reparse(self) -> None:
        global _GROWTHS
        _GROWTHS += 1
        lazy = self.lazy
        if lazy is not None and all(lazy.parsed):
            self.lazy = lazy = None
        self.tree = _parse_ranges(self.data, lazy) if lazy is not None else _parser().parse(self.data)
        if lazy is not None and self.tree.root_node.has_error:
            self.lazy = None  # a cut inside a string or bracket, or a real syntax error: parse everything
            self.tree = _parser().parse(self.data)
        self.epoch += 1

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

    def occurrences_in_tree(self, word: bytes) -> list[int]:
        """`occurrences(word, word_end=True)` in the code the tree holds (a lazily parsed file's parsed chunks)."""
        lazy = self.lazy
        if lazy is None:
            return self.occurrences(word, word_end=True)
        key = (word, self.epoch)
        found = lazy.tree_occ.get(key)
        if found is None:
            rx = _word_re(word)
            found = lazy.tree_occ[key] = [m.start() for a, b, *_ in lazy.ranges() for m in rx.finditer(self.data, a, b)]
        return found

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
        """A new ParsedSource after replacing a range, reparsed incrementally from this tree (an edited file is
        parsed whole from then on: this source is completed first)."""
        self.complete()
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
        # Either way of telling tree-sitter the edit gives the same tree, but which reparses less varies with the
        # code around it: deleting the last character of a line of transformer_layer.py, told exactly, reparsed the
        # whole file (6-8 ms, 0.35 ms told as its whole line), while in DeepSpeed's runtime/utils.py the whole line
        # cost 4.9 ms and the exact edit 0.4 ms. Keystrokes repeat where they are typed, so an edit is told the way
        # the last one was unless that reparse was slow; then the next is told the other way.
        lines = self._tell_lines
        if lines:
            a = self._ls(start_line)
            nxt = self.data.find(b"\n", end_b)
            old_end = len(self.data) if nxt < 0 else nxt + 1
            a_point = (start_line, 0)
            if nxt >= 0:  # up to and with the newline ending the edit's last line: the next line's start
                old_end_point, new_end_point = (end_line + 1, 0), (new_end_point[0] + 1, 0)
            else:  # the last line, unterminated: its rest follows the inserted text
                old_end_point = (end_line, old_end - self._ls(end_line))
                new_end_point = (new_end_point[0], new_end_point[1] + old_end - end_b)
        else:
            a, old_end, a_point = start_b, end_b, (start_line, start_b - self._ls(start_line))
            old_end_point = (end_line, end_b - self._ls(end_line))
        tree.edit(
            start_byte=a,
            old_end_byte=old_end,
            new_end_byte=old_end + (len(data) - len(self.data)),
            start_point=a_point,
            old_end_point=old_end_point,
            new_end_point=new_end_point,
        )
        t0 = perf_counter()
        new_tree = _parser().parse(data, tree)
        slow = perf_counter() - t0 >= _SLOW_REPARSE_S
        text = data.decode("utf-8", "surrogatepass")
        # the line starts outside the replaced range carry over (shifted after it): no scan of the whole file
        old_starts = self.line_starts
        i1 = bisect_right(old_starts, start_b)
        i2 = bisect_right(old_starts, end_b)
        delta = len(new_bytes) - (end_b - start_b)
        inserted = [start_b + i + 1 for i, ch in enumerate(new_bytes) if ch == 10] if nl else []
        starts = old_starts[:i1] + inserted + ([x + delta for x in old_starts[i2:]] if delta else old_starts[i2:])
        out = ParsedSource(text, data, new_tree, starts, data.isascii())
        out._tell_lines = lines != slow
        self._carry_occurrences(out, start_b, end_b, new_end_b)
        return out

    def _ls(self, row: int) -> int:
        return self.line_starts[row] if row < len(self.line_starts) else len(self.data)


_SLOW_REPARSE_S = 0.001  # an incremental reparse slower than this tells the next edit the other way (ParsedSource.edit)


def parse(text: str, lazy: bool = False) -> ParsedSource:
    """Parse a file; with `lazy`, only the top-level statements a capture can reach (see chunks.py) when that
    leaves out enough of it. An analysis of a lazy source must run inside `analyse._settled`."""
    data = text.encode("utf-8", "surrogatepass")
    starts = _line_starts(data)
    if lazy and len(data) >= _chunks.MIN_SKIPPED_BYTES:
        table = _chunks.split(data, starts)
        _chunks.seed(table, data)
        if not all(table.parsed) and table.skipped_bytes() >= _chunks.MIN_SKIPPED_BYTES:
            tree = _parse_ranges(data, table)
            if not tree.root_node.has_error:
                return ParsedSource(text, data, tree, starts, data.isascii(), lazy=table)
    return ParsedSource(text, data, _parser().parse(data), starts, data.isascii())


def _parse_ranges(data: bytes, table: _chunks.Chunks) -> Tree:
    ranges = [Range(Point(r0, 0), Point(r1, c1), a, b) for a, b, r0, r1, c1 in table.ranges()]
    return Parser(language(), included_ranges=ranges).parse(data)


_WORD_BYTE = [chr(b).isalnum() or b == 0x5F or b >= 0x80 for b in range(256)]

# lazy sources an analysis asked for more of, by id (see ParsedSource.need_def)
_WANTING: dict[int, ParsedSource] = {}


_GROWTHS = 0  # lazily parsed trees grown or completed so far, in this process


def growths() -> int:
    """How many lazily parsed trees have grown so far: an answer read from trees before a growth may lack code
    the grown tree holds (caches of whole-workspace answers are keyed by it)."""
    return _GROWTHS


def take_wanting() -> list[ParsedSource]:
    """The lazy sources with chunks asked for since the last call (and forget them)."""
    out = list(_WANTING.values())
    _WANTING.clear()
    return out


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
    offsets = src.occurrences_in_tree(w)
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


NESTED_DEFINITIONS = frozenset({"function_definition", "lambda", "class_definition", "decorated_definition"})


def own_nodes(body: Node) -> Iterator[Node]:
    """The named nodes of `body` (pre-order, so in document order), not descending into the definitions nested in
    it: the code that runs when `body` runs."""
    stack = [body]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed([c for c in n.named_children if c.type not in NESTED_DEFINITIONS]))


def strip_parens(node: Node) -> Node:
    while node.type == "parenthesized_expression" and node.named_child_count == 1:
        child = node.named_children[0]
        node = child
    return node
