"""Outputs collected across loop iterations (issue 21): a CUDA graph, and a reduce-overhead torch.compile, write
every run's outputs into the same memory, so a list, dict or store that keeps the output of each iteration ends up
holding one buffer many times, all with the last run's values.

What these helpers find is the keeping: a value that is (or views) an output, kept by a call that stores its
argument (`outs.append(y)`, `store.add(ids, y)`), by an item assignment with a varying key (`d[i] = y`) or by a
list comprehension, inside a loop whose container outlives the iteration. Functions that hand an output back
(`return self.static_out` after `replay()`, `return self.fn(x)` of a compiled fn) are followed to their callers."""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass

from tree_sitter import Node

from denpex.source.resolve import callsites
from denpex.source.resolve.callgraph import Resolver
from denpex.source.resolve.index import FileIndex
from denpex.source.rules._frozen import files_with
from denpex.source.syntax.mentions import def_of, identifiers
from denpex.source.syntax.parse import run_query, strip_parens

# calls that keep their argument beyond the statement (a container or store that outlives the iteration)
KEEPERS = frozenset({"append", "extend", "insert", "add", "put", "put_nowait", "appendleft", "setdefault",
                     "push", "store", "record", "add_batch", "append_batch"})
# calls on a value that return a view of the same memory (the kept value still aliases the output)
_VIEWS = frozenset({"detach", "view", "reshape", "squeeze", "unsqueeze", "flatten", "transpose", "permute",
                    "narrow", "select", "view_as", "expand", "t", "chunk", "split", "unbind"})
_LOOPS = ("for_statement", "while_statement")
_COMPREHENSIONS = ("list_comprehension", "set_comprehension", "dictionary_comprehension")
_CALLS_Q = "(call function: [(identifier) (attribute)] @f) @c"
_RETURNS_Q = "(return_statement) @r"
_READS_Q = "[(identifier) (attribute)] @v"


def _table(ix: FileIndex, name: str, query: str, capture: str, key_of: str) -> dict[str, list[Node]]:
    """A query's nodes over the whole file, by the text of `key_of` ("node": the node itself, "function": a call's
    function), in document order; run once per file index (a module of many captures asks again per capture)."""
    found = ix.scope_tables.get((name, -1))
    if found is None:
        found = ix.scope_tables[(name, -1)] = {}
        for n in run_query(query, ix.src.root).get(capture, []):
            k = n.child_by_field_name("function") if key_of == "function" else n
            if k is not None:
                found.setdefault(ix.text(k), []).append(n)
    return found


def calls_by_text(ix: FileIndex) -> dict[str, list[Node]]:
    """Every call of the file by its function's text (`g.replay`, `self.fn`, `scorer`), in document order."""
    return _table(ix, "frozen-out-calls", _CALLS_Q, "c", "function")


def reads_by_text(ix: FileIndex) -> dict[str, list[Node]]:
    """Every identifier and attribute of the file by its text, in document order."""
    return _table(ix, "frozen-out-reads", _READS_Q, "v", "node")


def within(nodes: list[Node] | None, start: int, end: int) -> list[Node]:
    """The nodes (sorted by start) that start in [start, end)."""
    if not nodes:
        return []
    i = bisect_left(nodes, start, key=lambda n: n.start_byte)
    j = bisect_left(nodes, end, key=lambda n: n.start_byte)
    return nodes[i:j]


@dataclass(frozen=True)
class Kept:
    """Where an output is kept across iterations: the statement or expression that keeps it, and what it keeps."""

    ix: FileIndex
    node: Node  # the keeping call, assignment or comprehension
    value: Node  # the expression kept (the fix clones it)
    label: str  # the container, as written (`all_logits`, `store`)


def _loop_of(node: Node) -> Node | None:
    """The innermost for/while loop holding `node` inside its function."""
    p = node.parent
    while p is not None and p.type not in ("function_definition", "class_definition", "lambda", "module"):
        if p.type in _LOOPS:
            return p
        p = p.parent
    return None


