"""Reading `.ipynb` files (nbformat 4 JSON) and writing edited cell sources back.

The file is read with the position of every code cell's `source` value, so that an edit rewrites only the
source strings it changes: outputs, metadata, other cells, key order, indentation, escaping and the trailing
newline stay byte for byte as they were (a notebook re-serialised by `json.dumps` would differ in all of those).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from denpex.errors import DenpexError
from denpex.notebook.cells import CellProgram

_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


class NotebookError(DenpexError):
    """A file that is not a readable nbformat 4 notebook."""


@dataclass(frozen=True)
class SourceValue:
    """Where a code cell's `source` value lies in the file."""

    start: int  # offset of the value ("[" or the opening quote)
    end: int  # offset just past it
    items: tuple[tuple[int, int, str], ...] | None  # (start, end, text) of each string of a list; None: one string


class _Scanner:
    """Just enough of a JSON reader to find the cells' `source` values; every other value is skipped with the
    C decoder (`raw_decode`), so a notebook with megabytes of outputs reads quickly."""

    def __init__(self, text: str) -> None:
        self.s = text

    def ws(self, i: int) -> int:
        m = _WS.match(self.s, i)
        assert m is not None
        return m.end()

    def expect(self, i: int, ch: str) -> int:
        i = self.ws(i)
        if not self.s.startswith(ch, i):
            raise ValueError(f"expected {ch!r} at offset {i}")
        return i + 1

    def value(self, i: int) -> tuple[Any, int]:
        i = self.ws(i)
        return _DECODER.raw_decode(self.s, i)

    def members(self, i: int) -> Any:
        """Yield (key, value start) of an object starting at i; the caller returns the value's end via send()."""
        i = self.expect(i, "{")
        j = self.ws(i)
        if self.s.startswith("}", j):
            return j + 1
        while True:
            key, i = self.value(i)
            i = self.expect(i, ":")
            i = self.ws(i)
            i = yield key, i
            i = self.ws(i)
            if self.s.startswith(",", i):
                i += 1
                continue
            return self.expect(i, "}")

    def elements(self, i: int) -> Any:
        i = self.expect(i, "[")
        j = self.ws(i)
        if self.s.startswith("]", j):
            return j + 1
        while True:
            i = self.ws(i)
            i = yield i
            i = self.ws(i)
            if self.s.startswith(",", i):
                i += 1
                continue
            return self.expect(i, "]")


def _drive(gen: Any, handle: Any) -> int:
    """Run a members()/elements() generator, handing each item to `handle`, which returns the item's end."""
    try:
        item = next(gen)
        while True:
            item = gen.send(handle(item))
    except StopIteration as stop:
        return int(stop.value)


def _source_spans(text: str) -> list[SourceValue | None]:
    """The `source` value position of every cell (None for cells without one)."""
    sc = _Scanner(text)
    spans: list[SourceValue | None] = []

    def source_value(i: int) -> tuple[SourceValue, int]:
        if text.startswith("[", i):
            items: list[tuple[int, int, str]] = []

            def elem(j: int) -> int:
                v, end = sc.value(j)
                items.append((j, end, v if isinstance(v, str) else ""))
                return int(end)

            end = _drive(sc.elements(i), elem)
            return SourceValue(i, end, tuple(items)), end
        _v, end = sc.value(i)
        return SourceValue(i, end, None), end

    def cell(i: int) -> int:
        found: list[SourceValue] = []

        def member(kv: tuple[str, int]) -> int:
            key, j = kv
            if key == "source":
                sv, end = source_value(j)
                found.append(sv)
                return end
            return int(sc.value(j)[1])

        end = _drive(sc.members(i), member)
        spans.append(found[-1] if found else None)
        return end

    def top(kv: tuple[str, int]) -> int:
        key, j = kv
        if key == "cells" and text.startswith("[", j):
            return _drive(sc.elements(j), cell)
        return int(sc.value(j)[1])

    _drive(sc.members(0), top)
    return spans


def _source_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(x, str) for x in value):
        return "".join(value)
    raise ValueError("a cell's source is neither a string nor a list of strings")


def is_python_notebook(meta: Mapping[str, Any]) -> bool:
    """False for a notebook whose kernel is another language (R, Julia, ...); no language given: Python."""
    for key, sub in (("kernelspec", "language"), ("language_info", "name")):
        d = meta.get(key)
        if isinstance(d, dict) and isinstance(d.get(sub), str):
            return str(d[sub]).lower() in ("python", "python3", "ipython", "ipython3")
    return True


