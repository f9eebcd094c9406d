"""cuda-906-legacy-stream-dependency (DPX107): `out = step()` on the default stream before the side-stream warm-up,
where step() runs backward and returns a tensor, and the capture runs step() again while `out` is alive: `out`
keeps the autograd graph, so the parameters' AccumulateGrad nodes stay on the legacy stream and the captured
backward raises 906."""

from __future__ import annotations

from tree_sitter import Node

from denpex.source.capture.regions import is_inside_stream_context, opens_stream_context
from denpex.source.engine.facts import bound_names, siblings
from denpex.source.engine.hits import Hit
from denpex.source.fixes import edits as F
from denpex.source.resolve.callgraph import EMPTY_ENV
from denpex.source.resolve.index import FileIndex
from denpex.source.rules._api import Around, Hazard, RegionScan, SourceRule
from denpex.source.syntax.mentions import def_of, identifiers, in_nested_definition
from denpex.source.syntax.parse import walk

_DETACHED_RETURNS = (".item()", ".detach()", ".tolist()", ".cpu()", ".numpy()")


def _keeps_graph(ix: FileIndex, fn: Node) -> bool:
    """The function runs `.backward(` and returns a value that can hold the autograd graph."""
    body = fn.child_by_field_name("body")
    if body is None:
        return False
    back = ret = False
    for n in walk(body):
        if n.type not in ("call", "return_statement") or def_of(n) != fn:
            continue
        if in_nested_definition(n, fn):
            continue
        if n.type == "call":
            f = n.child_by_field_name("function")
            if f is not None and f.type == "attribute" and ix.text(f.child_by_field_name("attribute") or f) == "backward":
                back = True
        elif n.type == "return_statement":
            v = n.named_children[0] if n.named_children else None
            if v is not None and v.type != "none" and not ix.text(v).endswith(_DETACHED_RETURNS) and v.type not in (
                    "integer", "float", "string", "true", "false"):
                ret = True
    return back and ret


def _legacy_step(scan: RegionScan) -> None:
    region, resolver = scan.region, scan.resolver
    ix = region.ix
    if region.kind not in ("graph", "capture_begin", "wrapper") or not ix.has(b"backward") or not ix.has(b"stream("):
        return
    captured: dict[int, Node] = {}
    for st in region.stmts:
        for n in walk(st):
            if n.type == "call":
                for t in resolver.resolve_call(ix, n, EMPTY_ENV):
                    if t.ix is ix and t.func.class_name is None:
                        captured[t.func.node.id] = t.func.node
    fns = {k: v for k, v in captured.items() if _keeps_graph(ix, v)}
    if not fns:
        return
    anchor = region.anchor
    if anchor.parent is None or anchor.parent.type not in ("module", "block") or is_inside_stream_context(ix, anchor):
        return
    before = list(reversed(siblings(anchor, after=False)))
    warm = next((i for i, s in enumerate(before) if opens_stream_context(ix, s)), None)
    if warm is None:
        return
    for i, st in enumerate(before[:warm]):
        if st.type != "expression_statement" or not st.named_children or st.named_children[0].type != "assignment":
            continue
        asg = st.named_children[0]
        left, right = asg.child_by_field_name("left"), asg.child_by_field_name("right")
        if left is None or right is None or left.type != "identifier" or right.type != "call":
            continue
        if not any(t.ix is ix and t.func.node.id in fns for t in resolver.resolve_call(ix, right, EMPTY_ENV)):
            continue
        name = ix.text(left)
        released = False
        for later in before[i + 1:]:
            deleted = later.type == "delete_statement" and any(
                n.type == "identifier" and ix.text(n) == name for n in walk(later))
            if deleted or (later.type == "expression_statement" and name in bound_names(ix, later)):
                released = True
        if released:
            continue
        w = before[warm]
        reads_later = any(n.id != left.id and not (st.start_byte <= n.start_byte < w.start_byte)
                          for n in identifiers(ix, name, 0, len(ix.src.data)))
        fx = None if reads_later else F.fix(f"Release {name} (and its autograd graph) before the side-stream warm-up",
                                            "unsafe", [F.insert_before_statement(ix, w, [f"del {name}"])])
        scan.sink(Hit("eager-graph-on-legacy-stream", ix, asg, region, (), [fx] if fx else [], None,
                      f"{name} keeps the autograd graph of an eager backward run on the default (legacy) stream: the "
                      "parameters' AccumulateGrad nodes stay on the legacy stream, and the captured backward raises "
                      "'operation would make the legacy stream depend on a capturing blocking stream' (906); run "
                      "this call inside the side-stream warm-up or `del` the result before it"))


RULE = SourceRule(
    id="cuda-906-legacy-stream-dependency",
    hazards=(Hazard("eager-graph-on-legacy-stream"),),
    around=(Around(60, _legacy_step),),
)
