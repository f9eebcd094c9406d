"""Fixes found in a notebook's joined program, applied to the cells they edit.

A fix is taken only when all its edits lie in one cell and none touches a blanked IPython line (the program holds
an empty line there; the cell holds the magic, which a fix must not eat). The cell's source is edited as
written, so its magics and everything else outside the edits stay as they were.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from denpex.notebook.cells import CellProgram, CellSpan
from denpex.source.engine.analyse import apply_fixes
from denpex.source.model import Fix, SourceFinding, TextEdit


def _touches_blanked(span: CellSpan, e: TextEdit) -> bool:
    lines = span.source.split("\n")
    for b in span.blanked:
        # the edit overlaps the line's text (an insertion at its column 0 leaves it whole)
        if (e.start_line, e.start_col) < (b, len(lines[b])) and (b, 0) < (e.end_line, e.end_col):
            return True
    return False


def cell_fix(program: CellProgram, fx: Fix) -> tuple[int, Fix] | None:
    """The fix in its cell's coordinates, with that cell's number; None when it spans cells or eats a magic."""
    cell: CellSpan | None = None
    edits: list[TextEdit] = []
    for e in fx.edits:
        span = program.span_at(e.start_line)
        if span is None or (cell is not None and span is not cell):
            return None
        cell = span
        last = span.first_line + span.n_lines - 1
        end_line, end_col = e.end_line, e.end_col
        if end_line == last + 1 and end_col == 0:  # a row deletion that takes the newline joining the next cell
            end_line, end_col = last, len(span.source.split("\n")[-1])
        if end_line > last:
            return None
        ce = TextEdit(e.start_line - span.first_line, e.start_col, end_line - span.first_line, end_col, e.new_text)
        if _touches_blanked(span, ce):
            return None
        edits.append(ce)
    if cell is None:
        return None
    return cell.cell, Fix(fx.title, fx.safety, tuple(edits))


def fixed_cells(program: CellProgram, findings: Iterable[SourceFinding], *, unsafe: bool) -> dict[int, str]:
    """New sources of the cells the findings' fixes change (the first eligible fix of each finding, as for a
    Python file; one that overlaps a fix already chosen in its cell is skipped)."""
    per_cell: dict[int, list[SourceFinding]] = {}
    for f in findings:
        fx = next((x for x in f.fixes if x.edits and (unsafe or x.safety == "safe")), None)
        placed = cell_fix(program, fx) if fx is not None else None
        if placed is not None:
            per_cell.setdefault(placed[0], []).append(replace(f, fixes=(placed[1],)))
    out: dict[int, str] = {}
    for cell, fs in per_cell.items():
        span = program.span_of_cell(cell)
        assert span is not None
        new = apply_fixes(span.source, fs, unsafe=unsafe)
        if new != span.source:
            out[cell] = new
    return out