def _up_views(ix: FileIndex, e: Node) -> Node:
    """`e` widened through what still aliases it: `e[0]`, `e.detach()`, `e.view(...)`, parentheses."""
    while True:
        p = e.parent
        if p is None:
            return e
        if p.type == "parenthesized_expression" or (p.type == "subscript" and p.child_by_field_name("value") == e):
            e = p
        elif p.type == "attribute" and p.child_by_field_name("object") == e:
            a = p.child_by_field_name("attribute")
            call = p.parent
            if a is None or ix.text(a) not in _VIEWS or call is None or call.type != "call":
                return e
            e = call
        else:
            return e


def _fresh_in_loop(ix: FileIndex, container: Node, loop: Node, before: int) -> bool:
    """The container is bound again inside the loop before the keep (`batch_out = []` each iteration): what it
    keeps lives for one iteration."""
    if container.type != "identifier":
        return False
    name = ix.text(container)
    for m in identifiers(ix, name, loop.start_byte, before):
        p = m.parent
        if p is not None and p.type == "assignment" and p.child_by_field_name("left") == m:
            return True
    return False


def _keeper(ix: FileIndex, e: Node, loop: Node) -> tuple[Node, str] | None:
    """`e` (already widened through views) is kept by its parent: an argument of a keeping call on a container
    that outlives the iteration, an element of a literal passed to one, or `d[k] = e` with a key that is not a
    constant (a constant key holds only the latest output)."""
    n, p = e, e.parent
    while p is not None and p.type in ("list", "tuple", "set", "dictionary", "pair", "expression_list"):
        n, p = p, p.parent
    if p is None:
        return None
    if p.type == "argument_list" and p.parent is not None and p.parent.type == "call":
        call = p.parent
        f = call.child_by_field_name("function")
        if f is None or f.type != "attribute":
            return None
        a, obj = f.child_by_field_name("attribute"), f.child_by_field_name("object")
        if a is None or obj is None or ix.text(a) not in KEEPERS:
            return None
        if _fresh_in_loop(ix, obj, loop, call.start_byte):
            return None
        return call, ix.text(obj)
    if p.type == "assignment" and p.child_by_field_name("right") == n:
        left = p.child_by_field_name("left")
        if left is None or left.type != "subscript":
            return None
        key = left.child_by_field_name("subscript")
        obj = left.child_by_field_name("value")
        if key is None or obj is None or key.type in ("string", "integer", "true", "false", "none"):
            return None
        if _fresh_in_loop(ix, obj, loop, p.start_byte):
            return None
        return p, ix.text(obj)
    return None


def kept_across_iterations(ix: FileIndex, value: Node, follow: bool = True) -> Kept | None:
    """Where the output `value` (a call that returns an output buffer, or a name read right after a replay) is
    kept so that a later iteration's run overwrites it: directly, through one name it is bound to in the same
    iteration (`y = f(x)` then `outs.append(y)`, no rebinding between; not with `follow` off), or as a list
    comprehension's element."""
    e = _up_views(ix, value)
    p = e.parent
    if p is not None and p.type in _COMPREHENSIONS and p.named_children and p.named_children[0] == e:
        return Kept(ix, p, e, "a comprehension")  # `[f(x) for x in xs]`: one buffer per element
    loop = _loop_of(value)
    if loop is None:
        return None
    k = _keeper(ix, e, loop)
    if k is not None:
        return Kept(ix, k[0], e, k[1])
    if not follow or p is None or p.type != "assignment":
        return None
    assign = p
    if assign.type != "assignment" or assign.child_by_field_name("right") != e:
        return None
    left = assign.child_by_field_name("left")
    if left is None:
        return None
    if left.type == "identifier":
        names = [ix.text(left)]
    elif left.type in ("pattern_list", "tuple_pattern"):
        names = [ix.text(n) for n in left.named_children if n.type == "identifier"]
    else:
        return None  # `self.last = f(x)`: an attribute holds only the latest output
    owner = def_of(assign)
    end = loop.end_byte
    for name in names:
        for m in identifiers(ix, name, assign.end_byte, end):
            d = def_of(m)
            if d is None or owner is None or d.id != owner.id:
                continue
            q = m.parent
            if q is not None and q.type in ("assignment", "augmented_assignment") and q.child_by_field_name("left") == m:
                break  # rebound (`y = y.clone()`): what follows reads another value
            if q is not None and q.type == "pattern_list":
                break
            mv = _up_views(ix, m)
            k = _keeper(ix, mv, loop)
            if k is not None:
                return Kept(ix, k[0], mv, k[1])
    return None


