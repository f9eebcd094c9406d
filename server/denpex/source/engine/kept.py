"""What a Document keeps of an analysis across edits (issue 20): its findings and each capture region's hits, with
the byte ranges and names they consulted, and how an edit outside all of that moves them to their new positions
(the importers' regions: units.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from denpex.source.model import CallStep, CaptureSite, Fix, Severity, SourceFinding, TextEdit
from denpex.source.syntax.parse import ParsedSource


@dataclass(frozen=True)
class Rec:
    """One hit of a capture region in the analysed file, resolved to positions (no tree nodes: it outlives edits)."""

    hazard: str
    start_byte: int
    end_byte: int
    sl: int
    sc: int
    el: int
    ec: int
    severity: Severity | None
    message: str | None
    site: CaptureSite
    fixes: tuple[Fix, ...]
    chain: tuple[str, ...]
    doubt: str = ""  # why it may not happen (see _doubt)
    steps: tuple[CallStep, ...] = ()
    note: str = ""  # what captures it, when that is not in doubt (an unconditional framework entry point)



@dataclass
class RegionEntry:
    """The hits one capture region produced in its own file, and what they were computed from: the code ranges
    and names the region's analysis consulted. Identified across edits by its (shifted) byte positions."""

    ident: tuple[str, int, int, int, int]  # kind, site start/end, anchor start, region end
    owner: int  # start byte of the scope (function) holding the capture; -1 for the module
    recs: list[Rec]
    touched: list[tuple[int, int]]
    watched: frozenset[str]



def merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """`ranges` as their union: sorted, overlapping and adjacent ones joined. A walk records the same function or
    statement thousands of times (Megatron-LM's transformer_layer.py: ~8,000 ranges per region), and every edit
    tests and moves all that are kept; what a test of overlap answers is the same for the union."""
    out: list[tuple[int, int]] = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1]:
            if b > out[-1][1]:
                out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


@dataclass
class Cached:
    key: tuple[object, ...]
    findings: list[SourceFinding]
    touched: list[tuple[int, int]]
    watched: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Pending:
    """An edit not yet carried into the region entries: inside function [fn_start, fn_end) of the source before
    it, `changed` its old and new text, bytes [s, t) replaced, the length changed by `delta`; `written`: what the
    statements the edit falls in may write, before or after it (attributes `x` of `self.x`, local names as `=x`);
    `span`: the bytes of the source before it that those statements cover (engine/analyse.py, _statements_edited)."""

    fn_start: int
    fn_end: int
    changed: str
    s: int
    t: int
    delta: int
    edit: TextEdit
    written: frozenset[str] = frozenset()
    span: tuple[int, int] = (0, 0)


def consulted(a0: int, b0: int, changed: str, touched: list[tuple[int, int]], watched: frozenset[str]) -> bool:
    """Whether an edit inside the function spanning bytes [a0, b0) (old and new text `changed`) may change an
    analysis that consulted the byte ranges `touched` and every mention of the names `watched`."""
    if any(re.search(rf"\b{re.escape(w)}\b", changed) for w in watched):
        return True
    return any(a < b0 and a0 < b for a, b in touched)


def _shift_byte(b: int, s: int, t: int, delta: int) -> int:
    if b >= t:
        return b + delta
    if b <= s:
        return b
    raise ValueError("inside the edit")


def shift_entry(entry: RegionEntry, s: int, t: int, delta: int, e: TextEdit) -> RegionEntry | None:
    try:
        kind, *rest = entry.ident
        a, b, c, d = (_shift_byte(x, s, t, delta) for x in rest)
        recs: list[Rec] = []
        for r in entry.recs:
            sl, sc = _shift_point(r.sl, r.sc, e)
            el, ec = _shift_point(r.el, r.ec, e)
            site = CaptureSite(r.site.path, _shift_point(r.site.line, 0, e)[0], r.site.kind)
            recs.append(replace(r, start_byte=_shift_byte(r.start_byte, s, t, delta),
                                end_byte=_shift_byte(r.end_byte, s, t, delta), sl=sl, sc=sc, el=el, ec=ec,
                                site=site, fixes=tuple(_shift_fix(x, e) for x in r.fixes),
                                steps=shift_steps(r.steps, r.site.path, e)))
        owner = _shift_byte(entry.owner, s, t, delta) if entry.owner >= 0 else -1
    except ValueError:
        return None
    touched = [(x + delta if x >= t else x, y + delta if y >= t else y) for x, y in entry.touched
               if not (x < t and s < y)]
    return RegionEntry((kind, a, b, c, d), owner, recs, touched, entry.watched)


