"""cuda-906-legacy-stream-dependency (DPX107): `out = step()` on the default stream before the side-stream warm-up,
where step() runs backward and returns a tensor, and the capture runs step() again while `out` is alive: `out`
keeps the autograd graph, so the parameters' AccumulateGrad nodes stay on the legacy stream and the captured
backward raises 906. The same for an eager step written out in the capture's function (`loss = ...;
loss.backward()` in an earlier loop iteration's branch, or before the capture), whose results are still bound when
the capture runs."""

from __future__ import annotations

from tree_sitter import Node

from denpex.source.capture.regions import (
    CaptureRegion,
    is_inside_stream_context,
    opens_stream_context,
)
from denpex.source.engine.facts import bound_names, siblings
from denpex.source.engine.hits import Hit
from denpex.source.fixes import edits as F
from denpex.source.resolve.callgraph import EMPTY_ENV, Resolver
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


# ---- the inline form: `loss = ...; loss.backward()` written out in the capture's function ---------------------
_LOOPS = ("for_statement", "while_statement")


def _runs_backward(ix: FileIndex, region: CaptureRegion, resolver: Resolver) -> bool:
    """The capture runs `.backward()`: in its statements, or in a function of its file that they call."""
    for st in region.stmts:
        for n in walk(st):
            if n.type != "call":
                continue
            if _is_backward(ix, n):
                return True
            for t in resolver.resolve_call(ix, n, EMPTY_ENV):
                if t.ix is ix and t.func.body is not None and any(
                        m.type == "call" and _is_backward(ix, m) for m in walk(t.func.body)):
                    return True
    return False


def _is_backward(ix: FileIndex, call: Node) -> bool:
    f = call.child_by_field_name("function")
    attr = f.child_by_field_name("attribute") if f is not None and f.type == "attribute" else None
    return attr is not None and ix.text(attr) == "backward"


def _chain(stmt: Node, top: Node) -> list[Node]:
    """`stmt` and its ancestors below `top`, innermost first."""
    out = []
    n: Node | None = stmt
    while n is not None and n.id != top.id:
        out.append(n)
        n = n.parent
    return out


def _after(stmt: Node, top: Node) -> list[Node]:
    """The statements that run after `stmt` up to the end of block `top`: at each level, the later statements of
    its block (the other clauses of an `if` are no statements of a block, so they are not on the way)."""
    out: list[Node] = []
    for n in _chain(stmt, top):
        p = n.parent
        if p is not None and p.type in ("block", "module"):
            s = n.next_named_sibling
            while s is not None:
                out.append(s)
                s = s.next_named_sibling
    return out


def _before(stmt: Node, top: Node) -> list[Node]:
    """The statements that run before `stmt` from the start of block `top`, as `_after` does."""
    out: list[Node] = []
    for n in _chain(stmt, top):
        p = n.parent
        if p is not None and p.type in ("block", "module"):
            s = n.prev_named_sibling
            while s is not None:
                out.append(s)
                s = s.prev_named_sibling
    return out


def _path(back: Node, anchor: Node, owner_body: Node) -> list[Node] | None:
    """The statements on the way from the eager statement `back` to the capture statement `anchor` (straight on
    when the capture comes later in a block that holds both, else round a loop that holds both), or None when the
    capture cannot run after it."""
    n: Node = back
    while n.parent is not None and n.id != owner_body.id:
        p = n.parent
        if p.type in ("block", "module") and p.start_byte <= anchor.start_byte < p.end_byte:
            a_chain = _chain(anchor, p)
            here = a_chain[-1] if a_chain else anchor
            if here.id != n.id and n.end_byte <= here.start_byte:
                between: list[Node] = []
                s = n.next_named_sibling
                while s is not None and s.id != here.id:
                    between.append(s)
                    s = s.next_named_sibling
                return _after(back, n) + between + _before(anchor, here)
            break
        n = p
    loop = back.parent
    while loop is not None and loop.id != owner_body.id:
        if loop.type in _LOOPS and loop.start_byte <= anchor.start_byte < loop.end_byte:
            body = loop.child_by_field_name("body")
            return _after(back, body) + _before(anchor, body) if body is not None else None
        loop = loop.parent
    return None


