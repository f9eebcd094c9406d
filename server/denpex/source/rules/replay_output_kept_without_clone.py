"""replay-output-kept-without-clone (DPX302): a captured output aliased (`prev = out`) after a replay and read, or
stored, where a later replay has overwritten it. An alias consumed before the next replay (`dets = out`, read in
the same loop iteration) shows the values it was taken for: no finding.

Also (static-output-collected) a static output collected across the iterations of a loop that replays
(`outs.append(static_out)`, `d[i] = static_out`), in a function that replays the graph, or returned by such a
function (`return self.static_out`) to a caller that keeps it in a loop (`store.add(runner.encode(x))`): every
entry is the one output buffer, holding the last replay's values."""

from __future__ import annotations

from bisect import bisect_left

from tree_sitter import Node

from denpex.source.engine.hits import Hit
from denpex.source.fixes import edits as F
from denpex.source.resolve.index import FileIndex
from denpex.source.rules._api import Around, Hazard, RegionScan, ReplaySide, SourceRule
from denpex.source.rules._frozen import where
from denpex.source.rules._frozen_outputs import (
    Kept,
    callers,
    calls_by_text,
    kept_across_iterations,
    reads_by_text,
    returned,
    within,
)
from denpex.source.syntax.mentions import def_of, identifiers
from denpex.source.syntax.parse import walk

_HAZARD = "static-output-aliased"
_COLLECTED = "static-output-collected"
# calls that keep their argument (a container that outlives the iteration)
_KEEPERS = frozenset({"append", "extend", "insert", "add", "put", "put_nowait", "appendleft", "setdefault", "update"})
_CONTAINERS = frozenset({"list", "tuple", "set", "dictionary", "pair", "expression_list"})


def _aliased(scan: RegionScan) -> None:
    side = scan.replay_side
    if side is None:
        return
    ix = scan.region.ix
    for n in side.followed("alias", side.outputs_q):
        if (_HAZARD, n.id) in side.seen:
            continue
        rr = n.child_by_field_name("right")
        if rr is not None and side.first_replay < n.start_byte and _kept(ix, side, n):
            fx = F.fix("Clone the static output before the next replay", "unsafe",
                       [F.replace_node(ix, rr, f"{ix.text(rr)}.clone()")])
            side.seen.add((_HAZARD, n.id))
            scan.sink(Hit(_HAZARD, ix, n, scan.region, (), [fx] if fx else []))


def _loops(node: Node, owner: Node) -> list[Node]:
    """The loops that hold `node` inside its scope `owner`, innermost first."""
    out: list[Node] = []
    p = node.parent
    while p is not None and p.id != owner.id:
        if p.type in ("for_statement", "while_statement"):
            out.append(p)
        p = p.parent
    return out


def _replay_in(replays: list[Node], start: int, end: int) -> bool:
    i = bisect_left(replays, start, key=lambda r: r.start_byte)
    return i < len(replays) and replays[i].start_byte < end


def _kept(ix: FileIndex, side: ReplaySide, alias: Node) -> bool:
    """The alias's name is read (or stored) where a replay of the graph may have run since the alias was taken,
    with no rebinding of the name on the way. Anything not understood (an attribute or item target, a
    module-level name that a function reads) keeps the finding."""
    left = alias.child_by_field_name("left")
    if left is None or left.type != "identifier":
        return True
    owner = def_of(alias)
    if owner is None:
        return True
    name = ix.text(left)
    reps = side.replays
    uses = _uses(ix, owner, name)
    if uses is None:
        return True  # a nested function reads this very name (a closure, a global): not followed
    reads, escapes, binds = uses
    loops = _loops(alias, owner)
    own = left.start_byte

    def clear(a: int, b: int) -> bool:  # no rebinding of the name in [a, b) but the alias's own
        i = bisect_left(binds, a, key=lambda m: m.start_byte)
        while i < len(binds) and binds[i].start_byte < b:
            if binds[i].start_byte != own:
                return False
            i += 1
        return True

    if any(side.replay_follows(m) for m in escapes):
        return True
    for m in reads:
        at = m.start_byte
        if at > alias.end_byte and _replay_in(reps, alias.end_byte, at) and clear(alias.end_byte, at):
            return True  # a replay between the alias and the read, in document order
        for loop in loops:
            if not loop.start_byte <= at < loop.end_byte:  # read after the loop
                if at < loop.end_byte or not clear(alias.end_byte, at):
                    continue
                # its last iteration replayed after the alias, or replayed and skipped a conditional alias
                if _replay_in(reps, alias.end_byte, loop.end_byte) or (
                        _skippable(alias, loop) and clear(loop.start_byte, alias.start_byte)
                        and _replay_in(reps, loop.start_byte, loop.end_byte)):
                    return True
                continue
            # read in a later iteration: alias -> end of the body -> start of the body -> read
            replayed = _replay_in(reps, alias.end_byte, loop.end_byte) or _replay_in(reps, loop.start_byte, at)
            if not replayed or not clear(alias.end_byte, loop.end_byte) or not clear(loop.start_byte, at):
                continue
            if at < alias.start_byte or _skippable(alias, loop):
                return True  # (a read after an alias that every iteration runs sees that iteration's alias)
    return False


