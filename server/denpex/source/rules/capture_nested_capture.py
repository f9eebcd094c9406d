"""capture-nested-capture (DPX824): a capture started inside another — `with torch.cuda.graph(...)`,
`g.capture_begin()` or `make_graphed_callables(...)` reached from a capture region. Only one capture may be under
way; on torch 2.11 all three fail (a nested `with` breaks the outer capture: 901 at its exit)."""

from __future__ import annotations

from tree_sitter import Node

from denpex.source.engine.hits import stmt_of
from denpex.source.rules._api import CallSite, Claim, Frame, Hazard, SourceRule, Walk

_OPENERS = frozenset({"torch.cuda.graph", "torch.cuda.graphs.graph"})
_GRAPHED = frozenset({"torch.cuda.make_graphed_callables", "transformer_engine.pytorch.make_graphed_callables",
                      "transformer_engine.pytorch.graph.make_graphed_callables"})


def _nested_with(w: Walk, node: Node, frame: Frame) -> None:
    clause = next((c for c in node.children if c.type == "with_clause"), None)
    for item in clause.named_children if clause is not None else []:
        v = item.child_by_field_name("value")
        f = v.child_by_field_name("function") if v is not None and v.type == "call" else None
        if f is not None and frame.ix.qualname(f) in _OPENERS:
            stmt = stmt_of(node, frame.ix.src)
            w.report("nested-capture", item, frame, [w.fixes.move_before_capture(stmt, w.direct(stmt, frame))])


def _nested_call(w: Walk, c: CallSite) -> bool:
    if not (c.method == "capture_begin" or c.qualname in _GRAPHED):
        return False
    # make_graphed_callables is a capture of its own: it can run before this one; a capture_begin() has its
    # capture_end() elsewhere, so moving it alone would leave the graph half-built (no fix)
    fixes = [w.fixes.move_before_capture(c.stmt, c.direct)] if c.qualname in _GRAPHED else []
    w.report("nested-capture", c.node, c.frame, fixes)
    return True


RULE = SourceRule(
    id="capture-nested-capture",
    hazards=(Hazard("nested-capture"),),
    claims=(Claim(45, _nested_call),),
    on_node={"with_statement": (_nested_with,)},
)
