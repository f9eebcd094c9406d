"""replay-frozen-branch (DPX310): a branch inside captured code decided by a Python value that the host changes
between replays (`if self.freeze_encoder:` flipped each epoch). The graph holds the kernels of the branch taken
at capture; every replay keeps them, whatever the value is now.

Error where the change is shown: the value is assigned inside a loop that replays a graph (directly or through
a function that calls `.replay()`) and does not capture again for the new value. Warning where a method of the
class sets `self.<attr>` outside its constructor (it may be called between replays).

Code fixes (unsafe), each only for its narrow shape: the flag becomes a 0-dim device tensor the graph reads
(`torch.where(flag_t, a, b)`, `flag_t.fill_(flag)` after every host write; _frozen_branch_fix.py), or one graph
per value of the flag is kept in a dict and captured the first time the value is seen (_recapture_fix.py)."""

from __future__ import annotations

from tree_sitter import Node

from denpex.source.model import Fix
from denpex.source.resolve.callgraph import Binding, Env
from denpex.source.resolve.index import FileIndex
from denpex.source.rules._api import Frame, Hazard, SourceRule, Walk
from denpex.source.rules._frozen import (
    Write,
    attribute_writes,
    enclosing_loops,
    graphed_names,
    method_calls,
    name_writes,
    recaptures,
    where,
)
from denpex.source.rules._frozen_branch_fix import branch_fix
from denpex.source.rules._recapture_fix import recapture_fix
from denpex.source.syntax.parse import strip_parens

_HAZARD = "frozen-branch"
_LITERALS = frozenset({"string", "integer", "float", "true", "false", "none"})
_MAX_BINDING_HOPS = 8


def _subject(c: Node) -> Node | None:
    """The Python value a condition tests: `x`, `self.a.b`, or one side of `x == <literal>` (not `is None`)."""
    c = strip_parens(c)
    if c.type in ("identifier", "attribute"):
        return c
    if c.type == "comparison_operator" and c.named_child_count == 2:
        a, b = c.named_children
        if b.type == "none" or a.type == "none":
            return None  # presence tests: an object set lazily, not a flag
        if a.type in ("identifier", "attribute") and b.type in _LITERALS:
            return a
        if b.type in ("identifier", "attribute") and a.type in _LITERALS:
            return b
    return None


def _condition(w: Walk, cond: Node, frame: Frame, if_stmt: Node | None, ternary: Node | None) -> None:
    if w.region.kind in ("compile", "entry"):
        return  # torch.compile guards the Python values it reads and recompiles when they change
    ix = frame.ix
    subj = _subject(cond)
    if subj is None or w.tensorish(subj, frame):
        return  # a tensor condition is capture-implicit-bool's
    owner = if_stmt or _if_of(cond)
    if owner is not None and _host_only(owner):
        return  # `if not self._planned: raise ...`: the branch records no device work either way
    writes: list[Write]
    label = ix.text(subj)
    graphed = frozenset(graphed_names(w.region))  # calls of a graphed callable replay its graphs
    if subj.type == "attribute":
        if "(" in label:
            return
        a = subj.child_by_field_name("attribute")
        if a is None:
            return
        attr = ix.text(a)
        writes = attribute_writes(w.resolver, attr, ix, w.region.ix, also=graphed)
        own = frame.func.node if frame.func is not None else None
        # a write inside the captured function itself is Python run at capture (replay-python-side-effects)
        writes = [x for x in writes if own is None or not (x.ix is ix and own.start_byte <= x.node.start_byte
                                                           < own.end_byte)]
        cls = frame.func.class_name if frame.func is not None else None
        word = attr
        shown = [x for x in writes if x.in_replay_loop or _before_a_replay(w, x, word)]
        maybe = [x for x in writes if not x.in_replay_loop and x.self_write and cls is not None and
                 x.ix is ix and _class_of(x) == cls]
    else:
        found = _name_writes(w, subj, frame, graphed)
        if found is None:
            return
        label, writes = found
        word = label
        shown = [x for x in writes if x.in_replay_loop or _before_a_replay(w, x, word)]
        maybe = [x for x in writes if not x.in_replay_loop and x.method is not None and x.ix is ix and
                 _is_global_write(x)]
    maybe = [x for x in maybe if not _scoped(x) and not _recaptured(x, word)]

    def fixes() -> list[Fix | None]:
        return [branch_fix(w, subj, frame), _recapture(w, subj, frame)]

    if shown:
        x = shown[0]
        when = "between replays" if x.in_replay_loop else "after the capture, before a replay"
        w.report(_HAZARD, subj, frame, fixes(), message=(
            f"`{label}` decides this branch when the graph is captured; {where(x.ix, x.node)} changes it "
            f"{when}, and every replay keeps the branch taken at capture (silently wrong)"))
    elif maybe:
        x = maybe[0]
        if x.method is not None and x.self_write:
            # the setter's calls decide: one in a replay loop shows the change, calls only outside say it is set
            # for the run; a setter never called in the project may be called by its users
            calls, n = method_calls(w.resolver, x.method, _class_of(x) or "", x.ix, ix, w.region.ix,
                                    also=graphed)
            looped = [c for c in calls if c.in_replay_loop]
            if looped:
                c = looped[0]
                w.report(_HAZARD, subj, frame, fixes(), message=(
                    f"`{label}` decides this branch when the graph is captured; {x.method}() at "
                    f"{where(c.ix, c.node)} changes it between replays (it sets it at {where(x.ix, x.node)}), "
                    "and every replay keeps the branch taken at capture (silently wrong)"))
                return
            if n:
                return
        w.report(_HAZARD, subj, frame, fixes(), severity="warning", message=(
            f"`{label}` decides this branch when the graph is captured; {x.method}() sets it at "
            f"{where(x.ix, x.node)}: if that runs between replays, they keep the branch taken at capture "
            "(may be silently wrong)"))