def returned(ix: FileIndex, fn: Node, texts: set[str], calls: set[str]) -> Node | None:
    """A `return` of `fn` (not of a nested definition) that hands back an output as it is: one of `texts` (an
    output's name, `self.static_out`) or a call whose function is spelled as one of `calls`, or a local name bound
    to such a call; None when every return clones or converts."""
    body = fn.child_by_field_name("body")
    if body is None:
        return None
    rets = ix.scope_tables.get(("frozen-out-returns", fn.id))
    if rets is None:
        rets = ix.scope_tables[("frozen-out-returns", fn.id)] = {"": run_query(_RETURNS_Q, body).get("r", [])}
    for r in rets[""]:
        d = def_of(r)
        if d is None or d.id != fn.id or not r.named_children:
            continue
        v = strip_parens(r.named_children[0])
        if v.type == "call":
            f = v.child_by_field_name("function")
            if f is not None and ix.text(f) in calls:
                return r
        if v.type in ("identifier", "attribute") and ix.text(v) in texts:
            return r
        if v.type == "identifier" and calls:
            # `out = self.fn(x); return out`
            name = ix.text(v)
            for m in identifiers(ix, name, fn.start_byte, r.start_byte):
                q = m.parent
                if q is not None and q.type == "assignment" and q.child_by_field_name("left") == m:
                    right = q.child_by_field_name("right")
                    f = right.child_by_field_name("function") if right is not None and right.type == "call" else None
                    if f is not None and ix.text(f) in calls:
                        return r
    return None


def calls_spelled(ix: FileIndex, root: Node, texts: set[str]) -> list[Node]:
    """Calls under `root` whose function is written as one of `texts` (`scorer`, `self.fn`)."""
    for t in texts:  # a lazily parsed file: the chunks that spell the call must be in the tree
        ix.src.need_word(t.rsplit(".", 1)[-1], root.start_byte, root.end_byte)
    table = calls_by_text(ix)
    ix.touched.append((root.start_byte, root.end_byte))
    out = [c for t in texts for c in within(table.get(t), root.start_byte, root.end_byte)]
    return sorted(out, key=lambda c: c.start_byte)


def callers(resolver: Resolver, home: FileIndex, fn_name: str, cls: str | None) -> list[tuple[FileIndex, Node]]:
    """Calls of the function or method `fn_name` (of class `cls`) in its file and the files that spell the class
    (a method) or the function: `runner.encode(x)` for a method, `encode(x)` for a function."""
    if fn_name.startswith("__"):
        return []  # `runner(x)`: the instance is called, not followed
    word = cls if cls is not None else fn_name
    files = files_with(resolver, rf"(?<!\w){re.escape(word)}(?!\w)", home, needles=(word,))
    if all(f is not home for f in files):
        files.append(home)
    out: list[tuple[FileIndex, Node]] = []
    for fx in files:
        fx.touched.append((0, len(fx.src.data)))
        for c in callsites.calls_named(fx, fn_name):  # `fn_name(...)` and `<expr>.fn_name(...)`
            f = c.child_by_field_name("function")
            if f is not None and (f.type == "attribute") == (cls is not None):
                out.append((fx, c))
    return out
