"""stream-capture-default-stream (DPX130): `g.capture_begin()` on the default (legacy) stream, which cannot be
captured; capture on a side stream forked from and joined to the current one."""

from __future__ import annotations

from tree_sitter import Node

from denpex.source.capture.regions import CaptureRegion, is_inside_stream_context
from denpex.source.engine.facts import fresh_name_in
from denpex.source.engine.hits import Hit
from denpex.source.fixes import edits as F
from denpex.source.model import Fix, TextEdit
from denpex.source.rules._api import Around, Hazard, RegionScan, SourceRule


def _default_stream(scan: RegionScan) -> None:
    region = scan.region
    ix = region.ix
    if region.kind != "capture_begin" or is_inside_stream_context(ix, region.anchor) or region.stream_arg is not None:
        return
    fx = _side_stream_capture_fix(region)
    scan.sink(Hit("capture-begin-default-stream", ix, region.site, region, (), [fx] if fx else []))


def _side_stream_capture_fix(region: CaptureRegion) -> Fix | None:
    ix = region.ix
    begin, end = region.anchor, region.end_stmt
    if end is None or begin.parent is None or end.parent is None or begin.parent.id != end.parent.id:
        return None
    indent = ix.src.indent_of(begin)
    t = F.torch_alias(ix)
    s = fresh_name_in(ix, "capture_stream")
    lines = [f"{indent}{s} = {t}.cuda.Stream()", f"{indent}{s}.wait_stream({t}.cuda.current_stream())",
             f"{indent}with {t}.cuda.stream({s}):"]
    if not F.owns_lines(ix, begin) or not F.owns_lines(ix, end) or _has_ml(begin.parent, begin, end):
        return None
    lines.append(F.rows_text(ix, begin.start_point[0], end.end_point[0], indent, indent + "    "))
    lines.append(f"{indent}{t}.cuda.current_stream().wait_stream({s})")
    return F.fix("Capture on a side stream forked from (and joined to) the current stream", "safe",
                 [TextEdit(begin.start_point[0], 0, *F.row_end(ix, end.end_point[0]), "\n".join(lines))])


def _has_ml(block: Node | None, begin: Node, end: Node) -> bool:
    """A multi-line string in the statements of `block` from `begin` to `end` (both children of `block`)."""
    if block is None:
        return True
    c: Node | None = begin  # walk the siblings from begin, not every child of a long block
    while c is not None and c.start_byte <= end.start_byte:
        if c.start_byte >= begin.start_byte and F._has_multiline_string(c):
            return True
        c = c.next_named_sibling
    return False


RULE = SourceRule(
    id="stream-capture-default-stream",
    hazards=(Hazard("capture-begin-default-stream"),),
    around=(Around(70, _default_stream),),
)
