"""The replays of a captured graph: every `g.replay()` statement a fix may rewrite, or None when the graph's
uses are not all understood (see `graph_replays`)."""

from __future__ import annotations

from tree_sitter import Node

from denpex.source.capture.regions import CaptureRegion
from denpex.source.fixes import edits as F
from denpex.source.resolve.callgraph import Resolver
from denpex.source.resolve.index import FileIndex, Scope, positional
from denpex.source.syntax.mentions import def_of, identifiers, in_nested_definition
from denpex.source.syntax.parse import strip_parens


def graph_node(region: CaptureRegion) -> Node | None:
    """The identifier naming the captured graph at the capture site (None for an attribute, a call...)."""
    if region.kind == "graph":
        pos = positional(region.site)
        node = strip_parens(pos[0]) if pos else None
    elif region.kind == "capture_begin":
        f = region.site.child_by_field_name("function")
        node = f.child_by_field_name("object") if f is not None else None
    else:
        return None
    return node if node is not None and node.type == "identifier" else None


def graph_replays(region: CaptureRegion, resolver: Resolver | None = None) -> list[Node] | None:
    """Every `g.replay()` of the region's graph: expression statements of their own rows in the capture's scope
    (loop, branch and `with` bodies included), in document order.

    None (the caller then offers no fix that depends on the replays) unless every use of the graph's name that
    resolves to the capture's binding is understood: the construction `g = torch.cuda.CUDAGraph()`, this one
    capture, and such replay statements. A graph that is a parameter, an attribute or item (`self.g`,
    `graphs[k]`), a global of another scope, captured twice, passed, returned, stored, replayed from a nested
    function, a lambda or a comprehension, or whose `replay` is used as a value, or a module-level graph that
    another workspace file may import, may be replayed where this file cannot rewrite it; a graph never
    replayed here gets None too."""
    ix = region.ix
    gnode = graph_node(region)
    if gnode is None:
        return None
    g = ix.text(gnode)
    owner = ix.scope_of(region.anchor)
    if g in owner.globals:
        return None
    assign, scope, is_param = ix.lookup(g, gnode)
    if scope is not owner or is_param or assign is None:
        return None
    if owner.node.type == "module":
        ix.watched.add(g)  # any function of the file may mention it
        if resolver is not None and resolver.imported_elsewhere is not None and resolver.imported_elsewhere(ix.path, g):
            return None
    else:
        ix.touched.append((owner.node.start_byte, owner.node.end_byte))
    capture_spans = [(region.site.start_byte, region.site.end_byte)]
    if region.kind == "capture_begin":
        capture_spans.append((region.anchor.start_byte, region.anchor.end_byte))
        if region.end_stmt is None:
            return None
        capture_spans.append((region.end_stmt.start_byte, region.end_stmt.end_byte))
    replays: list[Node] = []
    # the lookups below build the scopes of nested functions as a side effect; those are no dependency of the
    # answer (an edit that could change it spells the name, and watched names make such an edit non-local)
    mark, emark = len(ix.touched), len(ix.attr_deps)
    try:
        for n in identifiers(ix, g, owner.node.start_byte, owner.node.end_byte):
            if not _replay_use(ix, region, n, g, owner, capture_spans, replays):
                return None
    finally:
        del ix.touched[mark:]
        del ix.attr_deps[emark:]
    return replays or None


def _replay_use(ix: FileIndex, region: CaptureRegion, n: Node, g: str, owner: Scope,
                capture_spans: list[tuple[int, int]], replays: list[Node]) -> bool:
    """Classify one mention of the graph's name: False when it is a use no fix can account for; a replay
    statement is appended to `replays`."""
    p = n.parent
    if p is None:
        return True
    if (p.type == "attribute" and p.child_by_field_name("attribute") == n) or (
        p.type == "keyword_argument" and p.child_by_field_name("name") == n
    ):
        return True  # `x.g`, `f(g=...)`: not the variable
    if ix.lookup(g, n)[1] is not owner:
        return True  # another scope's own `g`
    d = def_of(n)
    direct = d is not None and d.id == owner.node.id and not in_nested_definition(n, owner.node)
    if any(a <= n.start_byte and n.end_byte <= b for a, b in capture_spans):
        return True
    if direct and p.type == "assignment" and p.child_by_field_name("left") == n:
        right = p.child_by_field_name("right")
        f = strip_parens(right).child_by_field_name("function") if right is not None and strip_parens(right).type == "call" else None
        q = ix.qualname(f) if f is not None else None
        return q is not None and q.endswith("cuda.CUDAGraph")  # constructing a graph is harmless without a capture
    call = p.parent if p.type == "attribute" and p.child_by_field_name("object") == n else None
    stmt = call.parent if call is not None and call.type == "call" else None
    attr = p.child_by_field_name("attribute")
    args = call.child_by_field_name("arguments") if call is not None else None
    if (
        direct and call is not None and stmt is not None and stmt.type == "expression_statement"
        and stmt.named_child_count == 1 and attr is not None and ix.text(attr) == "replay"
        and call.child_by_field_name("function") == p and args is not None and args.named_child_count == 0
        and not (region.anchor.start_byte <= stmt.start_byte < region.end_byte)
        and F.owns_lines(ix, stmt)
    ):
        replays.append(stmt)
        return True
    return False
