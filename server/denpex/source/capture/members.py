"""Captured state held on `self`: the shape of real graph runners (vLLM, SGLang, TGI, lmdeploy).

A method captures a graph that reads static buffers kept on the instance (`self.static_x`, or per-shape
dictionaries `self.inputs[bs]`) and keeps the graph there (`self.graph`, `self.graphs[bs] = g`). Another
method (or the same one, later) then rebinds a buffer, `self.static_x = x`, instead of copying into it, and
replays the graph: it still reads the old tensor, and the outputs are silently wrong. Copy into the captured
tensor instead (`self.static_x.copy_(x)`). Without a replay after it in the same method, a rebinding is not
reported: the order in which methods run is unknown (it may be setup before the capture).
"""

from __future__ import annotations

import re

from tree_sitter import Node

from denpex.source.capture.regions import CaptureRegion
from denpex.source.engine.hits import Hit, Sink
from denpex.source.fixes import edits as F
from denpex.source.resolve.index import (
    ClassInfo,
    FileIndex,
    FuncInfo,
    positional,
    scope_binding_nodes,
)
from denpex.source.syntax.nav import walk_with_parents
from denpex.source.syntax.parse import strip_parens, walk

_CONSTRUCTORS = frozenset({"__init__", "__post_init__"})


def member_rebinding(region: CaptureRegion, sink: Sink) -> None:
    if region.kind not in ("graph", "capture_begin", "wrapper"):
        return
    ix = region.ix
    cls = ix.enclosing_class(region.anchor)
    meth = ix.enclosing_function(region.anchor)
    if cls is None or meth is None or meth.class_name != cls.name:
        return
    graphs = _graph_members(ix, region, meth)
    if not graphs:
        return  # the graph is not kept on the instance: its replays are local (see hazards.around_region)
    inputs = _member_inputs(ix, region, graphs)
    if not inputs:
        return
    ix.touched.append((cls.node.start_byte, cls.node.end_byte))  # every method of the class is read
    names = "|".join(map(re.escape, sorted(graphs)))
    replay = re.compile(rf"self\.(?:{names})(?:\[[^\]]*\])?\.replay\(")
    for m in _methods(cls):
        if m.name in _CONSTRUCTORS and m is not meth:
            continue  # building the buffers, before any capture
        body = m.body
        if body is None:
            continue
        for n in scope_binding_nodes(body, ix.src.data):
            if n.type != "assignment" or (m is meth and n.start_byte < region.end_byte):
                continue
            left = n.child_by_field_name("left")
            right = n.child_by_field_name("right")
            if left is None or right is None:
                continue
            name = _member_of(ix, left)
            if name is None or name not in inputs:
                continue
            if any(_member_of(ix, r) == name for r in walk(right) if r.type == "attribute"):
                continue  # derived from itself (`self.x = tree_map(weakref, self.x)`): the same storage, re-wrapped
            rest = ix.src.data[n.end_byte:body.end_byte].decode("utf-8", "surrogatepass").replace(" ", "")
            if "graph(" in rest or "capture_begin(" in rest or f"self.{meth.name}(" in rest:
                continue  # new buffers for a new capture
            if not replay.search(rest):
                continue  # no replay follows here: the method may run before the capture (setup); not reported
            target = ix.text(left)
            fx = F.fix(f"Static buffer: {target}.copy_(...) into the captured tensor instead of rebinding it", "unsafe",
                       [F.replace_node(ix, n, f"{target}.copy_({ix.text(right)})")])
            sink(Hit("static-input-rebound", ix, n, region, (), [fx] if fx is not None else []))


def _methods(cls: ClassInfo) -> list[FuncInfo]:
    return sorted(cls.methods.values(), key=lambda f: f.node.start_byte)


def _member_of(ix: FileIndex, node: Node) -> str | None:
    """`a` for `self.a` or `self.a[...]`."""
    node = strip_parens(node)
    if node.type == "subscript":
        value = node.child_by_field_name("value")
        node = strip_parens(value) if value is not None else node
    if node.type != "attribute":
        return None
    obj = node.child_by_field_name("object")
    attr = node.child_by_field_name("attribute")
    if obj is None or attr is None or obj.type != "identifier" or ix.text(obj) != "self":
        return None
    return ix.text(attr)


def _graph_members(ix: FileIndex, region: CaptureRegion, meth: FuncInfo) -> set[str]:
    """The instance attributes that hold the captured graph: the capture's own `self.g` / `self.graphs[k]`, or
    where the capturing method stores its local graph afterwards (`self.graphs[bs] = g`)."""
    if region.kind == "capture_begin":
        f = region.site.child_by_field_name("function")
        expr = f.child_by_field_name("object") if f is not None else None
    else:
        pos = positional(region.site)
        expr = pos[0] if pos else None
    if expr is None:
        return set()
    own = _member_of(ix, expr)
    if own is not None:
        return {own}
    expr = strip_parens(expr)
    body = meth.body
    if expr.type != "identifier" or body is None:
        return set()
    g = ix.text(expr)
    out: set[str] = set()
    for n in scope_binding_nodes(body, ix.src.data):
        if n.type == "assignment" and n.start_byte >= region.end_byte:
            left, right = n.child_by_field_name("left"), n.child_by_field_name("right")
            if right is not None and strip_parens(right).type == "identifier" and ix.text(right) == g and left is not None:
                name = _member_of(ix, left)
                if name is not None:
                    out.add(name)
    return out


def _member_inputs(ix: FileIndex, region: CaptureRegion, graphs: set[str]) -> set[str]:
    """Attributes of `self` the captured statements read as tensors (passed, indexed, computed with) and do
    not assign: its static inputs. Called attributes (`self.model(...)`) and deeper chains (`self.a.b`) are not."""
    reads: dict[str, Node] = {}
    written: set[str] = set()
    for st in region.stmts:
        for n, p, gp in walk_with_parents(st):
            if n.type != "attribute":
                continue
            name = _member_of(ix, n)
            if name is None:
                continue
            holder = p if p is not None and p.type == "subscript" and p.child_by_field_name("value") == n else n
            hp = gp if holder is p else p
            if hp is not None and hp.type in ("assignment", "augmented_assignment") and hp.child_by_field_name("left") == holder:
                written.add(name)
            elif p is not None and (p.type == "attribute" or (p.type == "call" and p.child_by_field_name("function") == n)):
                continue
            else:
                reads.setdefault(name, holder)  # an entry of a dictionary of buffers: its kind, not the dict's
    out: set[str] = set()
    for name, node in reads.items():
        if name in written or name in graphs:
            continue
        if ix.kind(node).cat in ("tensor", "unknown"):
            out.add(name)
    return out
