"""Lazy parsing: tree-sitter is handed only the top-level statements an analysis can reach.

A module's top-level statements parse independently of each other, so a file can be cut at the lines that
start in column 0 and given to tree-sitter as a set of included byte ranges: the tree then holds only those
statements, with their real positions. Every statement that is not a `def` or `class` (imports, assignments,
`if __name__ == ...`) is always parsed; a top-level definition is parsed when it spells a word that can open a
capture, when a parsed definition that opens one names it, or when an analysis asks for it: a name it
looked up (`need_def`), a word whose every mention it reads (`need_word`), an import that may bind a name
(`need_import`). The analysis then runs again on the larger tree (`analyse._settled`), so its result is the
one a parse of the whole file gives.

A cut that lands inside a multi-line string or bracket leaves the included text broken: the partial tree
then has a syntax error and the whole file is parsed instead (see `ParsedSource` in parse.py).
"""

from __future__ import annotations

import os
import re
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field

# a line that starts a top-level statement: not indented, not blank, not a comment, not a closing bracket
_STMT_START = re.compile(rb"\n(?=[^ \t\r\n\f#)\]}])")
# identifiers in UTF-8 bytes: any byte >= 0x80 belongs to a non-ASCII letter (`def café():` is valid Python)
_ID = rb"[A-Za-z_\x80-\xff][\w\x80-\xff]*"
_HEADER = re.compile(rb"(?:async[ \t]+)?(?:def|class)[ \t]+(" + _ID + rb")")
_DEF = re.compile(rb"def[ \t]+(" + _ID + rb")")
_CLASS = re.compile(rb"class[ \t]+(" + _ID + rb")")
_IMPORT = re.compile(rb"import\b")
_WORD = re.compile(_ID)

# words that can open a capture (or configure one): a definition spelling one is parsed from the start
SEED_WORDS = (b"graph", b"Graph", b"capture_begin", b"compile", b"reduce-overhead", b"max-autotune", b"cudagraphs")

# parse the whole file unless at least this many bytes can be left out (small files gain nothing);
# DENPEX_LAZY_MIN_BYTES=0 parses every file lazily (the test suite run that way checks the lazy path)
MIN_SKIPPED_BYTES = int(os.environ.get("DENPEX_LAZY_MIN_BYTES", "") or 16 * 1024)


@dataclass
class Chunks:
    """The top-level statements of a file and which of them the tree holds."""

    starts: list[int]  # byte offset of each chunk, then len(data)
    rows: list[int]  # row of each start, then the row of len(data)
    end_col: int  # byte column of len(data) on its row
    name: list[bytes | None]  # the name a top-level def/class chunk defines (None: another statement)
    parsed: list[bool]
    # names defined by a `def`/`class` anywhere in a chunk: chunk ids
    defs: dict[bytes, list[int]] = field(default_factory=dict)
    # what the import statements of each chunk bind, read from the text: local name -> (chunk id, qualified
    # target; None for `import a.b`, which binds `a` to itself), and the modules they import
    imports: dict[str, list[tuple[int, str | None]]] = field(default_factory=dict)
    modules: list[tuple[int, str]] = field(default_factory=list)
    demand: set[int] = field(default_factory=set)
    # (word, tree epoch) -> its whole-word occurrences in the parsed chunks (parse.ParsedSource.occurrences_in_tree)
    tree_occ: dict[tuple[bytes, int], list[int]] = field(default_factory=dict)
    _by_target: dict[str, list[int]] = field(default_factory=dict)

    def chunk_at(self, offset: int) -> int:
        return bisect_right(self.starts, offset) - 1

    def skipped_bytes(self) -> int:
        return sum(self.starts[i + 1] - self.starts[i] for i, p in enumerate(self.parsed) if not p)

    def ranges(self) -> list[tuple[int, int, int, int, int]]:
        """The parsed chunks as (start byte, end byte, start row, end row, end byte column), runs merged."""
        out: list[tuple[int, int, int, int, int]] = []
        n = len(self.parsed)
        i = 0
        while i < n:
            if not self.parsed[i]:
                i += 1
                continue
            j = i
            while j + 1 < n and self.parsed[j + 1]:
                j += 1
            end_col = self.end_col if j + 1 == n else 0
            out.append((self.starts[i], self.starts[j + 1], self.rows[i], self.rows[j + 1], end_col))
            i = j + 1
        return out

    def binding_chunks(self, target: str) -> list[int]:
        """The chunks with an import that binds some name to `target` (or may: an unreadable import)."""
        found = self._by_target.get(target)
        if found is None:
            found = self._by_target[target] = [
                i for local, binds in self.imports.items() for i, t in binds
                if t in (target, UNKNOWN) or (t is None and local == target)]
        return found

    def want(self, ids: list[int] | set[int]) -> bool:
        """Ask for chunks; True when one of them is not parsed yet."""
        new = False
        for i in ids:
            if not self.parsed[i] and i not in self.demand:
                self.demand.add(i)
                new = True
        return new


