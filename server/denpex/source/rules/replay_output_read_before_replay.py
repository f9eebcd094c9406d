"""replay-output-read-before-replay (DPX311): a graph's static output used right after the capture, before any
replay. Capturing records kernels without running them, so the output buffer holds whatever the allocator left
there (the first request of a lazily captured runner gets garbage).

The path is followed from the end of the capture (or from a call of the function that captures, for outputs
kept on `self`) through the statements that run next in that function, and stops at the first statement that
replays (`x.replay()` or a call of a function that does) or binds the output again. On the way, a use of the
output's value is reported: returned from a function that replays the same graph on its other path, or read
(`.item()`, `.clone()`, `.cpu()`, arithmetic, `print`)."""

from __future__ import annotations

import weakref
from collections.abc import Iterator

from tree_sitter import Node

from denpex.source.capture.regions import CaptureRegion
from denpex.source.engine.hits import Hit
from denpex.source.fixes import edits as F
from denpex.source.model import Fix
from denpex.source.resolve.index import FileIndex
from denpex.source.rules._api import Around, Hazard, RegionScan, SourceRule
from denpex.source.rules._frozen import local_replayers
from denpex.source.syntax.parse import run_query, walk

_HAZARD = "output-read-before-replay"
# methods that compute from the buffer's contents (views and detach() only alias it: not a read)
_READ_METHODS = frozenset({"item", "tolist", "cpu", "numpy", "clone", "float", "sum", "mean", "max", "min",
                           "argmax", "argmin", "softmax", "topk", "sort", "allclose", "equal"})
_READ_FUNCS = frozenset({"print", "float", "int", "bool"})
_MAX_CALLERS = 8


def _outputs(ix: FileIndex, region: CaptureRegion) -> set[str]:
    """The texts of the names and `self.` attributes the captured statements bind."""
    out: set[str] = set()
    for st in region.stmts:
        for n in walk(st):
            if n.type != "assignment":
                continue
            left = n.child_by_field_name("left")
            targets = [left] if left is not None and left.type != "pattern_list" else (
                left.named_children if left is not None else [])
            for t in targets:
                if t.type == "identifier" or (t.type == "attribute" and ix.text(t).startswith("self.")
                                              and "(" not in ix.text(t)):
                    out.add(ix.text(t))
    return out


def _next_stmts(stmt: Node) -> Iterator[Node]:
    """The statements that run after `stmt` in its function, on the straight path: its later siblings, then
    those of the enclosing statements (not past a loop, whose next pass may replay first). Lazily: the path is
    read only up to its first replay, not to the end of a module of many captures."""
    cur: Node | None = stmt
    while cur is not None:
        s = cur.next_named_sibling
        while s is not None:
            yield s
            s = s.next_named_sibling
        block = cur.parent
        owner = block.parent if block is not None else None
        if block is None or block.type != "block" or owner is None:
            break
        if owner.type in ("function_definition", "class_definition", "for_statement", "while_statement"):
            break
        if owner.type in ("elif_clause", "else_clause", "except_clause", "finally_clause"):
            owner = owner.parent
        if owner is None:
            break
        cur = owner


# callsites' query word for word (its capture named @f too): one compile of it per process, not two (~3 ms
# of a start)
_CALLED = "(call function: [(identifier) @f (attribute attribute: (identifier) @f)]) @c"
# the names called in a scope, once per file index and scope: asked for the scope of every capture, which in a
# module of many captures is the same module root each time
# (keyed by the tree's epoch too: a lazily parsed file's tree grows, and node ids are not kept across trees)
_SCOPE_CALLS: weakref.WeakKeyDictionary[FileIndex, dict[tuple[int, int], frozenset[str]]] = weakref.WeakKeyDictionary()


def _called(ix: FileIndex, node: Node) -> frozenset[str]:
    return frozenset(ix.text(c) for c in run_query(_CALLED, node).get("f", []))


def _replays(ix: FileIndex, stmt: Node, names: set[str], whole_scope: bool = False) -> bool:
    if whole_scope:
        per_file = _SCOPE_CALLS.setdefault(ix, {})
        key = (ix.src.epoch, stmt.id)
        called = per_file.get(key)
        if called is None:
            called = per_file[key] = _called(ix, stmt)
    else:  # one statement of the path: walked, no query per statement per capture
        called = frozenset(_call_names(ix, stmt))
    return "replay" in called or not called.isdisjoint(names)


def _call_names(ix: FileIndex, stmt: Node) -> list[str]:
    out: list[str] = []
    for n in walk(stmt):
        if n.type != "call":
            continue
        f = n.child_by_field_name("function")
        if f is not None and f.type == "attribute":
            f = f.child_by_field_name("attribute")
        if f is not None and f.type == "identifier":
            out.append(ix.text(f))
    return out


def _rebinds(ix: FileIndex, stmt: Node, outs: set[str]) -> bool:
    if stmt.type == "expression_statement" and stmt.named_child_count == 1:
        a = stmt.named_children[0]
        left = a.child_by_field_name("left") if a.type == "assignment" else None
        return left is not None and ix.text(left) in outs
    return False