def shift_rec(r: Rec, path: str, s: int, t: int, delta: int, e: TextEdit) -> Rec:
    """A hit of another file's capture region in file `path` after edit `e` of it (its capture site, in that
    file, stays)."""
    (sl, sc), (el, ec) = _shift_point(r.sl, r.sc, e), _shift_point(r.el, r.ec, e)
    return replace(r, start_byte=_shift_byte(r.start_byte, s, t, delta), end_byte=_shift_byte(r.end_byte, s, t, delta),
                   sl=sl, sc=sc, el=el, ec=ec, fixes=tuple(_shift_fix(x, e) for x in r.fixes),
                   steps=shift_steps(r.steps, path, e))


def _shift_point(line: int, col: int, e: TextEdit) -> tuple[int, int]:
    if (line, col) <= (e.start_line, e.start_col):
        return line, col
    if (line, col) < (e.end_line, e.end_col):
        raise ValueError("inside the edit")
    nl = e.new_text.count("\n")
    if line == e.end_line:
        if nl:
            return e.start_line + nl, col - e.end_col + len(e.new_text) - e.new_text.rfind("\n") - 1
        return e.start_line, e.start_col + len(e.new_text) + (col - e.end_col)
    return line + nl - (e.end_line - e.start_line), col


def shift_steps(steps: tuple[CallStep, ...], path: str, e: TextEdit) -> tuple[CallStep, ...]:
    """The call path after edit `e` of file `path` (steps in other files do not move)."""
    out = []
    for st in steps:
        if st.path == path:
            line, col = _shift_point(st.line, st.col, e)
            st = replace(st, line=line, col=col)
        out.append(st)
    return tuple(out)


def _shift_edit(t: TextEdit, e: TextEdit) -> TextEdit:
    sl, sc = _shift_point(t.start_line, t.start_col, e)
    el, ec = _shift_point(t.end_line, t.end_col, e)
    return TextEdit(sl, sc, el, ec, t.new_text)


def _shift_fix(f: Fix, e: TextEdit) -> Fix:
    return replace(f, edits=tuple(_shift_edit(t, e) for t in f.edits))


def shift_cached(c: Cached, old: ParsedSource, new: ParsedSource, e: TextEdit) -> Cached | None:
    s = old.byte_offset(e.start_line, e.start_col)
    t = old.byte_offset(e.end_line, e.end_col)
    delta = len(new.data) - len(old.data)
    try:
        out: list[SourceFinding] = []
        for f in c.findings:
            sl, sc = _shift_point(f.start_line, f.start_col, e)
            el, ec = _shift_point(f.end_line, f.end_col, e)
            site = f.capture_site
            if site is not None and site.path == f.path:
                site = CaptureSite(site.path, _shift_point(site.line, 0, e)[0], site.kind)
            out.append(replace(
                f, start_line=sl, start_col=sc, end_line=el, end_col=ec, capture_site=site,
                fixes=tuple(_shift_fix(x, e) for x in f.fixes), call_path=shift_steps(f.call_path, f.path, e),
                suppression=_shift_fix(f.suppression, e) if f.suppression is not None else None,
            ))
    except ValueError:
        return None
    touched = [(a + delta if a >= t else a, b + delta if b >= t else b) for a, b in c.touched if not (a < t and s < b)]
    return Cached(c.key, out, touched, c.watched)