class Notebook:
    """One `.ipynb` file: its raw text, its code cells and their positions in the file."""

    def __init__(self, raw: str, name: str = "notebook") -> None:
        """`raw`: the file's text (a leading byte-order mark is kept for writing, not read as JSON)."""
        self._bom = "\ufeff" if raw.startswith("\ufeff") else ""
        raw = raw[len(self._bom):]
        self.raw = raw
        self.name = name
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            raise NotebookError(f"{name}: not a Jupyter notebook (invalid JSON: {exc})") from None
        if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
            raise NotebookError(f"{name}: not a Jupyter notebook (no \"cells\" list)")
        major = data.get("nbformat")
        if not isinstance(major, int) or major < 4:
            raise NotebookError(f"{name}: nbformat {major!r} is not supported (nbformat 4 is)")
        meta = data.get("metadata")
        self.python = is_python_notebook(meta if isinstance(meta, dict) else {})
        cells: list[tuple[int, str]] = []
        try:
            for n, c in enumerate(data["cells"], start=1):
                if not isinstance(c, dict):
                    raise ValueError(f"cell {n} is not an object")
                if c.get("cell_type") == "code":
                    cells.append((n, _source_text(c.get("source", ""))))
            spans = _source_spans(raw)
        except ValueError as exc:
            raise NotebookError(f"{name}: not a Jupyter notebook ({exc})") from None
        if len(spans) != len(data["cells"]):
            raise NotebookError(f"{name}: not a Jupyter notebook (cells could not be located)")
        self._spans = spans
        self.code_cells = cells
        self.program = CellProgram(cells if self.python else [])
        # escaping of rewritten strings: \\u escapes when the file writes non-ASCII text that way
        self._ascii = raw.isascii() and "\\u" in raw
        self._sep, self._open, self._close = _list_layout(raw, spans)

    @classmethod
    def read(cls, path: Path, name: str | None = None) -> Notebook:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise NotebookError(f"{name or path}: cannot read: {exc}") from None
        try:
            raw = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise NotebookError(f"{name or path}: not a Jupyter notebook (not UTF-8: {exc})") from None
        return cls(raw, name or str(path))

    @property
    def stored(self) -> str:
        """The text to write back (the byte-order mark included if the file had one)."""
        return self._bom + self.raw

    # ---- positions in the file -------------------------------------------------------------------------------
    def file_position(self, cell: int, line: int, col: int) -> tuple[int, int]:
        """0-based (line, column) in the .ipynb text of a character of a cell's source (for SARIF and GitHub
        annotations, which point into the file as stored)."""
        sv = self._spans[cell - 1]
        src = next(s for n, s in self.code_cells if n == cell)
        lines = src.split("\n")
        line = min(line, len(lines) - 1)
        offset = sum(len(x) + 1 for x in lines[:line]) + min(col, len(lines[line]))
        assert sv is not None
        if sv.items is None:
            at = sv.start + len(self._dump(src[:offset])) - 1
        else:
            at = sv.start + 1
            consumed = 0
            for start, _end, text in sv.items:
                if offset < consumed + len(text):
                    at = start + len(self._dump(text[: offset - consumed])) - 1
                    break
                consumed += len(text)
                at = start + len(self._dump(text)) - 1  # the end of the source: before the last closing quote
        fline = self.raw.count("\n", 0, at)
        return fline, at - (self.raw.rfind("\n", 0, at) + 1)

    # ---- writing ---------------------------------------------------------------------------------------------
    def _dump(self, s: str) -> str:
        return json.dumps(s, ensure_ascii=self._ascii)

    def _new_value(self, sv: SourceValue, new: str) -> str:
        if sv.items is None:
            return self._dump(new)
        old_items = [t for _s, _e, t in sv.items]
        tokens = [self.raw[s:e] for s, e, _t in sv.items]
        new_items = re.findall(r"[^\n]*\n|[^\n]+$", new)
        if not sv.items:
            if not new_items:
                return self.raw[sv.start:sv.end]
            return self._open + self._sep.join(self._dump(t) for t in new_items) + self._close
        out: list[str] = []
        if re.findall(r"[^\n]*\n|[^\n]+$", "".join(old_items)) == old_items:
            # nbformat's one-string-per-line layout: unchanged lines keep their stored text
            sm = difflib.SequenceMatcher(None, old_items, new_items, autojunk=False)
            for op, a0, a1, b0, b1 in sm.get_opcodes():
                out.extend(tokens[a0:a1] if op == "equal" else [self._dump(t) for t in new_items[b0:b1]])
        else:
            out = [self._dump(t) for t in new_items]
        if not out:
            return "[]"
        head = self.raw[sv.start:sv.items[0][0]]
        tail = self.raw[sv.items[-1][1]:sv.end]
        seps = [self.raw[sv.items[k][1]:sv.items[k + 1][0]] for k in range(len(sv.items) - 1)]
        sep = seps[0] if seps else self._sep
        return head + sep.join(out) + tail

    def with_sources(self, sources: Mapping[int, str]) -> str:
        """The file's text (to write, as `stored`) with the given cells' (1-based index) sources replaced;
        nothing else changes."""
        out = self.raw
        for cell in sorted(sources, reverse=True):
            sv = self._spans[cell - 1]
            if sv is None:
                raise NotebookError(f"{self.name}: cell {cell} has no source to edit")
            out = out[:sv.start] + self._new_value(sv, sources[cell]) + out[sv.end:]
        return self._bom + out


def _list_layout(raw: str, spans: list[SourceValue | None]) -> tuple[str, str, str]:
    """Separator, opening and closing text of a source list, as this file writes them (for a cell whose source
    list was empty); nbformat's own layout when no cell shows one."""
    for sv in spans:
        if sv is not None and sv.items and len(sv.items) > 1:
            return (raw[sv.items[0][1]:sv.items[1][0]], raw[sv.start:sv.items[0][0]],
                    raw[sv.items[-1][1]:sv.end])
    return ",\n    ", "[\n    ", "\n   ]"
