"""Notebook code cells as one Python program, and positions in it mapped back to cells.

The cells of a notebook run in one namespace, in order, so a capture in cell 3 that calls a function defined in
cell 1 is analysed as one file: the cells' texts joined with newlines. IPython syntax that is not Python (line
magics, shell escapes, help queries, cell magics whose body is another language) is blanked, line by line, so
every line keeps its number and every other column stays where it is.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

# Cell magics whose body is Python run in the notebook's namespace (only their `%%` line is blanked); the body
# of any other cell magic (%%bash, %%html, %%writefile, ...) is not Python and the whole cell is blanked.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "python", "python3", "pypy"})

# `x = %time f()`, `files = !ls`: an assignment whose right-hand side is a magic or a shell escape
_ASSIGNED_MAGIC = re.compile(r"\s*[A-Za-z_][\w.]*(\s*,\s*[A-Za-z_][\w.]*)*\s*=\s*[%!]")
# `obj?`, `obj??`, `?obj`, `??obj`: IPython's help queries
_HELP_QUERY = re.compile(r"\s*(\?{1,2}[\w.]+|[\w.]+\?{1,2})\s*")


def _is_ipython_line(line: str) -> bool:
    s = line.lstrip()
    return (s.startswith(("%", "!")) or _ASSIGNED_MAGIC.match(line) is not None
            or _HELP_QUERY.fullmatch(line) is not None)


def python_lines(source: str) -> tuple[list[str], frozenset[int]]:
    """The cell's lines (split at "\\n") with IPython-only lines blanked, and the numbers of the blanked lines."""
    lines = source.split("\n")
    first = lines[0].lstrip()
    if first.startswith("%%"):
        name = first[2:].split(maxsplit=1)[0] if first[2:].strip() else ""
        if name not in PYTHON_CELL_MAGICS:
            blank_all = frozenset(i for i, x in enumerate(lines) if x)
            return ["" for _ in lines], blank_all
        blanked = {0}
    else:
        blanked = set()
    i = 1 if blanked else 0
    while i < len(lines):
        if _is_ipython_line(lines[i]):
            blanked.add(i)
            while lines[i].endswith("\\") and i + 1 < len(lines):  # a magic continued on the next line
                i += 1
                blanked.add(i)
        i += 1
    blanked = {b for b in blanked if lines[b]}
    return ["" if i in blanked else x for i, x in enumerate(lines)], frozenset(blanked)


@dataclass(frozen=True)
class CellPosition:
    """A position in a cell: `cell` is the 1-based index among all the notebook's cells (markdown included,
    as ruff counts them), `line` and `col` are 0-based within the cell's source."""

    cell: int
    line: int
    col: int


@dataclass(frozen=True)
class CellSpan:
    cell: int  # 1-based, among all cells
    first_line: int  # 0-based line of the program where the cell starts
    source: str  # the cell's source as written (magics included)
    blanked: frozenset[int]  # lines of the cell blanked in the program

    @property
    def n_lines(self) -> int:
        return self.source.count("\n") + 1


class CellProgram:
    """The code cells of one notebook joined into one program (magics blanked), with the map back."""

    def __init__(self, cells: Sequence[tuple[int, str]]) -> None:
        """`cells`: (1-based cell index, source) of each code cell, in notebook order."""
        spans: list[CellSpan] = []
        parts: list[str] = []
        line = 0
        for number, source in cells:
            lines, blanked = python_lines(source)
            spans.append(CellSpan(number, line, source, blanked))
            parts.append("\n".join(lines))
            line += len(lines)
        self.spans = spans
        self.text = "\n".join(parts)
        self._starts = [s.first_line for s in spans]

    def span_at(self, line: int) -> CellSpan | None:
        i = bisect_right(self._starts, line) - 1
        if i < 0:
            return None
        s = self.spans[i]
        return s if line < s.first_line + s.n_lines else None

    def position(self, line: int, col: int) -> CellPosition | None:
        """The cell position of a 0-based program position (None past the last cell)."""
        s = self.span_at(line)
        return CellPosition(s.cell, line - s.first_line, col) if s is not None else None

    def span_of_cell(self, cell: int) -> CellSpan | None:
        return next((s for s in self.spans if s.cell == cell), None)