def _if_of(cond: Node) -> Node | None:
    """The `if` statement whose condition holds `cond` (through `not`, `and`/`or`, parentheses)."""
    n, p = cond, cond.parent
    while p is not None and p.type in ("not_operator", "boolean_operator", "parenthesized_expression"):
        n, p = p, p.parent
    if p is not None and p.type == "if_statement" and p.child_by_field_name("condition") == n:
        return p
    return None


def _host_only(if_stmt: Node) -> bool:
    """An `if` without `elif`/`else` whose body only raises, warns or passes: no device work depends on it."""
    if if_stmt.children_by_field_name("alternative"):
        return False
    body = if_stmt.child_by_field_name("consequence")
    if body is None:
        return False
    stmts = [c for c in body.named_children if c.type != "comment"]
    return bool(stmts) and all(c.type in ("raise_statement", "pass_statement") for c in stmts)


def _recapture(w: Walk, subj: Node, frame: Frame) -> Fix | None:
    """The re-capture fix for the value the condition tests: `self.<attr>`, or the name it reads where it is
    bound (a parameter followed to the argument the capture passes)."""
    ix, node = frame.ix, subj
    if subj.type == "identifier":
        bound = _argument_name(frame.ix, frame.env, subj)
        if bound is None:
            return None
        ix, node = bound
    return recapture_fix(w.region, w.resolver, node, ix)


def _argument_name(ix: FileIndex, env: Env, ident: Node) -> tuple[FileIndex, Node] | None:
    """The name `ident` stands for where it is bound: a parameter followed through the frames' bindings to the
    caller's argument, while that is a name too; None when an attribute or expression was passed in."""
    node = ident
    for _ in range(_MAX_BINDING_HOPS):
        b: Binding | None = env.get(ix.text(node))
        if b is None:
            break
        node, ix, env = strip_parens(b.node), b.ix, b.env
        if node.type != "identifier":
            return None  # an attribute or expression passed in: not followed
    return ix, node


def _recaptured(x: Write, word: str) -> bool:
    """`x` is in a loop that captures again when the value (`word`) differs (`if flag not in graphs:` and a capture
    under it): the replays that follow it are that value's own graph."""
    return any(recaptures(x.ix, lp, set(), word) for lp in enclosing_loops(x.node))


def _before_a_replay(w: Walk, x: Write, word: str) -> bool:
    """`x` is in the capture's own scope, after the capture, and a replay of its graph follows it there
    (`freeze = True` then `g.replay()`), in no loop that captures again for the new value (`word`)."""
    region = w.region
    g = region.graph_name
    if g is None or x.ix is not region.ix or x.node.start_byte < region.end_byte:
        return False
    if _recaptured(x, word):
        return False
    ix = region.ix
    scope = ix.scope_of(region.anchor).node
    if ix.scope_of(x.node).node.id != scope.id:
        return False
    tail = ix.src.data[x.node.end_byte:scope.end_byte].replace(b" ", b"")
    return f"{g}.replay(".encode() in tail


_SCOPED = frozenset({"__enter__", "__exit__", "__aenter__", "__aexit__"})


def _scoped(x: Write) -> bool:
    """A write in a context manager's enter/exit (or a @contextmanager): a toggle set and restored around a block
    (recompute regions, modes), not a change made between replays."""
    fn = x.ix.enclosing_function(x.node)
    if fn is None:
        return False
    return fn.name in _SCOPED or any("contextmanager" in x.ix.text(d) for d in fn.decorators)


def _class_of(x: Write) -> str | None:
    fn = x.ix.enclosing_function(x.node)
    return fn.class_name if fn is not None else None


def _is_global_write(x: Write) -> bool:
    fn = x.ix.enclosing_function(x.node)
    left = x.node.child_by_field_name("left")
    return fn is not None and left is not None and x.ix.text(left) in x.ix.scope(fn.node).globals


def _name_writes(w: Walk, ident: Node, frame: Frame, graphed: frozenset[str]) -> tuple[str, list[Write]] | None:
    """A condition on a name: a parameter (followed to the caller's argument), a name of the capture's own scope,
    or a module global read by captured code."""
    bound = _argument_name(frame.ix, frame.env, ident)
    if bound is None:
        return None
    ix, node = bound
    name = ix.text(node)
    _assign, scope, is_param = ix.lookup(name, node)
    if is_param or scope is None:
        return None  # a parameter whose caller the walker did not bind: its callers may pass anything
    owner = scope.node
    if owner.type == "function_definition" and ix is not w.region.ix:
        return None
    return name, name_writes(w.resolver, ix, name, owner, graphed)


RULE = SourceRule(
    id="replay-frozen-branch",
    hazards=(Hazard(_HAZARD, eager_fallback=False),),
    on_condition=(_condition,),
)
