"""stream-capture-default-stream (DPX130): `g.capture_begin()` on the default (legacy) stream, which cannot be
captured; capture on a side stream forked from and joined to the current one. Not where the stream was made
current by other means: a stream context entered by hand (`ctx.__enter__()`), `torch.cuda.set_stream`, or a
`capture_begin` override that forwards to its base or a context manager's `__enter__` that opens it (its caller
chooses the stream)."""

from __future__ import annotations

from tree_sitter import Node

from denpex.source.capture.regions import CaptureRegion, is_inside_stream_context
from denpex.source.engine.facts import fresh_name_in
from denpex.source.engine.hits import Hit
from denpex.source.fixes import edits as F
from denpex.source.model import Fix, TextEdit
from denpex.source.resolve.index import FileIndex
from denpex.source.rules._api import Around, Hazard, RegionScan, SourceRule


def _default_stream(scan: RegionScan) -> None:
    region = scan.region
    ix = region.ix
    if region.kind != "capture_begin" or is_inside_stream_context(ix, region.anchor) or region.stream_arg is not None:
        return
    if _forwarding(ix, region) or _stream_entered_before(ix, region.anchor):
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


def _forwarding(ix: FileIndex, region: CaptureRegion) -> bool:
    """`capture_begin` called from a method that is itself `capture_begin` (a subclass forwarding to its base),
    or that opens a context manager (`__enter__`, or a method of the class that its `__enter__` calls): the stream
    is whatever its caller, or the `with` statement's code, made current."""
    fn = ix.enclosing_function(region.anchor)
    if fn is None:
        return False
    if fn.name in ("capture_begin", "__enter__"):
        return True
    return _called_from_enter(ix, region.anchor, fn.name)


def _called_from_enter(ix: FileIndex, anchor: Node, name: str) -> bool:
    """`self.<name>(...)` is called in the `__enter__` of the class that holds `anchor`'s method."""
    cls = ix.enclosing_class(anchor)
    enter = cls.methods.get("__enter__") if cls is not None else None
    body = enter.body if enter is not None else None
    if body is None or enter is None or not enter.params:
        return False
    want = f"{enter.params[0]}.{name}("
    return want in ix.text(body).replace(" ", "")


def _stream_entered_before(ix: FileIndex, anchor: Node) -> bool:
    """Before the capture, in its function: a stream context entered by hand (`ctx.__enter__()` on a
    `torch.cuda.stream(...)` context, or a name that says stream), `with ctx:` over such a context, or
    `torch.cuda.set_stream(s)`."""
    n: Node | None = anchor
    while n is not None and n.type not in ("function_definition", "module"):
        p = n.parent
        if p is not None and p.type == "with_statement" and _stream_context_value(ix, p):
            return True
        if p is not None and p.type in ("block", "module"):
            sets = ix.scope_tables.get(("dpx130-sets", p.id))
            if sets is None:  # once per block: a module of many captures is not read again for each
                sets = ix.scope_tables[("dpx130-sets", p.id)] = {"": [c for c in p.named_children if _sets_stream(ix, c)]}
            if any(c.start_byte < n.start_byte for c in sets[""]):
                return True
        n = p
    return False


def _sets_stream(ix: FileIndex, stmt: Node) -> bool:
    if stmt.type != "expression_statement" or not stmt.named_children:
        return False
    call = stmt.named_children[0]
    if call.type != "call":
        return False
    f = call.child_by_field_name("function")
    if f is None:
        return False
    if (ix.qualname(f) or "") == "torch.cuda.set_stream":
        return True
    attr = f.child_by_field_name("attribute") if f.type == "attribute" else None
    obj = f.child_by_field_name("object") if f.type == "attribute" else None
    return attr is not None and obj is not None and ix.text(attr) == "__enter__" and _is_stream_context(ix, obj)


def _stream_context_value(ix: FileIndex, with_stmt: Node) -> bool:
    """`with ctx:` where ctx is a stream context held in a name or attribute."""
    clause = next((c for c in with_stmt.children if c.type == "with_clause"), None)
    for item in clause.named_children if clause is not None else []:
        v = item.child_by_field_name("value")
        if v is not None and v.type in ("identifier", "attribute") and _is_stream_context(ix, v):
            return True
    return False


def _is_stream_context(ix: FileIndex, obj: Node) -> bool:
    """`torch.cuda.stream(s)`, or a name or attribute bound to it, or named after a stream (`self.stream_ctx`)."""
    if obj.type == "call":
        f = obj.child_by_field_name("function")
        return f is not None and (ix.qualname(f) or "") in ("torch.cuda.stream", "torch.cuda.StreamContext")
    k = ix.kind(obj)
    if k.node is not None and k.node.type == "call":
        f = k.node.child_by_field_name("function")
        if f is not None and (ix.qualname(f) or "") in ("torch.cuda.stream", "torch.cuda.StreamContext"):
            return True
    last = ix.text(obj).rsplit(".", 1)[-1].lower()
    return "stream" in last


RULE = SourceRule(
    id="stream-capture-default-stream",
    hazards=(Hazard("capture-begin-default-stream"),),
    around=(Around(70, _default_stream),),
)
