"""replay-frozen-python-scalar (DPX303): a Python scalar read by the capture and changed afterwards: the graph
baked its value at capture; replays never see the change.

Code fixes (unsafe): the static buffer (a 0-dim device tensor updated with fill_()), and, where the value takes
few hashable values, one graph per value in a dict (_recapture_fix.py). A replay of a graph taken from a dict
keyed by the value (`g, out = graphs[k]`) replays that value's own capture and is not reported."""

from __future__ import annotations

from tree_sitter import Node

from denpex.source.capture.regions import CaptureRegion
from denpex.source.engine.around import union
from denpex.source.engine.hits import Hit
from denpex.source.fixes import edits as F
from denpex.source.model import Fix
from denpex.source.resolve.index import FileIndex
from denpex.source.rules._api import Around, Hazard, RegionScan, SourceRule
from denpex.source.rules._recapture_fix import all_keyed, recapture_fix
from denpex.source.syntax.mentions import identifiers

_HAZARD = "python-scalar-baked"


def _baked(scan: RegionScan) -> None:
    side = scan.replay_side
    if side is None:
        return
    region = scan.region
    for name, node in side.inputs.items():
        if name not in side.inputs_q or side.kind_cat(node) != "scalar":
            continue
        later = union([side.followed("rebind", [name]), side.followed("aug", [name])])
        if later and region.graph_name is not None and all_keyed(
                region.ix, [r for r in side.replays if r.start_byte > region.end_byte], region.graph_name, name):
            continue  # each value replays its own graph
        if later and (_HAZARD, later[0].id) not in side.seen:
            side.seen.add((_HAZARD, later[0].id))
            fixes = [_scalar_fix(region, name, later), recapture_fix(region, scan.resolver, node, region.ix)]
            scan.sink(Hit(_HAZARD, region.ix, later[0], region, (), [fx for fx in fixes if fx is not None]))


_COUNTERS = ("range", "enumerate")
_HOST_ONLY = ("print", "info", "debug", "warning", "error", "log", "write", "set_description", "set_postfix")


def _loop_counter(scan: RegionScan) -> None:
    """`for i in range(n): if graph is None: capture(step(x, i)); graph.replay()`: the capture runs once, under
    a branch, and reads the loop's counter; every later pass rebinds it and replays a graph that kept the first
    pass's value (realistic r07's Euler sampler, whose sigma index was frozen at 0)."""
    side = scan.replay_side
    if side is None:
        return
    region = scan.region
    ix = region.ix
    a = region.anchor
    p = a.parent
    while p is not None and p.id != side.body.id:
        if p.type == "for_statement" and not side.recaptured_in(p):
            for name in _counter_names(ix, p):
                read = side.inputs.get(name)
                looped = [r for r in side.replays if a.end_byte < r.start_byte < p.end_byte]
                if read is None or _host_only(ix, read, a) or not looped:
                    continue
                if region.graph_name is not None and all_keyed(ix, looped, region.graph_name, name):
                    continue  # each value of the counter replays its own graph
                if (_HAZARD, read.id) not in side.seen:
                    side.seen.add((_HAZARD, read.id))
                    fx = recapture_fix(region, scan.resolver, read, ix)
                    scan.sink(Hit(_HAZARD, ix, read, region, (), [fx] if fx is not None else []))
        p = p.parent


def _counter_names(ix: FileIndex, loop: Node) -> list[str]:
    """The loop's integer counters: the target of `for i in range(...)` (also wrapped, `tqdm(range(n))`) and the
    index of `for i, v in enumerate(...)`."""
    left, right = loop.child_by_field_name("left"), loop.child_by_field_name("right")
    if left is None or right is None or right.type != "call":
        return []
    fn = right.child_by_field_name("function")
    name = ix.text(fn) if fn is not None else ""
    if name not in _COUNTERS:
        args = right.child_by_field_name("arguments")
        first = args.named_children[0] if args is not None and args.named_children else None
        inner = first.child_by_field_name("function") if first is not None and first.type == "call" else None
        if inner is None or ix.text(inner) != "range":
            return []
        name = "range"
    if name == "range":
        return [ix.text(left)] if left.type == "identifier" else []
    first_target = left.named_children[0] if left.type in ("pattern_list", "tuple_pattern") and left.named_children \
        else None
    return [ix.text(first_target)] if first_target is not None and first_target.type == "identifier" else []


