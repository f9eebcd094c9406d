"""replay-capturing-branch (DPX316): a branch on `torch.cuda.is_current_stream_capturing()` (or a configured
capture guard) whose sides differ in device work that the rest of the code uses: `if not capturing: h = h + noise`
runs eagerly and never in the graph, so every replay computes something other than eager.

A guard around host-only work (logging, `print`, `.item()` for metrics, a Python counter, a host list of
numbers) is the legal idiom and stays clean; so does a branch whose two sides transform the same value (two
implementations of one step, one capture-safe). Error where one side transforms a tensor that code after the
`if` reads (`x = f(x)`, `x += t`, `x.mul_(s)`); warning for an in-place update of module state (`self.ema.mul_()`),
which host code may replay separately. The finding sits on the guard's condition (the branch is what the
graph gets wrong) and names the line that changes the value."""

from __future__ import annotations

from tree_sitter import Node

from denpex.source.rules._api import CallSite, Frame, Hazard, SourceRule, Walk
from denpex.source.rules._frozen import where
from denpex.source.syntax.mentions import identifiers
from denpex.source.syntax.parse import strip_parens

_HAZARD = "capturing-branch"
_RULE = "replay-capturing-branch"
_GUARDS = frozenset({"is_current_stream_capturing", "is_graph_capturing", "get_is_capture_mode", "is_capturing",
                     "is_cuda_graph_capturing"})
_SKIP = frozenset({"function_definition", "class_definition", "decorated_definition", "lambda"})
# conversions to host values: a statement that makes one is bookkeeping, not device work
_HOST = ("item(", "tolist(", ".cpu(", "numpy(", "float(", "int(", "bool(", "len(", "str(", "format(")
_INPLACE_SKIP = frozenset({"requires_grad_", "share_memory_", "record_stream_"})
# in-place tensor methods an attribute (module state) is updated with
_INPLACE = frozenset({"add_", "sub_", "mul_", "div_", "copy_", "zero_", "fill_", "clamp_", "lerp_", "addcmul_",
                      "addcdiv_", "pow_", "sqrt_", "neg_", "exp_", "masked_fill_", "index_add_",
                      "scatter_", "scatter_add_", "index_copy_", "uniform_", "normal_", "bernoulli_"})


def _visit(w: Walk, node: Node, frame: Frame) -> None:
    """Look at the capture guards of each function the capture runs (and of the region itself) once."""
    if w.region.kind == "compile":
        return  # Dynamo traces the eager side (the guard is False while tracing): the graph is that side
    # one flag per function, keyed as walker.visited (an entry's writes are compared across edits: units.py)
    key = (_RULE, frame.ix.path, frame.func.node.start_byte if frame.func is not None else -1)
    if w.state.get(key):
        return
    w.state[key] = True
    if frame.func is not None:
        body = frame.func.body
        roots = [body] if body is not None else []
        scope_end = frame.func.node.end_byte
    elif frame.depth == 0 and frame.ix is w.region.ix:
        roots = list(w.region.stmts)
        scope = frame.ix.scope_of(w.region.anchor).node
        scope_end = scope.end_byte
    else:
        return
    guards = frozenset(getattr(w, "guards", _GUARDS))
    data = frame.ix.src.data
    spelled = [g.encode("utf-8", "surrogatepass") for g in guards]
    for root in roots:
        # a guard's condition spells its name: code that spells none has no `if` to look at (found by a search
        # of its bytes, not a walk of its every node)
        if not any(data.find(g, root.start_byte, root.end_byte) >= 0 for g in spelled):
            continue
        for if_stmt in _ifs(root):
            _judge(w, if_stmt, frame, guards, scope_end)


def _call_site(w: Walk, site: CallSite) -> None:
    _visit(w, site.node, site.frame)


def _ifs(root: Node) -> list[Node]:
    out: list[Node] = []
    stack = [root]
    while stack:
        n = stack.pop()
        if n.type in _SKIP:
            continue
        if n.type == "if_statement":
            out.append(n)
        stack.extend(reversed(n.named_children))
    return out


def _polarity(w: Walk, frame: Frame, cond: Node, guards: frozenset[str]) -> bool | None:
    """True for a capture guard, False for `not guard`, None otherwise."""
    ix = frame.ix
    cond = strip_parens(cond)
    neg = False
    if cond.type == "not_operator":
        arg = cond.child_by_field_name("argument")
        if arg is None:
            return None
        cond, neg = strip_parens(arg), True
    if cond.type == "call":
        f = cond.child_by_field_name("function")
        name = ix.text(f).rsplit(".", 1)[-1] if f is not None else ""
        return (not neg) if name in guards else None
    if cond.type in ("identifier", "attribute") and ix.text(cond).rsplit(".", 1)[-1] in guards:
        return not neg
    return None


