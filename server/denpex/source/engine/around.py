"""Around a capture: the pass that runs the rules' `around` detectors once per capture region, and what they
share — the code after the capture in its scope, indexed once per file (`AroundIndex`), and the replay side
of a graph (`ReplaySide`: the names the capture reads and binds, the statements a replay follows)."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass, field

from tree_sitter import Node, QueryCursor

from denpex.source.capture.regions import CaptureRegion
from denpex.source.engine.hits import Sink
from denpex.source.resolve.callgraph import EMPTY_ENV, Resolver
from denpex.source.resolve.index import FileIndex
from denpex.source.rules import RuleSet
from denpex.source.syntax.mentions import def_of
from denpex.source.syntax.nav import walk_with_parents
from denpex.source.syntax.parse import compile_query, run_query_range, walk

# ---- around the region: the replay side -----------------------------------------------------------------------
_AROUND_QUERY = (
    "(call function: (attribute object: (identifier) @recv attribute: (identifier) @m"
    " (#any-of? @m \"replay\" \"copy_\" \"empty_cache\"))) @mcall\n"
    "(assignment left: (identifier) @lname) @rebind\n"
    "(assignment right: (identifier) @rname) @alias\n"
    "(augmented_assignment left: (identifier) @aname) @aug\n"
    "(delete_statement) @del\n"
)


@dataclass
class _ScopeNodes:
    """The statements of one scope that the replay side looks at, in document order, by name."""

    replays: dict[str, list[Node]] = field(default_factory=dict)  # `g.replay(` (spaceless call prefix) -> calls
    empty_cache: list[Node] = field(default_factory=list)  # `x.empty_cache(...)` calls
    copies: dict[str, list[Node]] = field(default_factory=dict)  # receiver -> `x.copy_(...)` calls
    rebind: dict[str, list[Node]] = field(default_factory=dict)  # `name = ...` by name
    alias: dict[str, list[Node]] = field(default_factory=dict)  # `... = name` by name
    aug: dict[str, list[Node]] = field(default_factory=dict)  # `name += ...` by name
    dels: dict[str, list[Node]] = field(default_factory=dict)  # `del ...` by each identifier it mentions
    looped: dict[int, list[Node]] = field(default_factory=dict)  # id of one of the lists above -> its nodes in a loop
    start: int = 0  # the nodes start at or after this byte


class AroundIndex:
    """What `around_region` needs from the code after each capture, computed once per file and scope (one query
    over the file, grouped by scope and name), so that a module with many captures is not rescanned per region.
    `seen` holds the (hazard, node) reports already made by an earlier region of the file: a later region's
    report of the same node is dropped as a duplicate anyway (the first report of a node and rule wins)."""

    def __init__(self, ix: FileIndex) -> None:
        self.ix = ix
        self._scopes: dict[int, _ScopeNodes] = {}
        self.seen: set[tuple[str, int]] = set()
        self._kinds: dict[int, str] = {}

    def scope_nodes(self, owner: Node, body: Node, start: int) -> _ScopeNodes:
        """The nodes of scope `owner` (a module or function, `body` its body), outside nested definitions, that
        start at or after byte `start` at least (captures come in document order: the first one's end is kept)."""
        if owner.type == "function_definition":
            self.ix.touched.append((owner.start_byte, owner.end_byte))
        sn = self._scopes.get(owner.id)
        if sn is None or start < sn.start:
            sn = self._scopes[owner.id] = _ScopeNodes(start=start)
            ix = self.ix
            caps = run_query_range(_AROUND_QUERY, ix.src.root, start, body.end_byte)
            for cap, nodes in caps.items():
                if cap not in ("mcall", "rebind", "alias", "aug", "del"):
                    continue
                for n in nodes:
                    d = def_of(n)
                    if n.start_byte < start or (d.id if d is not None else ix.src.root.id) != owner.id:
                        continue  # another scope's (a nested function's) statement
                    if cap == "mcall":
                        f = n.child_by_field_name("function")
                        attr = f.child_by_field_name("attribute") if f is not None else None
                        obj = f.child_by_field_name("object") if f is not None else None
                        m = ix.text(attr) if attr is not None else ""
                        if m == "replay":
                            t = ix.text(n).replace(" ", "")
                            sn.replays.setdefault(t[: t.find("(") + 1], []).append(n)
                        elif m == "empty_cache":
                            sn.empty_cache.append(n)
                        elif m == "copy_" and obj is not None:
                            sn.copies.setdefault(ix.text(obj), []).append(n)
                    elif cap == "del":
                        for name in {ix.text(c) for c in walk(n) if c.type == "identifier"}:
                            sn.dels.setdefault(name, []).append(n)
                    else:
                        side = n.child_by_field_name("right" if cap == "alias" else "left")
                        if side is not None:
                            getattr(sn, cap).setdefault(ix.text(side), []).append(n)
            sn.empty_cache.sort(key=lambda n: n.start_byte)
            lists = [sn.empty_cache]
            for table in (sn.replays, sn.copies, sn.rebind, sn.alias, sn.aug, sn.dels):
                for v in table.values():
                    v.sort(key=lambda n: n.start_byte)
                    lists.append(v)
            for v in lists:
                sn.looped[id(v)] = [n for n in v if enclosing_loop(n, body) is not None]
        return sn

    def start_region(self) -> None:
        """Forget the remembered kinds: each region records the code its own kind lookups consult."""
        self._kinds.clear()

    def kind_cat(self, node: Node) -> str:
        cat = self._kinds.get(node.id)
        if cat is None:
            cat = self._kinds[node.id] = self.ix.kind(node).cat
        return cat


def start_key(n: Node) -> int:
    return n.start_byte


def after(nodes: list[Node] | None, start: int) -> list[Node]:
    """The nodes (of one scope, sorted by start) that start at or after byte `start`."""
    if not nodes:
        return []
    return nodes[bisect_left(nodes, start, key=lambda n: n.start_byte):]


def after_names(table: dict[str, list[Node]], names: Iterable[str], start: int) -> list[Node]:
    """`after` of the nodes of several names, each node once, sorted by start."""
    return union([after(table.get(name), start) for name in names])


def union(lists: list[list[Node]]) -> list[Node]:
    """The nodes of several lists sorted by start, each once."""
    lists = [v for v in lists if v]
    if len(lists) <= 1:
        return lists[0] if lists else []
    return sorted({n.id: n for found in lists for n in found}.values(), key=lambda n: n.start_byte)



def enclosing_loop(node: Node, stop: Node) -> Node | None:
    p = node.parent
    while p is not None and p.id != stop.id:
        if p.type in ("for_statement", "while_statement"):
            return p
        p = p.parent
    return None


_TABLE_QUERIES = {
    # calls by the called name (`f(...)` and `x.f(...)`), for the warm-up check
    "calls": "(call function: [(identifier) @key (attribute attribute: (identifier) @key)]) @node",
    # calls by each identifier passed positionally, for the warm-up check
    "argcalls": "(call arguments: (argument_list (identifier) @key)) @node",
    # `f(...)` by the name f, for reduce-overhead outputs
    "named_calls": "(call function: (identifier) @key) @node",
}


def scope_table(ix: FileIndex, table: str, owner: Node) -> dict[str, list[Node]]:
    """Nodes of scope `owner` (not of nested functions) matched by one of `_TABLE_QUERIES`, by the text of their
    key, in document order; built once per file index and scope (a module with many captures is not queried
    again per capture)."""
    if owner.type == "function_definition":
        ix.touched.append((owner.start_byte, owner.end_byte))
    found = ix.scope_tables.get((table, owner.id))
    if found is None:
        found = ix.scope_tables[(table, owner.id)] = {}
        root_id = ix.src.root.id
        cursor = QueryCursor(compile_query(_TABLE_QUERIES[table]))
        cursor.set_byte_range(owner.start_byte, owner.end_byte)
        for _pattern, match in cursor.matches(owner):
            node, key = match.get("node"), match.get("key")
            if not node or not key:
                continue
            d = def_of(node[0])
            if (d.id if d is not None else root_id) == owner.id:
                found.setdefault(ix.text(key[0]), []).append(node[0])
        for v in found.values():
            v.sort(key=lambda n: n.start_byte)
    return found


def upto(nodes: list[Node] | None, end: int) -> list[Node]:
    """The nodes (sorted by start) that start before byte `end`."""
    if not nodes:
        return []
    return nodes[: bisect_left(nodes, end, key=lambda n: n.start_byte)]


_TABLES = ("rebind", "alias", "aug", "dels", "copies")
# statements between a capture and its loop that may skip it in a pass
_CONDITIONAL = frozenset({"if_statement", "elif_clause", "else_clause", "try_statement", "except_clause",
                          "finally_clause", "match_statement", "case_clause", "function_definition", "lambda"})


@dataclass
class ReplaySide:
    """A capture whose graph is replayed later in its scope: the names it reads that were bound before it
    (`inputs`; module globals read by callees in the file included) and the names it binds, and the statements
    of the scope after the capture (see `_ScopeNodes`)."""

    region: CaptureRegion
    index: AroundIndex
    sn: _ScopeNodes
    body: Node
    inputs: dict[str, Node]
    inputs_q: set[str]  # the names the query's #any-of? predicates took
    outputs_q: set[str]
    replays: list[Node]
    start: int
    first_replay: int
    last_replay: int
    seen: set[tuple[str, int]] = field(default_factory=set)

    def _table(self, table: str) -> dict[str, list[Node]]:
        if table == "empty_cache":
            return {"": self.sn.empty_cache}
        if table not in _TABLES:
            raise KeyError(table)
        found: dict[str, list[Node]] = getattr(self.sn, table)
        return found

    def replay_follows(self, node: Node) -> bool:
        """A replay of the graph runs after `node`: a later replay, or one in the loop that holds it."""
        if self.last_replay > node.end_byte:
            return True
        loop = enclosing_loop(node, self.body)
        if loop is None or self.recaptured_in(loop):
            return False
        reps = self.replays
        i = bisect_left(reps, max(self.start, loop.start_byte), key=lambda r: r.start_byte)
        return i < len(reps) and reps[i].start_byte < loop.end_byte

    def recaptured_in(self, loop: Node) -> bool:
        """Each pass of `loop` runs the capture (no branch between them) before any replay of the loop: a replay
        in the next pass replays that pass's new capture, which reads what the names hold then."""
        a = self.region.anchor
        if not loop.start_byte <= a.start_byte < loop.end_byte:
            return False
        p = a.parent
        while p is not None and p.id != loop.id:
            if p.type in _CONDITIONAL:
                return False
            p = p.parent
        return p is not None and all(r.start_byte > a.end_byte for r in self.replays
                                     if loop.start_byte <= r.start_byte < loop.end_byte)

    def followed(self, table: str, names: Iterable[str]) -> list[Node]:
        """The table's nodes of `names` after the capture that a replay of its graph follows (see replay_follows),
        in document order: those before the last replay, and those after it in a loop (the rest cannot be).
        Tables: rebind, alias, aug, dels, copies (by name) and empty_cache (the name "")."""
        tab = self._table(table)
        out: list[list[Node]] = []
        start, last = self.start, self.last_replay
        for name in names:
            every = tab.get(name)
            if every:
                out.append(every[bisect_left(every, start, key=start_key):bisect_left(every, last, key=start_key)])
                looped = self.sn.looped[id(every)]
                out.append(looped[bisect_left(looped, max(start, last), key=start_key):])
        return [n for n in union(out) if self.replay_follows(n)]

    def after(self, table: str, names: Iterable[str]) -> list[Node]:
        """The table's nodes of `names` after the capture, replayed after or not."""
        return after_names(self._table(table), names, self.start)

    def kind_cat(self, node: Node) -> str:
        return self.index.kind_cat(node)


def replay_side(region: CaptureRegion, resolver: Resolver, index: AroundIndex) -> ReplaySide | None:
    """The replay side of a region that captures statements into a named graph replayed later in its scope."""
    if region.kind not in ("graph", "capture_begin", "wrapper") or not region.graph_name:
        return None
    ix = region.ix
    g = region.graph_name
    scope = ix.scope_of(region.anchor)
    body = scope.node if scope.node.type == "module" else scope.node.child_by_field_name("body")
    if body is None:
        return None
    # inputs: names read in the region that were bound before it (plus module globals read by callees);
    # outputs: names bound in the region
    reads: dict[str, Node] = {}
    outputs: set[str] = set()
    for st in region.stmts:
        for n, p, _gp in walk_with_parents(st):
            if n.type == "identifier":
                name = ix.text(n)
                if p is not None and p.type == "assignment" and p.child_by_field_name("left") == n:
                    outputs.add(name)
                elif (p is not None and p.type == "attribute" and p.child_by_field_name("attribute") == n) or (
                        p is not None and p.type == "keyword_argument" and p.child_by_field_name("name") == n):
                    continue
                else:
                    reads.setdefault(name, n)
            elif n.type == "call":
                for t in resolver.resolve_call(ix, n, EMPTY_ENV):
                    if t.ix is ix and t.func.body is not None:
                        local = ix.scope(t.func.node)
                        for m in walk(t.func.body):
                            if m.type == "identifier":
                                nm = ix.text(m)
                                if nm not in local.assigns and nm not in local.params:
                                    reads.setdefault(nm, m)
    inputs = {n: node for n, node in reads.items() if n not in outputs}
    start = region.end_byte  # every node of the scope ends by the end of its body
    sn = index.scope_nodes(scope.node, body, start)
    all_replays = sn.replays.get(f"{g}.replay(", [])
    first = bisect_left(all_replays, start, key=lambda r: r.start_byte)  # the replays after the capture
    if first == len(all_replays):
        return None
    return ReplaySide(region, index, sn, body, inputs, {n for n in inputs if n.isidentifier()},
                      {n for n in outputs if n.isidentifier()}, all_replays, start, all_replays[first].start_byte,
                      all_replays[-1].start_byte, index.seen)


class RegionScanner:
    """What one region's `around` detectors are handed (`rules._api.RegionScan`)."""

    def __init__(self, region: CaptureRegion, resolver: Resolver, sink: Sink, index: AroundIndex) -> None:
        self.region = region
        self.resolver = resolver
        self.sink = sink
        self.index = index
        self._side: ReplaySide | None = None
        self._side_done = False

    @property
    def replay_side(self) -> ReplaySide | None:
        if not self._side_done:
            self._side_done = True
            self._side = replay_side(self.region, self.resolver, self.index)
        return self._side


def around_region(region: CaptureRegion, resolver: Resolver, sink: Sink, rules: RuleSet,
                  index: AroundIndex | None = None) -> None:
    """Run the enabled rules' `around` detectors on one capture region, in their order."""
    if not rules.around:
        return
    if index is None or index.ix is not region.ix:
        index = AroundIndex(region.ix)
    scan = RegionScanner(region, resolver, sink, index)
    for a in rules.around:
        a.run(scan)