def _host_only(ix: FileIndex, read: Node, stop: Node) -> bool:
    """The read is an argument of a logging or print call: a frozen value there changes no device work."""
    p = read.parent
    while p is not None and p.id != stop.id:
        if p.type == "call":
            fn = p.child_by_field_name("function")
            if fn is not None and ix.text(fn).rsplit(".", 1)[-1] in _HOST_ONLY:
                return True
        p = p.parent
    return False


def _scalar_fix(region: CaptureRegion, name: str, later: list[Node]) -> Fix | None:
    ix = region.ix
    assign, _scope, _p = ix.lookup(name, region.anchor)
    if assign is None or assign.value is None or assign.stmt.type != "assignment" or (
        assign.start_byte >= region.anchor.start_byte or any(n.id == assign.stmt.id for n in later)
    ):
        return None
    if not _tensor_safe_reads(region, name, assign.stmt, later):
        return None
    t = F.torch_alias(ix)
    edits = [F.replace_node(ix, assign.value, f'{t}.full((), {ix.text(assign.value)}, device="cuda")')]
    for n in later:
        right = n.child_by_field_name("right")
        if right is None:
            return None
        if n.type == "assignment":
            edits.append(F.replace_node(ix, n, f"{name}.fill_({ix.text(right)})"))
        else:
            op = next((c for c in n.children if not c.is_named), None)
            meth = {"+=": "add_", "-=": "sub_", "*=": "mul_", "/=": "div_"}.get(ix.text(op) if op is not None else "")
            if meth is None:
                return None
            edits.append(F.replace_node(ix, n, f"{name}.{meth}({ix.text(right)})"))
    return F.fix("Static buffer: keep the scalar in a 0-dim device tensor and update it in place (fill_())", "unsafe",
                 edits)


_ARITH = frozenset({"+", "-", "*", "/"})
_EXPR_UP = frozenset({"binary_operator", "parenthesized_expression", "unary_operator"})


def _tensor_safe_reads(region: CaptureRegion, name: str, first: Node, later: list[Node]) -> bool:
    """Every read of `name` in its scope is an operand of + - * /, and in the capture an expression assigned or
    returned whole: a 0-dim device tensor then computes the same. An int an op takes as a count or shift
    (`torch.roll(x, shifts=k)`, `x[:k]`, `range(k)`), a read by a called function or by other host code would
    break or change (the scalar fix is not offered there; re-capture per value may be)."""
    ix = region.ix
    scope = ix.scope_of(region.anchor).node
    own = {first.id, *(n.id for n in later)}
    inside = [(s.start_byte, s.end_byte) for s in region.stmts]
    reads = 0
    for m in identifiers(ix, name, scope.start_byte, scope.end_byte):
        st = m
        while st.parent is not None and st.type not in ("assignment", "augmented_assignment", "expression_statement",
                                                          "return_statement"):
            st = st.parent
        if st.id in own:
            continue  # a write of the value, or its right side (`k = k + 1`: the fix's fill_ keeps that host value)
        p = m.parent
        if p is None or p.type != "binary_operator":
            return False
        op = p.child_by_field_name("operator")
        if op is None or ix.text(op) not in _ARITH:
            return False
        if not any(a <= m.start_byte < b for a, b in inside):
            continue  # host arithmetic after the capture (`x * scale` to check a result) computes with the tensor
        while p.parent is not None and p.parent.type in _EXPR_UP:
            p = p.parent
        holder = p.parent
        if holder is None or holder.type not in ("assignment", "return_statement", "expression_statement"):
            return False
        if holder.type == "assignment" and holder.child_by_field_name("right") != p:
            return False
        reads += 1
    return reads > 0


RULE = SourceRule(
    id="replay-frozen-python-scalar",
    hazards=(Hazard(_HAZARD),),
    around=(Around(130, _baked), Around(131, _loop_counter)),
)