def _judge(w: Walk, if_stmt: Node, frame: Frame, guards: frozenset[str], scope_end: int) -> None:
    cond = if_stmt.child_by_field_name("condition")
    if cond is None:
        return
    pol = _polarity(w, frame, cond, guards)
    if pol is None:
        return
    cons = if_stmt.child_by_field_name("consequence")
    alts = [a for a in if_stmt.children_by_field_name("alternative")]
    alt_bodies = [b for a in alts if (b := a.child_by_field_name("body") or a.child_by_field_name("consequence"))]
    if any(a.type == "elif_clause" for a in alts):
        return  # an elif chain mixes other conditions in: not judged
    side_cons = [cons] if cons is not None else []
    captured, eager = (side_cons, alt_bodies) if pol else (alt_bodies, side_cons)
    ix = frame.ix
    got_c = _transforms(w, frame, captured)
    got_e = _transforms(w, frame, eager)
    both = {n for n, _s, _k in got_c} & {n for n, _s, _k in got_e}
    for side, found in (("only when not capturing", got_e), ("only while capturing", got_c)):
        for name, stmt, kind in found:
            if name in both:
                continue  # both sides change it: two implementations of one step
            if kind == "state":
                w.report(_HAZARD, cond, frame, severity="warning", message=(
                    f"`{name}` is updated in place at {where(ix, stmt)} {side} (under `{ix.text(cond)}`): the "
                    "graph and eager runs differ in that update; if nothing else makes it up between replays, "
                    "replays compute something other than eager (may be silently wrong)"))
                return
            if not any(m.start_byte >= if_stmt.end_byte for m in identifiers(ix, name, if_stmt.end_byte, scope_end)):
                continue  # not read after the branch: work for the branch's own host-side use
            w.report(_HAZARD, cond, frame, message=(
                f"`{name}` is changed at {where(ix, stmt)} {side} (under `{ix.text(cond)}`), and code after the "
                "branch uses it: the graph records the other side, so every replay computes something other "
                "than eager (silently wrong)"))
            return


def _host(text: str) -> bool:
    return any(h in text for h in _HOST)


def _transforms(w: Walk, frame: Frame, blocks: list[Node]) -> list[tuple[str, Node, str]]:
    """(name, statement, "value" | "state") for each statement of `blocks` that changes a tensor: `x = f(x)`,
    `x op= t` on a tensor, `x.op_(...)` (an attribute receiver: "state"). Host bookkeeping is left out."""
    ix = frame.ix
    out: list[tuple[str, Node, str]] = []
    for b in blocks:
        for st in _statements(b):
            if st.type != "expression_statement" or not st.named_children:
                continue
            e = st.named_children[0]
            text = ix.text(e)
            if _host(text):
                continue
            if e.type == "assignment":
                left, right = e.child_by_field_name("left"), e.child_by_field_name("right")
                if left is None or right is None or left.type != "identifier":
                    continue
                name = ix.text(left)
                reads_self = any(True for _ in identifiers(ix, name, right.start_byte, right.end_byte))
                if reads_self and right.type in ("call", "binary_operator") and _devicey(w, frame, right):
                    out.append((name, st, "value"))
            elif e.type == "augmented_assignment":
                left = e.child_by_field_name("left")
                if left is not None and left.type == "identifier" and w.tensorish(left, frame):
                    out.append((ix.text(left), st, "value"))
            elif e.type == "call":
                f = e.child_by_field_name("function")
                if f is None or f.type != "attribute":
                    continue
                a, obj = f.child_by_field_name("attribute"), f.child_by_field_name("object")
                if a is None or obj is None:
                    continue
                m = ix.text(a)
                if not m.endswith("_") or m.startswith("_") or m in _INPLACE_SKIP:
                    continue
                if obj.type == "identifier":
                    out.append((ix.text(obj), st, "value"))
                elif obj.type == "attribute" and (m in _INPLACE or w.tensorish(obj, frame)):
                    out.append((ix.text(obj), st, "state"))
    return out


def _devicey(w: Walk, frame: Frame, right: Node) -> bool:
    """The value computed is device work: tensor arithmetic, a call that is not a Python builtin, or arithmetic
    with something other than number literals (`h + self.bias`, not `n + 1`)."""
    if w.tensorish(right, frame):
        return True
    if right.type == "call":
        f = right.child_by_field_name("function")
        name = frame.ix.text(f) if f is not None else ""
        return name not in ("len", "min", "max", "abs", "round", "sum", "list", "tuple", "dict", "sorted")
    if right.type == "binary_operator":
        return any(strip_parens(c).type not in ("integer", "float", "identifier", "string")
                   for c in right.named_children)
    return False


def _statements(block: Node) -> list[Node]:
    """The statements of a block, nested blocks' included (not nested definitions)."""
    out: list[Node] = []
    stack = [block]
    while stack:
        n = stack.pop()
        if n.type in _SKIP:
            continue
        if n.type == "expression_statement":
            out.append(n)
            continue
        stack.extend(reversed(n.named_children))
    return out


RULE = SourceRule(
    id=_RULE,
    hazards=(Hazard(_HAZARD, eager_fallback=False),),
    on_call=(_call_site,),
    on_node={"assignment": (_visit,), "augmented_assignment": (_visit,)},
)