def split(data: bytes, line_starts: list[int]) -> Chunks:
    """Cut a file at its top-level statements (decorators stay with their definition)."""
    raw = [0] + [m.end() for m in _STMT_START.finditer(data)]
    starts: list[int] = []
    names: list[bytes | None] = []
    decorating = False  # the last chunk is a run of decorator lines still waiting for its definition
    for s in raw:
        m = _HEADER.match(data, s)
        if decorating and (m is not None or data.startswith(b"@", s)):
            names[-1] = m.group(1) if m is not None else None
            decorating = m is None
            continue
        starts.append(s)
        names.append(m.group(1) if m is not None else None)
        decorating = data.startswith(b"@", s)
    rows = [bisect_right(line_starts, s) - 1 for s in starts]
    starts.append(len(data))
    rows.append(len(line_starts) - 1)
    chunks = Chunks(starts, rows, len(data) - line_starts[-1], names, [n is None for n in names])
    for rx in (_DEF, _CLASS):
        for m in rx.finditer(data):
            chunks.defs.setdefault(m.group(1), []).append(chunks.chunk_at(m.start()))
    for kw, line, start, end in import_statements(data):
        i = chunks.chunk_at(kw)
        binds = _import_bindings(data[start:end]) if start < line or not data.endswith(b"\\\n", 0, line) else None
        if binds is None:  # not an import statement we can read: any name it spells may be bound
            binds = ([(w.decode("utf-8", "replace"), UNKNOWN) for w in _WORD.findall(data, line, end)], [])
        for local, target in binds[0]:
            chunks.imports.setdefault(local, []).append((i, target))
        chunks.modules.extend((i, mod) for mod in binds[1])
    return chunks


def import_statements(data: bytes) -> Iterator[tuple[int, int, int, int]]:
    """(`import` keyword offset, its line's start, statement start, statement end) of every import statement,
    read from the text: a keyword in a comment, a string or a doctest begins none and is skipped."""
    for m in _IMPORT.finditer(data):
        line = data.rfind(b"\n", 0, m.start()) + 1
        start = _import_start(data, line, m.start())
        if start >= 0:
            yield m.start(), line, start, _statement_end(data, m.end())


_FROM_PREFIX = re.compile(rb"(?:^|[:;])[ \t]*(from[ \t]+[.\w]+[ \t]+)?$", re.M)


def _import_start(data: bytes, line: int, kw: int) -> int:
    """Where the import statement whose `import` keyword is at `kw` starts, or -1 when the text before the
    keyword on its line (not blank, not `from mod`, not ending in `:` or `;`) shows it is no statement: the
    keyword is only valid Python at the start of a statement."""
    m = _FROM_PREFIX.search(data, line, kw)
    if m is None:
        return -1
    if m.group(1) is not None:
        return m.start(1)
    return kw


UNKNOWN = "\0?"  # a binding whose target the text does not tell