def _uses(ix: FileIndex, owner: Node, name: str) -> tuple[list[Node], list[Node], list[Node]] | None:
    """The mentions of `name` in scope `owner`: (reads, reads that keep the value, bindings), in document order,
    or None when a nested function reads the scope's own variable; found once per file index, scope and name
    (a module of many captures asks for the same names again and again)."""
    ix.touched.append((owner.start_byte, owner.end_byte))
    tables = [ix.scope_tables.setdefault((f"dpx302-{t}", owner.id), {}) for t in ("reads", "escapes", "binds")]
    reads_t, escapes_t, binds_t = tables
    if name not in reads_t:
        reads: list[Node] = []
        escapes: list[Node] = []
        binds: list[Node] = []
        closure = False
        for m in identifiers(ix, name, owner.start_byte, owner.end_byte):
            d = def_of(m)
            if d is None:
                continue
            if d.id != owner.id:
                _assign, scope, _param = ix.lookup(name, m)
                closure = closure or (scope is not None and scope.node.id == owner.id)
                continue  # else a nested function's own variable of that name
            (binds if _rebinds(m) else escapes if _escapes(ix, m) else reads).append(m)
        reads_t[name], escapes_t[name], binds_t[name] = reads, escapes, binds
        if closure:
            binds_t[name + " closure"] = []
    if name + " closure" in binds_t:
        return None
    return reads_t[name], escapes_t[name], binds_t[name]


def _skippable(node: Node, loop: Node) -> bool:
    """`node` may be skipped by an iteration of `loop`: a branch, handler or match arm lies between them."""
    p = node.parent
    while p is not None and p.id != loop.id:
        if p.type in ("if_statement", "elif_clause", "else_clause", "try_statement", "except_clause",
                      "case_clause", "conditional_expression", "boolean_operator", "for_statement",
                      "while_statement"):
            return True
        p = p.parent
    return False


def _rebinds(m: Node) -> bool:
    """`name = ...` / `for name in ...` / `name, x = ...`: the mention binds the name."""
    p = m.parent
    while p is not None and p.type in ("pattern_list", "tuple_pattern", "list_pattern"):
        m, p = p, p.parent
    if p is None:
        return False
    if p.type in ("assignment", "augmented_assignment") and p.child_by_field_name("left") == m:
        return p.type == "assignment"
    return p.type == "for_statement" and p.child_by_field_name("left") == m


def _escapes(ix: FileIndex, m: Node) -> bool:
    """The value is kept somewhere that outlives the read: another name, an attribute, an item, a container, a
    keeping call (`outs.append(name)`) or a generator's consumer."""
    n, p = m, m.parent
    while p is not None and p.type in _CONTAINERS | {"parenthesized_expression"}:
        n, p = p, p.parent
    if p is None:
        return False
    if p.type == "assignment" and p.child_by_field_name("right") == n:
        return True
    if p.type == "argument_list" and p.parent is not None and p.parent.type == "call":
        f = p.parent.child_by_field_name("function")
        attr = f.child_by_field_name("attribute") if f is not None and f.type == "attribute" else None
        return attr is not None and ix.text(attr) in _KEEPERS
    # yielded: the consumer may keep it while the generator replays again (`list(gen())`)
    return p.type == "yield"  # else read, passed to a call or returned: consumed where it is


def _outputs_of(scan: RegionScan) -> set[str]:
    """The names and attributes the captured statements bind (`static_out`, `self.static_vecs`, tuple targets)."""
    ix = scan.region.ix
    out: set[str] = set()
    for st in scan.region.stmts:
        for n in walk(st):
            if n.type != "assignment":
                continue
            left = n.child_by_field_name("left")
            if left is None:
                continue
            targets = left.named_children if left.type in ("pattern_list", "tuple_pattern") else [left]
            out.update(ix.text(t) for t in targets if t.type in ("identifier", "attribute"))
    return out