def _holders(ix: FileIndex, back_stmt: Node, name: str) -> list[tuple[str, Node]]:
    """The names that hold the eager autograd graph that `name.backward()` ran: `name` (bound earlier in the same
    block to a computed value) and the call results its value was computed from in that block (`out = model(x)`
    before `loss = F.mse_loss(out, y)`), each with its assignment."""
    bound: dict[str, Node] = {}
    s = back_stmt.prev_named_sibling
    while s is not None:
        asg = s.named_children[0] if s.type == "expression_statement" and s.named_children else None
        if asg is not None and asg.type == "assignment":
            left, right = asg.child_by_field_name("left"), asg.child_by_field_name("right")
            if left is not None and left.type == "identifier" and right is not None:
                bound.setdefault(ix.text(left), asg)
        s = s.prev_named_sibling
    asg = bound.get(name)
    right = asg.child_by_field_name("right") if asg is not None else None
    if asg is None or right is None or not _computed(ix, right):
        return []
    out = [(name, asg)]
    for n in walk(right):
        if n.type == "identifier" and ix.text(n) in bound and ix.text(n) != name:
            dep = bound[ix.text(n)]
            dr = dep.child_by_field_name("right")
            if dep.start_byte < asg.start_byte and dr is not None and dr.type == "call" and _computed(ix, dr) and all(
                    d.id != dep.id for _n, d in out):
                out.append((ix.text(n), dep))
    return out


def _computed(ix: FileIndex, right: Node) -> bool:
    """A value computed by a call that can carry an autograd graph (not `.item()`, `.detach()`, ...)."""
    return any(n.type == "call" for n in walk(right)) and not ix.text(right).endswith(_DETACHED_RETURNS)


def _released(ix: FileIndex, name: str, stmts: list[Node]) -> bool:
    """One of `stmts` rebinds or deletes `name` (wherever in it: a conditional release counts, to stay quiet)."""
    for st in stmts:
        for n in walk(st):
            if n.type != "identifier" or ix.text(n) != name:
                continue
            m, p = n, n.parent
            while p is not None and p.type in ("pattern_list", "tuple_pattern", "list_pattern", "expression_list"):
                m, p = p, p.parent
            if p is None:
                continue
            if p.type in ("assignment", "for_statement") and p.child_by_field_name("left") == m:
                return True
            if p.type == "delete_statement" or (p.parent is not None and p.parent.type == "delete_statement"):
                return True
    return False


def _inline_eager(scan: RegionScan) -> None:
    """An eager forward/backward written out in the capture's function on the default stream (`loss = ...;
    loss.backward()`), whose results are still bound when the capture runs."""
    region, resolver = scan.region, scan.resolver
    ix = region.ix
    if region.kind not in ("graph", "capture_begin", "wrapper") or not ix.has(b".backward("):
        return
    anchor = region.anchor
    scope = ix.scope_of(anchor).node
    body = scope if scope.type == "module" else scope.child_by_field_name("body")
    if body is None or anchor.parent is None or anchor.parent.type not in ("block", "module"):
        return
    if scope.type != "module":
        ix.touched.append((scope.start_byte, scope.end_byte))
    lo, hi = anchor.start_byte, region.end_byte
    found: list[tuple[Node, Node, list[tuple[str, Node]]]] = []
    for ident in identifiers(ix, "backward", body.start_byte, body.end_byte):
        attr = ident.parent
        call = attr.parent if attr is not None and attr.type == "attribute" else None
        stmt = call.parent if call is not None and call.type == "call" else None
        obj = attr.child_by_field_name("object") if attr is not None else None
        if (stmt is None or stmt.type != "expression_statement" or obj is None or obj.type != "identifier"
                or attr is None or attr.child_by_field_name("attribute") != ident):
            continue
        d = def_of(stmt)
        if d is None or d.id != scope.id or in_nested_definition(stmt, scope) or lo <= stmt.start_byte < hi:
            continue
        if is_inside_stream_context(ix, stmt):
            continue  # the side-stream warm-up
        holders = _holders(ix, stmt, ix.text(obj))
        path = _path(stmt, anchor, body) if holders else None
        if path is None:
            continue
        alive = [(n, a) for n, a in holders if not _released(ix, n, path)]
        if alive:
            found.append((stmt, anchor, alive))
            break
    if not found or not _runs_backward(ix, region, resolver):
        return
    back, _a, alive = found[0]
    names = ", ".join(n for n, _ in alive)
    line = ix.src.start(back)[0] + 1
    cap = ix.src.start(region.site)[0] + 1
    scan.sink(Hit("eager-graph-on-legacy-stream", ix, alive[0][1], region, (), [], None,
                  f"{names} still hold{'s' if len(alive) == 1 else ''} the autograd graph of the eager backward on "
                  f"the default (legacy) stream (line {line}) when the capture at line {cap} runs: the parameters' "
                  "AccumulateGrad nodes stay on the legacy stream, and the captured backward raises 'operation would "
                  "make the legacy stream depend on a capturing blocking stream' (906); `del` them after the eager "
                  "step, or run the eager steps on the side stream"))


RULE = SourceRule(
    id="cuda-906-legacy-stream-dependency",
    hazards=(Hazard("eager-graph-on-legacy-stream"),),
    around=(Around(60, _legacy_step), Around(61, _inline_eager)),
)
