"""The re-capture fix of replay-frozen-python-scalar (DPX303) and replay-frozen-branch (DPX310): keep one graph
per value of the Python value the capture froze, in a dict keyed by that value, and capture again the first
time a value is seen (issue 21). It is the alternative where no device tensor can stand in for the value
(`torch.roll(x, shifts=k)`, a branch whose sides do different work).

Built only for one narrow shape, where the rewrite is known to be valid and to do what the user meant:

- the capture is `with torch.cuda.graph(G[, ...]):` (no `as`), G a plain name bound by `G = torch.cuda.CUDAGraph()`
  in the capture's scope and used there only to be built (or set to None, or tested `is None`), captured here
  and replayed by `G.replay()` statements; a module-level G imported by no other file;
- one loop of that scope holds exactly one `G.replay()` after the capture and changes the value V: the capture is
  a statement of a block that holds the loop (it runs before it), or it sits under an `if` (no else) of the
  loop's own body, the replay after that `if` in the same body (`if g is None: capture` in a sampler loop);
- V is a name readable at the replay (a local or global of the capture's scope, the same binding the capture
  reads) or `self.<attr>` of the capturing method's class; its values are few and hashable: every write is a
  bool, int or plain string literal, a comparison of host values, `not ...`, `counter % k`, a range counter or
  a bool/int parameter, and a loop target is a `range(...)` counter. Never a float (a learning rate changing
  every step would capture every step), never an augmented assignment (an unbounded counter);
- the capture block binds only plain names (assignment statements, plain `with` blocks around them) and holds
  no return/yield/break/continue/global/nonlocal/import/del/walrus/augmented assignment, nested definition or
  other compound statement; the names it reads are not rebound in the loop (or between the capture and the
  loop), the names it binds are not read between the capture and the replay (an alias would keep the first
  graph's tensors).

The edit: `_graphs = {V: (G, out...)}` after the capture; before the replay, `if V not in _graphs:` with a copy
of the construction and of the capture block, `_graphs[V] = (G, out...)`, then `G, out... = _graphs[V]`. Nothing
is removed or changed outside the inserted rows. More graphs (memory) and a capture inside the loop: "unsafe".
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from tree_sitter import Node

from denpex.source.capture.regions import CaptureRegion
from denpex.source.capture.replays import graph_node
from denpex.source.engine.facts import fresh_name_in
from denpex.source.fixes import edits as F
from denpex.source.model import Fix, TextEdit
from denpex.source.resolve.callgraph import Resolver
from denpex.source.resolve.index import FileIndex, Scope
from denpex.source.rules._frozen import files_with
from denpex.source.syntax.mentions import (
    all_in_tree,
    def_of,
    identifiers,
    in_nested_definition,
    is_self_attribute,
)
from denpex.source.syntax.parse import strip_parens, walk

TITLE_HEAD = "Re-capture per value"

# anywhere in the capture block: control flow that leaves it, names bound elsewhere, code that runs later
_FORBIDDEN = frozenset({"return_statement", "yield", "break_statement", "continue_statement", "global_statement",
                        "nonlocal_statement", "function_definition", "class_definition", "decorated_definition",
                        "import_statement", "import_from_statement", "future_import_statement",
                        "delete_statement", "named_expression", "augmented_assignment", "await",
                        "exec_statement", "print_statement"})
_LITERALS = frozenset({"integer", "float", "string", "true", "false", "none"})
_HOST_KINDS = frozenset({"scalar", "bool", "str", "none"})
_LOOPS = ("for_statement", "while_statement")
_SCOPES = ("function_definition", "class_definition", "lambda")


def title(value: str) -> str:
    return f"{TITLE_HEAD}: keep one graph per value of {value} in a dict, captured the first time each value is seen"


# ---- recognising the keyed form (what the fix writes, and what users write by hand) ----------------------------
def keyed_replay(ix: FileIndex, replay: Node, graph: str, key: str) -> bool:
    """The statement right before the replay statement binds the graph from a dict keyed by `key`
    (`g, out = graphs[k]`): the graph replayed is the one captured for the current value."""
    st = replay if replay.type == "expression_statement" else replay.parent
    if st is None or st.type != "expression_statement":
        return False
    prev = st.prev_named_sibling
    while prev is not None and prev.type == "comment":
        prev = prev.prev_named_sibling
    if prev is None or prev.type != "expression_statement" or prev.named_child_count != 1:
        return False
    a = prev.named_children[0]
    left, right = a.child_by_field_name("left"), a.child_by_field_name("right")
    if a.type != "assignment" or left is None or right is None or right.type != "subscript":
        return False
    left = strip_parens(left)
    names = [left] if left.type == "identifier" else list(left.named_children) if left.type in (
        "pattern_list", "tuple_pattern") else []
    sub = right.child_by_field_name("subscript")
    return any(n.type == "identifier" and ix.text(n) == graph for n in names) and sub is not None and (
        ix.text(sub).replace(" ", "") == key.replace(" ", ""))


def all_keyed(ix: FileIndex, replays: list[Node], graph: str, key: str) -> bool:
    """Every one of `replays` (at least one) is a keyed replay (see keyed_replay)."""
    return bool(replays) and all(keyed_replay(ix, r, graph, key) for r in replays)


# ---- the fix ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Capture:
    ix: FileIndex
    stmt: Node  # the with statement
    graph: str
    ctor: str  # the text constructing the graph
    scope: Scope
    replays: tuple[Node, ...]  # the `G.replay()` statements of the scope


@dataclass(frozen=True)
class _Place:
    loop: Node
    replay: Node
    inner: bool  # the capture sits in the loop (under an `if` of its body)


def recapture_fix(region: CaptureRegion, resolver: Resolver, value: Node, vix: FileIndex) -> Fix | None:
    """The re-capture fix for a finding on the value `value` names (an identifier where it is read, or
    `self.<attr>`, in file `vix`), or None outside the shape of the module docstring."""
    ix = region.ix
    if vix is not ix:
        return None  # the fix edits the capture's file; the value must be named there
    cap = _capture(region, resolver)
    if cap is None:
        return None
    key = _key(cap, value)
    if key is None:
        return None
    place = _place(cap, key, value)
    if place is None or not _few_values(cap, key, value, resolver):
        return None
    return _edits(cap, key, place)



def _capture(region: CaptureRegion, resolver: Resolver) -> _Capture | None:
    if region.kind != "graph" or region.anchor.type != "with_statement":
        return None
    ix, stmt = region.ix, region.anchor
    clause = next((c for c in stmt.named_children if c.type == "with_clause"), None)
    items = [c for c in clause.named_children if c.type == "with_item"] if clause is not None else []
    value = items[0].child_by_field_name("value") if len(items) == 1 else None
    gnode = graph_node(region)
    if value is None or value.type != "call" or gnode is None or not F.owns_lines(ix, stmt):
        return None
    g = ix.text(gnode)
    if not all_in_tree(ix, g):
        return None
    scope = ix.scope_of(stmt)
    assign, found, is_param = ix.lookup(g, gnode)
    if found is not scope or is_param or assign is None or g in scope.globals or not _is_ctor(ix, assign.value):
        return None
    ctor = ix.text(assign.value) if assign.value is not None else ""
    if "\n" in ctor:
        return None
    for a in scope.assigns.get(g, []):
        left = a.stmt.child_by_field_name("left") if a.stmt.type == "assignment" else None
        if left is None or left.type != "identifier" or not (
                _is_ctor(ix, a.value) or (a.value is not None and a.value.type == "none")):
            return None  # bound to something else somewhere: the name may not always be this capture's graph
    if scope.node.type == "module":
        ix.watched.add(g)  # any function of the file may mention it
        if resolver.imported_elsewhere is not None and resolver.imported_elsewhere(ix.path, g):
            return None
    replays: list[Node] = []
    for n in identifiers(ix, g, scope.node.start_byte, scope.node.end_byte):
        use = _graph_use(ix, n, g, scope, value)
        if use is False:
            return None
        if isinstance(use, Node):
            replays.append(use)
    return _Capture(ix, stmt, g, ctor, scope, tuple(replays))


def _is_ctor(ix: FileIndex, value: Node | None) -> bool:
    v = strip_parens(value) if value is not None else None
    f = v.child_by_field_name("function") if v is not None and v.type == "call" else None
    q = ix.qualname(f) if f is not None else None
    return q is not None and q.endswith("cuda.CUDAGraph")


def _graph_use(ix: FileIndex, n: Node, g: str, scope: Scope, item: Node) -> Node | bool:
    """One mention of the graph's name: True (harmless), the replay statement, or False (a use the fix cannot
    follow: passed, stored, replayed from a nested function...)."""
    p = n.parent
    if p is None:
        return True
    if (p.type == "attribute" and p.child_by_field_name("attribute") == n) or (
            p.type == "keyword_argument" and p.child_by_field_name("name") == n):
        return True
    if ix.lookup(g, n)[1] is not scope:
        return True  # another scope's own name
    d = def_of(n)
    owner = d.id if d is not None else ix.src.root.id
    if owner != scope.node.id or in_nested_definition(n, scope.node):
        return False  # from a nested function, a lambda or a class body
    if item.start_byte <= n.start_byte < item.end_byte:
        return True  # the capture itself (copied with it)
    if p.type == "assignment" and p.child_by_field_name("left") == n:
        return True  # checked with the scope's assignments
    if p.type == "comparison_operator" and p.named_child_count == 2 and any(c.type == "none" for c in p.named_children):
        return True  # `g is None`
    call = p.parent if p.type == "attribute" and p.child_by_field_name("object") == n else None
    attr = p.child_by_field_name("attribute")
    st = call.parent if call is not None and call.type == "call" else None
    args = call.child_by_field_name("arguments") if call is not None else None
    if st is not None and st.type == "expression_statement" and st.named_child_count == 1 and attr is not None and (
            ix.text(attr) == "replay" and args is not None and args.named_child_count == 0 and F.owns_lines(ix, st)):
        return st
    return False


# ---- the value --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Key:
    text: str  # as written at the replay: `flag`, `self.mode`
    name: str | None  # a plain name
    attr: str | None  # `self.<attr>`
    scope: Scope | None  # the name's binding scope


def _key(cap: _Capture, value: Node) -> _Key | None:
    ix = cap.ix
    value = strip_parens(value)
    if value.type == "identifier":
        name = ix.text(value)
        if not all_in_tree(ix, name) or re.search(rf"\bnonlocal\b[^\n]*\b{re.escape(name)}\b|\b{re.escape(name)}\s*:=",
                                                ix.src.text):
            return None
        _a, scope, _p = ix.lookup(name, value)
        if scope is None or (scope is not cap.scope and scope.node.type != "module"):
            return None
        return _Key(name, name, None, scope)
    obj, a = value.child_by_field_name("object"), value.child_by_field_name("attribute")
    if value.type != "attribute" or obj is None or a is None or obj.type != "identifier" or ix.text(obj) != "self":
        return None
    attr = ix.text(a)
    fn, mine = ix.enclosing_function(value), ix.enclosing_function(cap.stmt)
    if fn is None or mine is None or fn.class_name is None or fn.class_name != mine.class_name or (
            cap.scope.node.id != mine.node.id or not mine.params or mine.params[0] != "self"):
        return None
    if fn.node.id != mine.node.id and not _calls_own_method(cap, fn.class_name):
        return None  # read in another method: the capture must run it on this same object
    cls = ix.classes.get(fn.class_name)
    if cls is None or attr in cls.methods or not all_in_tree(ix, attr):
        return None
    return _Key(f"self.{attr}", None, attr, None)


def _calls_own_method(cap: _Capture, cls_name: str) -> bool:
    """The capture block calls `self(...)` or `self.<method>(...)` of the class (so a `self.<attr>` read there
    is this object's)."""
    ix = cap.ix
    cls = ix.classes.get(cls_name)
    for n in walk(cap.stmt):
        f = n.child_by_field_name("function") if n.type == "call" else None
        if f is None:
            continue
        if f.type == "identifier" and ix.text(f) == "self":
            return True
        o, m = f.child_by_field_name("object"), f.child_by_field_name("attribute")
        if f.type == "attribute" and o is not None and m is not None and ix.text(o) == "self" and (
                cls is not None and ix.text(m) in cls.methods):
            return True
    return False


def _loops_of(node: Node, stop: Node) -> list[Node]:
    """The loops holding `node` inside the scope `stop`, innermost first."""
    out, p = [], node.parent
    while p is not None and p.id != stop.id and p.type not in _SCOPES:
        if p.type in _LOOPS:
            out.append(p)
        p = p.parent
    return out


def _changes_in(cap: _Capture, key: _Key, loop: Node) -> bool:
    ix = cap.ix
    if key.name is not None:
        left = loop.child_by_field_name("left") if loop.type == "for_statement" else None
        if left is not None and left.type == "identifier" and ix.text(left) == key.name:
            return True
        return key.scope is cap.scope and any(loop.start_byte <= a.start_byte < loop.end_byte
                                              for a in cap.scope.assigns.get(key.name, []))
    return any(is_self_attribute(ix, n.child_by_field_name("left"), key.attr) for n in walk(loop)
               if n.type == "assignment" and not in_nested_definition(n, cap.scope.node))



def _place(cap: _Capture, key: _Key, value: Node) -> _Place | None:
    """The loop that changes the value and replays the graph once, in one of the two shapes."""
    ix, w = cap.ix, cap.stmt
    owner = cap.scope.node
    for r in cap.replays:
        if r.start_byte < w.end_byte:
            continue
        if key.name is not None and ix.lookup(key.name, r)[1] is not key.scope:
            continue  # another binding of the name at the replay
        for loop in _loops_of(r, owner):
            if not _changes_in(cap, key, loop):
                continue
            if sum(1 for x in cap.replays if loop.start_byte <= x.start_byte < loop.end_byte) != 1:
                return None  # several replays in one pass: each would need its own lookup
            if loop.start_byte >= w.end_byte and _holds(w.parent, loop):
                return _Place(loop, r, False)
            guard = w.parent.parent if w.parent is not None else None
            body = loop.child_by_field_name("body")
            if (guard is not None and guard.type == "if_statement" and body is not None and guard.parent is not None
                    and guard.parent.id == body.id and not guard.children_by_field_name("alternative")
                    and r.parent is not None and r.parent.id == body.id and r.start_byte > guard.end_byte):
                return _Place(loop, r, True)
            return None
    return None


def _holds(block: Node | None, node: Node) -> bool:
    p = node.parent
    while p is not None:
        if block is not None and p.id == block.id:
            return True
        p = p.parent
    return False


# ---- few, hashable values ------------------------------------------------------------------------------------
def _few_values(cap: _Capture, key: _Key, value: Node, resolver: Resolver) -> bool:
    ix = cap.ix
    if key.name is not None and key.scope is not None:
        name, scope = key.name, key.scope
        if name in scope.params and not _typed_param(ix, scope.node, name):
            return False
        scopes = [scope]
        if scope.node.type == "module":
            ix.watched.add(name)  # a function that declares it global may write it
            scopes += [ix.scope(f.node) for f in ix.functions if name in ix.scope(f.node).globals]
        writes = [a for s in scopes for a in s.assigns.get(name, [])]
        for a in writes:
            st = a.stmt
            if st.type == "for_statement":
                left, right = st.child_by_field_name("left"), st.child_by_field_name("right")
                if left is None or left.type != "identifier" or not _is_range(ix, right):
                    return False
            elif st.type == "assignment":
                left = st.child_by_field_name("left")
                if left is None or left.type != "identifier" or a.value is None or not _value_ok(ix, a.value, st):
                    return False
            else:
                return False  # augmented, unpacked, bound by a with or an import
        return bool(writes) or name in scope.params
    attr = key.attr
    if attr is None:
        return False
    ix.watched.add(attr)
    if re.search(rf"""['"]{re.escape(attr)}['"]""", ix.src.text):
        return False  # setattr/getattr by name: writes the fix cannot see
    pattern = rf"\.{re.escape(attr)}\s*(?:[-+*/|&^%@]|//|\*\*|>>|<<)?=(?!=)"
    if any(f.path != ix.path for f in files_with(resolver, pattern, ix, needles=("." + attr,))):
        return False
    seen = False
    for n in walk(ix.src.root):
        if n.type != "attribute":
            continue
        field = n.child_by_field_name("attribute")
        p = n.parent
        if field is None or ix.text(field) != attr or p is None:
            continue
        if p.type in ("pattern_list", "tuple_pattern", "list_pattern", "delete_statement") or (
                p.type == "augmented_assignment" and p.child_by_field_name("left") == n):
            return False
        if p.type == "assignment" and p.child_by_field_name("left") == n:
            right = p.child_by_field_name("right")
            if right is None or not _value_ok(ix, right, p):
                return False
            seen = True
    return seen


def _typed_param(ix: FileIndex, fn: Node, name: str) -> bool:
    """`name` is a parameter of `fn` annotated bool/int, or defaulting to a bool/int literal."""
    params = fn.child_by_field_name("parameters") if fn.type == "function_definition" else None
    for p in params.named_children if params is not None else []:
        if p.type == "identifier":
            n: Node | None = p
        elif p.type == "typed_parameter":
            n = next((c for c in p.named_children if c.type == "identifier"), None)
        else:
            n = p.child_by_field_name("name")
        if n is None or ix.text(n) != name:
            continue
        t, d = p.child_by_field_name("type"), p.child_by_field_name("value")
        if t is not None:
            return ix.text(t) in ("bool", "int")
        return d is not None and strip_parens(d).type in ("true", "false", "integer")
    return False


def _is_range(ix: FileIndex, right: Node | None) -> bool:
    """`range(...)`, also wrapped in one call as its first argument (`tqdm(range(n), desc=...)`, `reversed(...)`)."""
    if right is None or right.type != "call":
        return False
    f = right.child_by_field_name("function")
    if f is not None and ix.text(f) == "range":
        return True
    args = right.child_by_field_name("arguments")
    inner = args.named_children[0] if args is not None and args.named_child_count else None
    fi = inner.child_by_field_name("function") if inner is not None and inner.type == "call" else None
    return fi is not None and ix.text(fi) == "range"


def _counter(ix: FileIndex, node: Node) -> bool:
    """An int the host computes from a range counter: the counter, `len(...)`, `c % k`, an int literal."""
    node = strip_parens(node)
    if node.type == "integer":
        return True
    if node.type == "identifier":
        assign, _s, _p = ix.lookup(ix.text(node), node)
        st = assign.stmt if assign is not None else None
        left = st.child_by_field_name("left") if st is not None and st.type == "for_statement" else None
        return st is not None and left is not None and left.type == "identifier" and _is_range(
            ix, st.child_by_field_name("right"))
    if node.type == "call":
        f = node.child_by_field_name("function")
        return f is not None and ix.text(f) == "len"
    if node.type == "binary_operator":
        op = node.child_by_field_name("operator")
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        return op is not None and ix.text(op) == "%" and right is not None and right.type == "integer" and (
            left is not None and _counter(ix, left))
    return False


def _host_operand(ix: FileIndex, node: Node) -> bool:
    node = strip_parens(node)
    if node.type in _LITERALS or _counter(ix, node):
        return node.type != "string" or not any(c.type == "interpolation" for c in node.named_children)
    if node.type in ("tuple", "list", "set"):
        return all(c.type in _LITERALS for c in node.named_children)
    if node.type in ("identifier", "attribute"):
        return ix.kind(node).cat in _HOST_KINDS  # never a tensor: a tensor key hashes by identity
    return False


def _value_ok(ix: FileIndex, value: Node, stmt: Node) -> bool:
    """A value of few, hashable possibilities: see the module docstring."""
    v = strip_parens(value)
    t = v.type
    if t in ("true", "false", "integer"):
        return True
    if t == "string":
        return not any(c.type == "interpolation" for c in v.named_children)
    if t == "unary_operator":
        arg = v.child_by_field_name("argument")
        return arg is not None and strip_parens(arg).type == "integer"
    if t == "not_operator":
        return True
    if t == "comparison_operator":
        return all(_host_operand(ix, c) for c in v.named_children)
    if t == "binary_operator":
        return _counter(ix, v)
    if t == "identifier":
        if _counter(ix, v):
            return True
        fn = ix.enclosing_function(stmt)
        name = ix.text(v)
        return fn is not None and name in ix.scope(fn.node).params and name not in ix.scope(fn.node).assigns and (
            _typed_param(ix, fn.node, name))
    return False


# ---- the capture block -----------------------------------------------------------------------------------------
def _block(cap: _Capture) -> tuple[list[str], list[Node]] | None:
    """The names the capture block binds (in order) and the identifiers it reads before binding them, or None
    outside the shape (see the module docstring)."""
    ix = cap.ix
    if any(n.type in _FORBIDDEN for n in walk(cap.stmt)):
        return None
    bound: list[str] = []
    free: list[Node] = []

    def reads(node: Node) -> None:
        for n in walk(node):
            if n.type != "identifier":
                continue
            p = n.parent
            if p is not None and ((p.type == "attribute" and p.child_by_field_name("attribute") == n) or (
                    p.type == "keyword_argument" and p.child_by_field_name("name") == n)):
                continue
            if ix.text(n) not in bound:
                free.append(n)

    def visit(stmt: Node) -> bool:
        clause = next((c for c in stmt.named_children if c.type == "with_clause"), None)
        body = stmt.child_by_field_name("body")
        if clause is None or body is None or body.start_point[0] == stmt.start_point[0]:
            return False
        for item in clause.named_children:
            v = item.child_by_field_name("value")
            if item.type != "with_item" or v is None or v.type == "as_pattern":
                return False
            reads(v)
        for st in body.named_children:
            if st.type in ("comment", "pass_statement"):
                continue
            if st.type == "with_statement":
                if not visit(st):
                    return False
                continue
            if st.type != "expression_statement" or st.named_child_count != 1:
                return False
            e = st.named_children[0]
            if e.type != "assignment":
                reads(e)
                continue
            left, right = e.child_by_field_name("left"), e.child_by_field_name("right")
            if left is None or right is None or right.type in ("assignment", "augmented_assignment"):
                return False
            targets = _plain_targets(ix, left)
            if targets is None:
                return False
            reads(right)
            bound.extend(t for t in targets if t not in bound)
        return True

    return (bound, free) if visit(cap.stmt) else None


def _plain_targets(ix: FileIndex, left: Node) -> list[str] | None:
    left = strip_parens(left)
    if left.type == "identifier":
        return [ix.text(left)]
    if left.type in ("pattern_list", "tuple_pattern", "list_pattern"):
        out = []
        for c in left.named_children:
            if c.type != "identifier":
                return None  # an attribute, an item or a starred target
            out.append(ix.text(c))
        return out
    return None


def _mentioned(ix: FileIndex, scope: Scope, name: str, start: int, end: int, skip: Node) -> bool:
    """`name` of `scope` is mentioned in bytes [start, end) outside the node `skip`."""
    for n in identifiers(ix, name, start, end):
        if skip.start_byte <= n.start_byte < skip.end_byte:
            continue
        p = n.parent
        if p is not None and ((p.type == "attribute" and p.child_by_field_name("attribute") == n) or (
                p.type == "keyword_argument" and p.child_by_field_name("name") == n)):
            continue
        if ix.lookup(name, n)[1] is scope:
            return True
    return False


# ---- the edits ---------------------------------------------------------------------------------------------------
def _edits(cap: _Capture, key: _Key, place: _Place) -> Fix | None:
    ix, w, g, scope = cap.ix, cap.stmt, cap.graph, cap.scope
    got = _block(cap)
    if got is None:
        return None
    bound, free = got
    if g in bound or (key.name is not None and key.name in bound) or not all(
            all_in_tree(ix, n) for n in {*bound, *(ix.text(f) for f in free)}):
        return None
    if key.attr is not None and any(n.type == "assignment" and is_self_attribute(ix, n.child_by_field_name("left"), key.attr)
                                    for n in walk(w)):
        return None  # set while capturing: the value after the capture is not the one the capture read
    loop, replay = place.loop, place.replay
    for n in free:
        name = ix.text(n)
        if name == key.name or name == g:
            continue
        if ix.lookup(name, n)[1] is not scope:
            continue  # a global read from a function scope, a builtin: not rebound by this scope
        for a in scope.assigns.get(name, []):
            if loop.start_byte <= a.start_byte < loop.end_byte or w.end_byte <= a.start_byte < loop.start_byte:
                return None  # rebound before a replay: a new capture would read another object
    lo = loop.start_byte if place.inner else w.start_byte
    if any(_mentioned(ix, scope, o, lo, replay.start_byte, w) for o in bound):
        return None  # read (aliased) between the capture and the replay: it would keep the first graph's tensors
    body = w.child_by_field_name("body")
    first = next((c for c in body.named_children if c.type != "comment"), None) if body is not None else None
    iw, ir = ix.src.indent_of(w), ix.src.indent_of(replay)
    inner = ix.src.indent_of(first) if first is not None else ""
    if first is None or not inner.startswith(iw) or len(inner) <= len(iw):
        return None
    unit = inner[len(iw):]
    copy = F.statement_lines(ix, w, ir + unit)
    if copy is None:
        return None
    d = fresh_name_in(ix, "_graphs")
    v = key.text
    held = f"({g}, {', '.join(bound)})" if bound else g
    unpack = f"{g}, {', '.join(bound)}" if bound else g
    after = F.insert_after_statement(ix, w, [f"{d} = {{{v}: {held}}}"])
    block = (f"{ir}if {v} not in {d}:\n{ir}{unit}{g} = {cap.ctor}\n{copy}{ir}{unit}{d}[{v}] = {held}\n"
             f"{ir}{unpack} = {d}[{v}]\n")
    row = replay.start_point[0]
    edits: list[TextEdit]
    if (after.start_line, after.start_col) == (row, 0) and after.start_line == after.end_line:
        edits = [TextEdit(row, 0, row, 0, after.new_text + block)]  # one insert: two at one place have no order
    else:
        edits = [after, F.insert_at(row, 0, block)]
    fx = F.fix(title(v), "unsafe", edits)
    if fx is None:
        return None
    try:
        ast.parse(F.apply_edits(ix.src.text, fx.edits))
    except (SyntaxError, ValueError):
        return None  # a shape the checks above did not foresee: no fix rather than broken code
    return fx