def _import_bindings(stmt: bytes) -> tuple[list[tuple[str, str | None]], list[str]] | None:
    """(local name, qualified target) pairs and module names of one import statement's text, as
    `names.build_imports` reads them from the tree; None when the text is not a plain import statement."""
    try:
        text = stmt.decode("utf-8")
    except UnicodeDecodeError:
        return None
    text = text.replace("\\\n", " ").split("#", 1)[0].split(";", 1)[0]
    text = " ".join(text.replace("(", " ").replace(")", " ").split())
    binds: list[tuple[str, str | None]] = []
    if text.startswith("from "):
        mod, sep, names = text[5:].partition(" import ")
        mod = mod.strip().lstrip(".")
        if not sep or not _DOTTED.fullmatch(mod or "x"):
            return None
        for item in names.split(","):
            parts = item.split()
            if len(parts) == 1 and _DOTTED.fullmatch(parts[0]):
                name = parts[0]
                binds.append((name.split(".")[0], f"{mod}.{name}" if mod else name))
            elif len(parts) == 3 and parts[1] == "as" and parts[2].isidentifier() and _DOTTED.fullmatch(parts[0]):
                binds.append((parts[2], f"{mod}.{parts[0]}" if mod else parts[0]))
            elif parts != ["*"] and parts:
                return None
        return binds, [mod]
    if text.startswith("import "):
        mods: list[str] = []
        for item in text[7:].split(","):
            parts = item.split()
            if len(parts) == 1 and _DOTTED.fullmatch(parts[0]):
                binds.append((parts[0].split(".")[0], None))
            elif len(parts) == 3 and parts[1] == "as" and parts[2].isidentifier() and _DOTTED.fullmatch(parts[0]):
                binds.append((parts[2], parts[0]))
            else:
                return None
            mods.append(parts[0])
        return binds, mods
    return None


_DOTTED = re.compile(r"[^\W\d]\w*(?:\.[^\W\d]\w*)*")


def _statement_end(data: bytes, pos: int) -> int:
    """End of the logical line at `pos` (through backslash continuations and a parenthesised name list)."""
    nl = data.find(b"\n", pos)
    paren = data.find(b"(", pos, nl if nl >= 0 else len(data))
    if paren >= 0:
        close = data.find(b")", paren)
        return len(data) if close < 0 else close + 1
    while nl > 0 and data[nl - 1 : nl] == b"\\":
        nl = data.find(b"\n", nl + 1)
    return len(data) if nl < 0 else nl


def seed(chunks: Chunks, data: bytes) -> None:
    """Mark what a first parse needs: the definitions that spell a capture word, the statements around a
    module-level statement that does (the detectors read a capture's neighbours), and, transitively, the
    top-level definitions those name."""
    n = len(chunks.parsed)
    todo: list[int] = []
    spelling: set[int] = set()
    for w in SEED_WORDS:  # one C-level search per word (an alternation would defeat the literal search)
        at = data.find(w)
        while at >= 0:
            i = chunks.chunk_at(at)
            spelling.add(i)
            at = data.find(w, chunks.starts[i + 1])  # on from the next chunk: one hit per chunk is enough
    for i in sorted(spelling):
        if chunks.name[i] is None:
            for j in (i - 1, i + 1):
                if 0 <= j < n and not chunks.parsed[j]:
                    chunks.parsed[j] = True
                    todo.append(j)
        elif not chunks.parsed[i]:
            chunks.parsed[i] = True
        todo.append(i)
    close_over_names(chunks, data, todo)


def close_over_names(chunks: Chunks, data: bytes, todo: list[int]) -> None:
    """Parse, transitively, the top-level definitions that the parsed chunks `todo` name: a capture's helpers
    are parsed before the analysis has to ask for them."""
    top: dict[bytes, list[int]] = {}
    for i, name in enumerate(chunks.name):
        if name is not None and not chunks.parsed[i]:
            top.setdefault(name, []).append(i)
    seen: set[int] = set()
    while todo and top:
        i = todo.pop()
        if i in seen:
            continue
        seen.add(i)
        for w in set(_WORD.findall(data, chunks.starts[i], chunks.starts[i + 1])):
            for j in top.pop(w, ()):
                chunks.parsed[j] = True
                todo.append(j)