def _returned(ix: FileIndex, stmt: Node, outs: set[str], replays_graph: bool) -> Node | None:
    """An output handed back by `return` from a function that replays the graph on its other path."""
    if stmt.type == "return_statement" and replays_graph:
        for n in walk(stmt):
            if n.type in ("identifier", "attribute") and ix.text(n) in outs:
                return n
    return None


def _read(ix: FileIndex, stmt: Node, outs: set[str]) -> Node | None:
    """The use of an output's value in `stmt`, if any."""
    for n in walk(stmt):
        if n.type not in ("identifier", "attribute") or ix.text(n) not in outs:
            continue
        p = n.parent
        if p is None:
            continue
        if p.type == "attribute" and p.child_by_field_name("object") == n:
            m = p.child_by_field_name("attribute")
            call = p.parent
            if m is not None and ix.text(m) in _READ_METHODS and call is not None and call.type == "call":
                return n
        elif p.type in ("binary_operator", "comparison_operator", "unary_operator"):
            ops = {ix.text(c) for c in p.children if not c.is_named}
            if p.type == "comparison_operator" and any(o.split()[0] in ("is", "not", "in") for o in ops):
                continue  # `captured is static_out`: identity, not the buffer's values
            if ix.kind(n).tensor:
                return n
        elif p.type == "argument_list":
            call = p.parent
            f = call.child_by_field_name("function") if call is not None else None
            if f is not None and f.type == "identifier" and ix.text(f) in _READ_FUNCS and ix.kind(n).tensor:
                return n
    return None


def _scan_path(scan: RegionScan, ix: FileIndex, start: Node, outs: set[str], graph: str, rep: set[str],
               fix_graph: str | None) -> None:
    fn = ix.enclosing_function(start)
    scope = fn.node if fn is not None else ix.src.root
    # a function that also replays: what it returns is the result of a run, not a buffer handed to a caller
    replays_graph = _replays(ix, scope, rep - ({fn.name} if fn is not None else set()), whole_scope=True)
    for st in _next_stmts(start):
        if _replays(ix, st, rep):
            return
        ret = _returned(ix, st, outs, replays_graph)
        hit = ret if ret is not None else _read(ix, st, outs)
        if hit is not None:
            region = scan.region
            fixes: list[Fix] = []
            if fix_graph is not None:
                col = st.start_point[1]
                fx = F.fix(f"Replay the graph once before its output is used ({fix_graph}.replay())", "unsafe",
                           [F.insert_at(st.start_point[0], col, f"{fix_graph}.replay()\n{' ' * col}")])
                if fx is not None:
                    fixes.append(fx)
            what = (f"`{ix.text(hit)}` is a static output of the graph captured at line {region.line + 1}; no replay "
                    "has run since the capture, which records kernels without running them, so it holds garbage")
            if ret is not None:
                # whether the caller uses it is not shown here: a capture-phase dummy run discards it
                scan.sink(Hit(_HAZARD, ix, hit, region, (), fixes, "warning", (
                    f"{what}, and it is returned as this call's result (silently wrong unless the caller discards "
                    "the result of the capturing call)")))
            else:
                scan.sink(Hit(_HAZARD, ix, hit, region, (), fixes, None, f"{what} (silently wrong)"))
            return
        if _rebinds(ix, st, outs):
            return


def _before_replay(scan: RegionScan) -> None:
    region = scan.region
    if region.kind not in ("graph", "capture_begin", "wrapper") or not region.graph_name:
        return
    ix = region.ix
    outs = _outputs(ix, region)
    if not outs:
        return
    graph = region.graph_name
    rep = local_replayers(ix)
    end = region.end_stmt if region.kind == "capture_begin" and region.end_stmt is not None else region.anchor
    fn = ix.enclosing_function(region.anchor)
    _scan_path(scan, ix, end, outs, graph, rep - ({fn.name} if fn is not None else set()), graph)
    # outputs kept on `self`: the methods of the class that call the capturing method, after that call (not
    # when the capturing method replays itself)
    selfs = {o for o in outs if o.startswith("self.")}
    if fn is None or fn.class_name is None or not selfs or not graph.startswith("self.") or fn.name in rep:
        return
    ix.src.need_word(fn.name)  # every self.<method>() call in the tree, also in a lazily parsed file
    calls = run_query("(call function: (attribute object: (identifier) @o attribute: (identifier) @m)) @c",
                      ix.src.root)
    n = 0
    for c, o, m in zip(calls.get("c", []), calls.get("o", []), calls.get("m", []), strict=False):
        if ix.text(o) != "self" or ix.text(m) != fn.name:
            continue
        caller = ix.enclosing_function(c)
        if caller is None or caller.class_name != fn.class_name or caller.node.id == fn.node.id:
            continue
        st = ix.src.nav.statement_of(c)
        if st.type != "expression_statement":
            continue
        n += 1
        if n > _MAX_CALLERS:
            return
        _scan_path(scan, ix, st, selfs, graph, rep - {fn.name}, graph)


RULE = SourceRule(
    id="replay-output-read-before-replay",
    hazards=(Hazard(_HAZARD, eager_fallback=False),),
    around=(Around(145, _before_replay),),
)