def _collected(scan: RegionScan) -> None:
    region = scan.region
    g = region.graph_name
    if region.kind not in ("graph", "capture_begin", "wrapper") or not g:
        return
    ix = region.ix
    outputs = _outputs_of(scan)
    if not outputs:
        return
    start, end = _bounds(ix, region.anchor, region.end_byte, g)
    if start >= end:
        return
    ix.touched.append((start, end))
    ix.src.need_word("replay", start, end)  # a lazily parsed file: the replays and reads must be in the tree
    for text in outputs:
        ix.src.need_word(text.rsplit(".", 1)[-1], start, end)
    anchor = region.anchor
    replays = within(calls_by_text(ix).get(f"{g}.replay"), start, end)
    loops: dict[int, Node] = {}
    fns: dict[int, Node] = {}
    for r in replays:
        loop = _loop_of_call(r)
        if loop is not None and not (loop.start_byte <= anchor.start_byte < loop.end_byte):
            loops[loop.id] = loop
        fn = ix.enclosing_function(r)
        if fn is not None:
            fns[fn.node.id] = fn.node
    seen: set[tuple[str, int]] = set()
    reads = reads_by_text(ix)
    for loop in loops.values():
        for text in sorted(outputs):
            for v in within(reads.get(text), loop.start_byte, loop.end_byte):
                if region.site.start_byte <= v.start_byte < region.end_byte or _binding(v):
                    continue  # the capture itself, or a write
                k = kept_across_iterations(ix, v, follow=False)
                if k is not None:
                    _report(scan, k, text, None, seen)
    for fn_node in fns.values():
        ret = returned(ix, fn_node, outputs, set())
        info = ix.by_node.get(fn_node.id)
        if ret is None or info is None:
            continue
        for fx, call in callers(scan.resolver, ix, info.name, info.class_name):
            k = kept_across_iterations(fx, call)
            if k is not None:
                _report(scan, k, ix.text(ret.named_children[0]),
                        f"{info.name}() ({where(ix, fn_node)}) returns it after each replay", seen)


def _bounds(ix: FileIndex, anchor: Node, after: int, g: str) -> tuple[int, int]:
    """Where replays of this capture's graph are looked for: the class for a graph held on `self` (its methods
    replay it), else the capture's scope after the capture, up to the next capture of the same graph name."""
    if g.startswith("self."):
        p = anchor.parent
        while p is not None and p.type != "class_definition":
            p = p.parent
        if p is not None:
            return p.start_byte, p.end_byte
    scope = ix.scope_of(anchor).node
    end = scope.end_byte
    data = ix.src.data
    word = g.encode()
    for pat in (b"graph(" + word, word + b".capture_begin("):
        i = data.find(pat, after, end)
        while i != -1 and pat.startswith(b"graph(") and i + len(pat) < len(data) and (
                chr(data[i + len(pat)]).isalnum() or data[i + len(pat)] == ord("_")):
            i = data.find(pat, i + 1, end)  # `graph(g2` is another graph
        if i != -1:
            end = min(end, i)
    return after, end


def _loop_of_call(node: Node) -> Node | None:
    p = node.parent
    while p is not None and p.type not in ("function_definition", "class_definition", "lambda", "module"):
        if p.type in ("for_statement", "while_statement"):
            return p
        p = p.parent
    return None


def _binding(v: Node) -> bool:
    """`v` is written, not read: an assignment's target (or part of one), or an attribute's object of a longer
    chain that `run_query` also lists (`self` in `self.static_out`)."""
    p = v.parent
    if p is not None and p.type == "attribute" and p.child_by_field_name("attribute") == v:
        return True
    while p is not None and p.type in ("pattern_list", "tuple_pattern"):
        v, p = p, p.parent
    return p is not None and p.type in ("assignment", "augmented_assignment") and p.child_by_field_name("left") == v


def _report(scan: RegionScan, k: Kept, what: str, via: str | None, seen: set[tuple[str, int]]) -> None:
    key = (k.ix.path, k.node.id)
    if key in seen:
        return
    seen.add(key)
    text = k.ix.text(k.value)
    clone = f"{text}.clone()" if k.value.type in ("identifier", "call", "subscript", "attribute") else f"({text}).clone()"
    fx = F.fix("Clone kept outputs", "unsafe", [F.replace_node(k.ix, k.value, clone)], in_place=True)
    how = f" ({via})" if via else ""
    msg = (f"The static output `{what}`{how} is kept across loop iterations at {where(k.ix, k.node)} ({k.label}): "
           "every replay writes the same buffer, so every kept entry ends up holding the last replay's values "
           "(silently wrong): clone() what you keep")
    scan.sink(Hit(_COLLECTED, k.ix, k.node, scan.region, (), [fx] if fx else [], None, msg))


RULE = SourceRule(
    id="replay-output-kept-without-clone",
    hazards=(Hazard(_HAZARD), Hazard(_COLLECTED, eager_fallback=False)),
    around=(Around(90, _aliased), Around(91, _collected)),
)
