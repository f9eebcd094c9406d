"""The capture walker: visits the code a capture runs (the region's statements and, through callgraph.py, the
functions they call) and hands each node to the enabled rules' detectors (see `rules/_api.py`).

It owns traversal, capture guards (`torch.cuda.is_current_stream_capturing()` and configured names), branches
(a line on a branch the analyser cannot evaluate is reported with that branch; a branch whose condition is a
constant, `if False:` / `if TYPE_CHECKING:`, is walked only where it runs) and call following; it knows no
hazard. Nested definitions, comments and strings' contents are not code the capture runs.

The syntax tree is walked with an explicit stack (generated code nests expressions tens of thousands deep);
only call following recurses, bounded by the call depth.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

from tree_sitter import Node

from denpex.source.capture.regions import CaptureRegion
from denpex.source.engine.facts import (
    _UNKNOWN,
    const_truth,
    const_value,
    has_splat,
    memo_miss,
    memoised,
    param_defaults,
)
from denpex.source.engine.hits import Hit, Sink, branch_head, call_parts, stmt_of
from denpex.source.fixes import edits as F
from denpex.source.fixes.builders import STATEMENT_KINDS, RegionFixBuilder
from denpex.source.model import CallStep, Fix, Severity
from denpex.source.resolve.callgraph import EMPTY_ENV, Env, Resolver, resolve_region_callable
from denpex.source.resolve.index import FileIndex, FuncInfo, Kind, positional
from denpex.source.resolve.kinds import SCALAR_METHODS
from denpex.source.resolve.param_kinds import param_kinds
from denpex.source.rules import RuleSet
from denpex.source.rules._api import CallSite, Frame
from denpex.source.rules._lazy_init import path_functions, warmed_by_callers, warmed_up
from denpex.source.syntax.parse import own_nodes, strip_parens

DEFAULT_GUARDS = frozenset({
    "is_current_stream_capturing", "is_graph_capturing", "get_is_capture_mode", "is_capturing",
    "is_cuda_graph_capturing",
})
MAX_CALL_DEPTH = 64  # a larger configured max-depth is taken as this (each level is a few Python frames)

_SKIP = frozenset({"function_definition", "class_definition", "decorated_definition", "lambda", "comment"})
_EXITS = ("return_statement", "raise_statement", "continue_statement", "break_statement")
# methods of stateful library objects (optimizers, scalers, streams, events, generators) whose receiver is looked
# for across files when the file itself does not build it
_OBJECT_METHODS = frozenset({"step", "update", "synchronize", "query", "manual_seed", "zero_grad"})

# work items of the traversal stack
_VISIT, _CONDITION, _CONDITION_OF_IF = 0, 1, 2
# a value known not to be None (a tensor, a number, a string...), for `x is None` folded with the frame's bindings
_NOT_NONE = object()
_NOT_NONE_KINDS = frozenset({"tensor", "scalar", "str", "bool", "module", "stream", "event", "generator", "graph",
                             "optimizer"})
_FOLD_DEPTH = 8


# calls whose answer is True whenever a CUDA-graph capture runs
_TRUE_WHILE_CAPTURING = frozenset({"torch.cuda.is_available", "torch.cuda.is_initialized"})


def _true_while_capturing(ix: FileIndex, call: Node) -> bool:
    f = call.child_by_field_name("function")
    return f is not None and ix.qualname(f) in _TRUE_WHILE_CAPTURING


class EntryRecorder(Protocol):
    path: str

    def entry(self, w: CaptureWalker, ix: FileIndex, fn: FuncInfo, env: Env, frame: Frame, label: str,
              branch: str | None, step: CallStep | None, maybe: str | None, call: Node | None, pre: Env) -> None: ...


class CaptureWalker:
    def __init__(self, region: CaptureRegion, resolver: Resolver, sink: Sink, rules: RuleSet, *,
                 guards: frozenset[str], max_depth: int) -> None:
        self.region = region
        self.resolver = resolver
        self.sink = sink
        self.rules = rules
        self.guards = guards
        self.max_depth = min(max_depth, MAX_CALL_DEPTH)
        # functions entered, with the branch on the path that entered them (None: entered unconditionally)
        # keyed by (path, start byte) of the function, not node ids: a walk's state carried across an edit of one
        # file (engine/units.py) names the functions of the others as before and that file's by shifted offsets
        self.visited: dict[tuple[str, int], str | None] = {}
        # functions whose walk took a branch decision from a parameter left at its default, with the parameters
        # every entry so far left at their defaults: a call that passes one of them enters the function again
        self.default_used: dict[tuple[str, int], frozenset[str]] = {}
        self.guard_wrappers: dict[tuple[int, str], bool] = {}  # (file index, function name) -> returns a guard
        self.region_stmt_ids = {s.id for s in region.stmts}
        self.torch = F.torch_alias(region.ix)
        self.fixes = RegionFixBuilder(region, resolver, self.torch)
        self.state: dict[object, object] = {}
        self.warm_memo: dict[frozenset[str], bool] = {}
        # kind() per (file, node, bindings, function, deep): the rules ask the kind of one expression in one frame
        # again and again; the frame's env and index are held, so their identities are not reused meanwhile
        self.kind_memo: dict[tuple[int, int, int, int, bool], tuple[Kind, Env, FileIndex]] = {}
        # engine/units.Recorder: takes the entries into one file's functions (None: every entry is walked here)
        self.recorder: EntryRecorder | None = None

    # ---- driving -----------------------------------------------------------------------------------------
    def run(self) -> None:
        r = self.region
        root = Frame(r.ix, EMPTY_ENV, (), 0)
        if r.kind in STATEMENT_KINDS:
            self._walk(list(r.stmts), root)
        elif r.kind == "entry":  # a function a framework (or the configuration) captures
            for fn_node in r.functions:
                info = r.ix.by_node.get(fn_node.id)
                if info is not None:
                    self.enter(r.ix, info, EMPTY_ENV, root, info.name)
        elif r.kind == "graphed_callables":
            for expr in r.callables:
                line, col = r.ix.src.start(expr)
                for t in resolve_region_callable(self.resolver, r.ix, expr):
                    self.enter(t.ix, t.func, t.env, root, t.label, None, CallStep(r.ix.path, line, col, t.label))

    def enter(self, ix: FileIndex, fn: FuncInfo, env: Env, frame: Frame, label: str,
              branch: str | None = None, step: CallStep | None = None, maybe: str | None = None,
              call: Node | None = None, pre: Env = EMPTY_ENV) -> None:
        rec = self.recorder
        if rec is not None and ix.path == rec.path:
            rec.entry(self, ix, fn, env, frame, label, branch, step, maybe, call, pre)
        else:
            self.walk_entry(ix, fn, env, frame, label, branch, step, maybe, call, pre)

    def walk_entry(self, ix: FileIndex, fn: FuncInfo, env: Env, frame: Frame, label: str,
                   branch: str | None = None, step: CallStep | None = None, maybe: str | None = None,
                   call: Node | None = None, pre: Env = EMPTY_ENV) -> None:
        if not self.would_enter(ix, fn, env, frame, branch, maybe, call, pre):
            return
        key = (ix.path, fn.node.start_byte)
        doubt = branch or maybe or frame.maybe
        defaulted = _defaulted(ix, fn, env, pre, call)
        if key in self.visited and (self.visited[key] is None or doubt is not None):
            used = self.default_used.get(key)
            assert used is not None
            self.default_used[key] = used & frozenset(n for n, _ in defaulted)
        self.visited[key] = doubt
        ix.touched.append((fn.node.start_byte, fn.node.end_byte))
        body = fn.body
        if body is None:
            return
        steps = (*frame.steps, step) if step is not None else frame.steps
        child = Frame(ix, env, (*frame.chain, label), frame.depth + 1, fn, branch, steps, frame.maybe or maybe,
                      defaulted)
        if memoised(ix, fn) and self._warmed(child):
            return  # an @lru_cache function the warm-up before the capture ran: its body runs on a miss only
        self._walk([body], child)

    def would_enter(self, ix: FileIndex, fn: FuncInfo, env: Env, frame: Frame, branch: str | None,
                    maybe: str | None, call: Node | None, pre: Env) -> bool:
        """`walk_entry` walks the function's body (it changes nothing when not)."""
        if frame.depth >= self.max_depth:
            return False
        key = (ix.path, fn.node.start_byte)
        if key in self.visited and (self.visited[key] is None or (branch or maybe or frame.maybe) is not None):
            used = self.default_used.get(key)
            # entered already (a function first reached in doubt is entered again when reached without), unless
            # its walk read a default this call passes
            return not (used is None or used <= frozenset(n for n, _ in _defaulted(ix, fn, env, pre, call)))
        return True

    def report(self, hazard: str, node: Node, frame: Frame, fixes: list[Fix | None] | None = None,
               severity: Severity | None = None, message: str | None = None) -> None:
        fx = [f for f in (fixes or []) if f is not None]
        if frame.ix is not self.region.ix:
            fx = [f for f in fx if f.in_place]  # the others edit the capture's file around the region
        elif self.rules.hazards[hazard].eager_fallback:
            fb = self.fixes.eager_fallback()
            if fb is not None:
                fx.append(fb)
        self.sink(Hit(hazard, frame.ix, node, self.region, frame.chain, fx, severity, message, frame.branch,
                      frame.steps, frame.maybe))

    # ---- traversal ---------------------------------------------------------------------------------------
    def _walk(self, roots: list[Node], frame: Frame) -> None:
        """Visit `roots` and what they contain in document order (a call's callees before its arguments)."""
        stack: list[tuple[int, Node, Node | None]] = [(_VISIT, n, None) for n in reversed(roots)]
        rules = self.rules
        ix = frame.ix
        while stack:
            op, node, extra = stack.pop()
            if op != _VISIT:
                self._condition(node, frame, if_stmt=extra if op == _CONDITION_OF_IF else None)
                continue
            t = node.type
            if t in _SKIP:
                continue
            if t == "block" or t == "module":
                kids: list[Node] = []
                for c in node.named_children:
                    kids.append(c)
                    if c.type == "if_statement" and (self._early_exit_guard(ix, c) or self._taken_exit(c, frame)):
                        break
                stack.extend((_VISIT, c, None) for c in reversed(kids))
                continue
            if t == "if_statement":
                stack.extend(reversed(self._if_items(node, frame)))
                continue
            if t == "while_statement":
                cond = node.child_by_field_name("condition")
                if cond is not None:
                    self._condition(cond, frame)
            elif t == "assert_statement":
                if node.named_child_count:
                    self._condition(node.named_children[0], frame)
            elif t == "conditional_expression":
                if node.named_child_count >= 2:
                    cond = node.named_children[1]
                    if self._guard_polarity(ix, cond) is None:
                        self._condition(cond, frame, ternary=node)
                    truth = const_truth(ix, cond) if node.named_child_count == 3 else None
                    if truth is not None:  # `a if False else b`: only the side that runs, and the condition
                        stack.extend((_VISIT, c, None) for c in (node.named_children[0 if truth else 2], cond))
                        continue
            elif t == "boolean_operator":
                for operand in (node.child_by_field_name("left"), node.child_by_field_name("right")):
                    if operand is not None and operand.type != "boolean_operator":
                        self._condition(operand, frame)
            elif t == "not_operator":
                arg = node.child_by_field_name("argument")
                if arg is not None and self._guard_polarity(ix, arg) is None:
                    self._condition(arg, frame)
            elif t == "call":
                self._call(node, frame)
            else:
                hooks = rules.on_node.get(t)
                if hooks:
                    for hook in hooks:
                        hook(self, node, frame)
            stack.extend((_VISIT, c, None) for c in reversed(node.named_children))

    def _if_items(self, node: Node, frame: Frame) -> list[tuple[int, Node, Node | None]]:
        """The work items of an `if` statement, in visiting order: only the branch a capture guard leaves, and
        only the branches a constant condition can take (`if False:`, `if 0:`, `if TYPE_CHECKING:` and module
        constants bound once to a literal are decided, not guessed: facts.const_truth)."""
        ix = frame.ix
        cond = node.child_by_field_name("condition")
        pol = self._guard_polarity(ix, cond) if cond is not None else None
        cons = node.child_by_field_name("consequence")
        alts = node.children_by_field_name("alternative")
        if pol is True:  # if capturing: ...  -> only the consequence runs under capture
            return [(_VISIT, cons, None)] if cons is not None else []
        if pol is False:  # if not capturing: ... -> only the alternatives run under capture
            return [(_VISIT, a, None) for a in alts]
        items: list[tuple[int, Node, Node | None]] = []
        truth = self.truth(cond, frame) if cond is not None else None
        if truth is None and frame.func is not None and memo_miss(ix, node) and self._warmed(frame):
            truth = False  # a cache the warm-up before the capture filled: the miss does not run under capture
        if cond is not None:  # a constant condition still runs (`x.item() > 0 and False`)
            items += [(_CONDITION_OF_IF, cond, node), (_VISIT, cond, None)]
        if truth is not False:
            if cons is not None:
                items.append((_VISIT, cons, None))
            if truth is True:
                return items  # no other clause runs
        for a in alts:
            if a.type == "elif_clause":
                c2 = a.child_by_field_name("condition")
                t2 = None
                if c2 is not None:
                    if self._guard_polarity(ix, c2) is not None:
                        continue
                    t2 = self.truth(c2, frame)
                    items += [(_CONDITION, c2, None), (_VISIT, c2, None)]
                    if t2 is False:
                        continue
                b2 = a.child_by_field_name("consequence")
                if b2 is not None:
                    items.append((_VISIT, b2, None))
                if t2 is True:
                    break
            else:
                items.append((_VISIT, a, None))
        return items

    # ---- conditions decided by the frame's bindings ---------------------------------------------------------
    def truth(self, cond: Node, frame: Frame) -> bool | None:
        """True/False when `cond` is decided: a constant (facts.const_truth), or, inside a called function, a test
        of what the call passed or left at its default (`x is None` for a default `x=None` the call does not pass,
        `isinstance(t, torch.Tensor)` for a tensor argument), through locals bound once from such tests."""
        t = const_truth(frame.ix, cond)
        if t is not None or frame.func is None:
            return t
        return self._fold(cond, frame, 0)

    def _warmed(self, frame: Frame) -> bool:
        """The capture runs, before it, a function on the call path to `frame` (the warm-up that fills the
        caches of the code it captures: rules/_lazy_init.warmed_up), or every caller of the capturing function
        does so first."""
        on_path = path_functions(frame.chain)
        hit = self.warm_memo.get(on_path)
        if hit is None:
            hit = self.warm_memo[on_path] = warmed_up(self.region, None, on_path) or warmed_by_callers(
                self.resolver, self.region, on_path)
        return hit

    def _taken_exit(self, if_stmt: Node, frame: Frame) -> bool:
        """An `if` whose condition is decided True and whose body ends in return/raise: nothing after it runs."""
        body = if_stmt.child_by_field_name("consequence")
        cond = if_stmt.child_by_field_name("condition")
        if body is None or cond is None or frame.func is None:
            return False
        last = [c for c in body.named_children if c.type != "comment"]
        return bool(last) and last[-1].type in ("return_statement", "raise_statement") and self.truth(cond, frame) is True

    def _fold(self, cond: Node, frame: Frame, depth: int) -> bool | None:
        if depth > _FOLD_DEPTH:
            return None
        ix = frame.ix
        cond = strip_parens(cond)
        t = cond.type
        if t == "not_operator":
            v = self._fold(cond.child_by_field_name("argument") or cond, frame, depth + 1)
            return None if v is None else not v
        if t == "boolean_operator":
            left, right = cond.child_by_field_name("left"), cond.child_by_field_name("right")
            a = self._fold(left, frame, depth + 1) if left is not None else None
            b = self._fold(right, frame, depth + 1) if right is not None else None
            if next((ix.text(c) for c in cond.children if not c.is_named), "") == "and":
                return False if a is False or b is False else (True if a and b else None)
            return True if a is True or b is True else (False if a is False and b is False else None)
        if t == "comparison_operator":
            operands = [c for c in cond.named_children if c.type != "comment"]
            ops = " ".join(ix.text(c) for c in cond.children if not c.is_named)
            if len(operands) != 2 or ops not in ("is", "is not", "==", "!="):
                return None
            lv, rv = (self._none_or_not(o, frame, depth) for o in operands)
            if lv is _UNKNOWN or rv is _UNKNOWN or (lv is _NOT_NONE and rv is _NOT_NONE):
                return None  # two values known only not to be None: equal or not is not known
            return (lv is rv) == (ops in ("is", "=="))
        if t == "call":
            return self._isinstance_tensor(cond, frame)
        if t == "identifier":
            value = self._local_value(cond, frame)
            return self._fold(value, frame, depth + 1) if value is not None else None
        return None

    def _none_or_not(self, node: Node, frame: Frame, depth: int) -> object:
        """None, _NOT_NONE or _UNKNOWN: what a test against None can tell of `node` here."""
        node = strip_parens(node)
        if node.type == "none":
            return None
        if node.type in ("integer", "float", "string", "true", "false"):
            return _NOT_NONE
        if depth > _FOLD_DEPTH:
            return _UNKNOWN
        if node.type != "identifier":  # a call, an attribute...: what its shape or kind says
            if _never_none(frame.ix, node):
                return _NOT_NONE
            return _NOT_NONE if self.kind(node, frame).cat in _NOT_NONE_KINDS else _UNKNOWN
        name = frame.ix.text(node)
        default = next((d for n, d in frame.defaulted if n == name), None)
        if default is not None and self._is_param_read(node, frame):
            v = const_value(frame.ix, default)
            if frame.func is not None and v is not _UNKNOWN:
                key = (frame.ix.path, frame.func.node.start_byte)
                self.default_used.setdefault(key, frozenset(n for n, _ in frame.defaulted))
            return _UNKNOWN if v is _UNKNOWN else (None if v is None else _NOT_NONE)
        b = frame.env.get(name) if self._is_param_read(node, frame) else None
        if b is not None and strip_parens(b.node).type == "none":
            return None
        value = self._local_value(node, frame)
        if value is not None:
            v = self._none_or_not(value, frame, depth + 1)
            if v is not _UNKNOWN:
                return v
        if b is not None or value is not None:
            return _NOT_NONE if self.kind(node, frame).cat in _NOT_NONE_KINDS else _UNKNOWN
        return _UNKNOWN

    def _is_param_read(self, node: Node, frame: Frame) -> bool:
        """`node` reads the parameter of its function: nothing in the function rebinds the name."""
        assign, _scope, is_param = frame.ix.lookup(frame.ix.text(node), node)
        return is_param and assign is None

    def _local_value(self, node: Node, frame: Frame) -> Node | None:
        """The value of a local bound once in the function, at its top level, before `node`."""
        ix = frame.ix
        assign, scope, is_param = ix.lookup(ix.text(node), node)
        if is_param or assign is None or assign.value is None or scope is None or frame.func is None:
            return None
        if scope.node.id != frame.func.node.id or len(scope.assigns.get(ix.text(node), ())) != 1:
            return None
        if assign.start_byte >= node.start_byte or assign.stmt.type != "assignment":
            return None
        st = stmt_of(assign.stmt, ix.src)
        body = frame.func.body
        if body is None or st.parent is None or st.parent.id != body.id:
            return None  # bound inside a branch, loop, with or try
        return assign.value

    def _isinstance_tensor(self, call: Node, frame: Frame) -> bool | None:
        """`isinstance(x, torch.Tensor)` with x's kind known from the frame's bindings."""
        ix = frame.ix
        f = call.child_by_field_name("function")
        args = positional(call)
        if f is None or ix.text(f) != "isinstance" or len(args) != 2:
            return None
        if (ix.qualname(args[1]) or "") != "torch.Tensor":
            return None
        subject = strip_parens(args[0])
        if subject.type != "identifier" or (frame.env.get(ix.text(subject)) is None
                                            and self._local_value(subject, frame) is None):
            return None  # only what a caller passed, or a local, is known here
        k = self.kind(subject, frame)
        if k.tensor:
            return True
        return False if k.cat in ("scalar", "str", "bool", "none") else None

    def _condition(self, cond: Node, frame: Frame, if_stmt: Node | None = None, ternary: Node | None = None) -> None:
        for hook in self.rules.on_condition:
            hook(self, cond, frame, if_stmt, ternary)

    def _guard_polarity(self, ix: FileIndex, cond: Node) -> bool | None:
        """True if cond is a capture guard, False if `not guard`, None otherwise."""
        cond = strip_parens(cond)
        neg = False
        if cond.type == "not_operator":
            arg = cond.child_by_field_name("argument")
            if arg is None:
                return None
            cond, neg = strip_parens(arg), True
        if cond.type == "call":
            if self._guard_call(ix, cond) or self._guard_wrapper_call(ix, cond):
                return not neg
        elif cond.type == "boolean_operator" and self._and_guard(ix, cond):
            return not neg  # `torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()`
        elif cond.type in ("identifier", "attribute"):
            name = ix.text(cond).rsplit(".", 1)[-1]
            if name in self.guards:
                return not neg
            bound = _bound_once(ix, cond) if cond.type == "identifier" else None
            if bound is not None and bound.type == "call" and (
                    self._guard_call(ix, bound) or self._guard_wrapper_call(ix, bound)):
                return not neg  # `capturing = torch.cuda.is_current_stream_capturing()` ... `if capturing:`
        return None

    def _and_guard(self, ix: FileIndex, cond: Node) -> bool:
        """An `and` of a capture guard with tests that hold whenever a capture runs (`torch.cuda.is_available()`):
        it is true exactly when the guard is."""
        top = cond.child_by_field_name("operator")
        if top is None or top.type != "and":
            return False
        parts: list[Node] = []
        stack = [cond]
        while stack:
            n = strip_parens(stack.pop())
            op = n.child_by_field_name("operator") if n.type == "boolean_operator" else None
            if op is not None and op.type == "and":
                stack.extend(c for c in (n.child_by_field_name("left"), n.child_by_field_name("right")) if c)
            else:
                parts.append(n)
        guards = [p for p in parts if p.type != "boolean_operator" and self._guard_polarity(ix, p) is True]
        rest = [p for p in parts if not any(p.id == g.id for g in guards)]
        return bool(guards) and all(p.type == "call" and _true_while_capturing(ix, p) for p in rest)

    def _guard_call(self, ix: FileIndex, call: Node) -> bool:
        f = call.child_by_field_name("function")
        name = ix.text(f).rsplit(".", 1)[-1] if f is not None else ""
        q = ix.qualname(f) if f is not None else None
        return name in self.guards or (q is not None and q in self.guards)

    def _guard_wrapper_call(self, ix: FileIndex, call: Node) -> bool:
        """A call of a function of this file that returns a capture guard's answer (or False, for no device):
        `def _capturing(dev): if dev.type != "cuda": return False; return torch.cuda.is_current_stream_capturing()`."""
        f = call.child_by_field_name("function")
        if f is None or f.type != "identifier":
            return False
        name = ix.text(f)
        key = (id(ix), name)
        known = self.guard_wrappers.get(key)
        if known is None:
            known = self.guard_wrappers[key] = any(fn.name == name and fn.class_name is None
                                                   and self._returns_guard(ix, fn) for fn in ix.functions)
        return known

    def _returns_guard(self, ix: FileIndex, fn: FuncInfo) -> bool:
        body = fn.body
        rets = [n for n in own_nodes(body) if n.type == "return_statement"] if body is not None else []
        values = [strip_parens(r.named_children[0]) if r.named_child_count else None for r in rets]
        # `return torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()`: the guard's answer
        # (or False): the last operand of an `and` decides
        values = [_and_tail(ix, v) if v is not None else None for v in values]
        guards = {v.id for v in values if v is not None and v.type == "call" and self._guard_call(ix, v)}
        return bool(guards) and all(v is not None and (v.type == "false" or v.id in guards) for v in values)

    def _early_exit_guard(self, ix: FileIndex, if_stmt: Node) -> bool:
        cond = if_stmt.child_by_field_name("condition")
        body = if_stmt.child_by_field_name("consequence")
        if cond is None or body is None or self._guard_polarity(ix, cond) is not True:
            return False
        last = [c for c in body.named_children if c.type != "comment"]
        return bool(last) and last[-1].type in _EXITS

    # ---- calls -------------------------------------------------------------------------------------------
    def _call(self, call: Node, frame: Frame) -> None:
        ix = frame.ix
        f, q, meth, recv = call_parts(ix, call)
        if f is None:
            return
        stmt = stmt_of(call, ix.src)
        rk = self.kind(recv, frame, deep=meth in _OBJECT_METHODS) if recv is not None else None
        site = CallSite(call, frame, f, q, meth, recv, rk,
                        positional(call), stmt, self.direct(stmt, frame))
        for claim in self.rules.claims:
            if claim.detect(self, site):
                break
        for hook in self.rules.on_call:
            hook(self, site)
        self._follow(site)

    def _follow(self, site: CallSite) -> None:
        """Enter the functions a call reaches (and callables passed to library code, which runs them)."""
        frame = site.frame
        if frame.depth >= self.max_depth:
            return
        ix, call = frame.ix, site.node
        targets = self.resolver.resolve_call(ix, call, frame.env)
        anchor = self.region.anchor if frame.depth == 0 and ix is self.region.ix else None
        branch = frame.branch or (branch_head(ix.src, call, anchor) if targets or site.args else None)
        line, col = ix.src.start(call)
        for tgt in targets:
            if tgt.role == "kernel":
                continue  # a Triton kernel's body is GPU code: none of the host-side rules apply inside it
            self.enter(tgt.ix, tgt.func, tgt.env, frame, tgt.label, branch, CallStep(ix.path, line, col, tgt.label),
                       tgt.guess, None if tgt.skip or tgt.guess else call, tgt.pre)
        if not targets and site.qualname not in ("print",):
            # callables passed to library code run inside the capture (checkpoint(block, x), ...)
            for a in site.args:
                if strip_parens(a).type == "lambda" or (strip_parens(a).type in ("identifier", "attribute")
                                                        and not self.kind(a, frame).tensor):
                    for tgt in self.resolver.resolve_callable(ix, a, frame.env):
                        al, ac = ix.src.start(a)
                        self.enter(tgt.ix, tgt.func, tgt.env, frame, tgt.label, branch,
                                   CallStep(ix.path, al, ac, tgt.label), tgt.guess)

    def direct(self, stmt: Node, frame: Frame) -> bool:
        return frame.depth == 0 and stmt.id in self.region_stmt_ids

    # ---- kinds under bindings ----------------------------------------------------------------------------
    def kind(self, node: Node, frame: Frame, deep: bool = False) -> Kind:
        """The kind of `node` where the frame's bindings hold; `deep`: an object the file does not build
        (`opt = build_optimizer(model)`) takes its kind from its construction wherever it is (values.py)."""
        node = strip_parens(node)
        key = (id(frame.ix), node.id, id(frame.env), frame.func.node.id if frame.func is not None else -1, deep)
        hit = self.kind_memo.get(key)
        if hit is not None:
            return hit[0]
        k = self._kind(node, frame, deep)
        self.kind_memo[key] = (k, frame.env, frame.ix)
        return k

    def _kind(self, node: Node, frame: Frame, deep: bool) -> Kind:
        if node.type == "identifier":
            b = frame.env.get(frame.ix.text(node))
            for _ in range(MAX_CALL_DEPTH):  # an argument that is itself a parameter of the caller: its binding
                if b is None:
                    break
                inner = strip_parens(b.node)
                nxt = b.env.get(b.ix.text(inner)) if inner.type == "identifier" else None
                if nxt is None:
                    return b.ix.kind(b.node, 0, param_kinds(b.ix, b.env, b.ix.enclosing_function(b.node)))
                b = nxt
        k = frame.ix.kind(node, 0, param_kinds(frame.ix, frame.env, frame.func))
        if deep and k.cat in ("unknown", "param") and node.type in ("identifier", "attribute"):
            # an object made elsewhere (`opt = build_optimizer(model)`): its kind where it is constructed
            lib = self.resolver.library_kind_site(frame.ix, node, frame.env)
            if lib is not None:
                lk = lib.ix.kind(lib.node)
                if lk.cat not in ("unknown", "param"):
                    return replace(lk, home=lib.ix) if lib.ix is not frame.ix else lk
        return k

    def tensorish(self, node: Node, frame: Frame) -> bool:
        """A tensor, or arithmetic or a comparison over one (identity and membership tests are Python bools)."""
        stack = [node]
        while stack:
            n = strip_parens(stack.pop())
            if self.kind(n, frame).tensor:
                return True
            if n.type == "comparison_operator":
                ops = [frame.ix.text(c) for c in n.children if not c.is_named]
                if any(o in ("is", "is not", "in", "not in") for o in ops):
                    continue
                stack.extend(reversed(n.named_children))
            elif n.type == "binary_operator":
                stack.extend(reversed(n.named_children))
        return False


# Values that are never None whatever their receiver's type: arithmetic and comparisons, builtins that build a
# value, and a tensor's size queries (`n == w.size(0)` with n=None is False even where `w` is not typed: vLLM's
# `with_ep = n is not None or n == num_experts` in tests/kernels/moe/test_cutlass_moe.py)
_VALUE_BUILTINS = frozenset({"len", "int", "float", "bool", "str", "tuple", "list", "dict", "set", "range", "abs",
                             "round", "sum", "isinstance", "hasattr", "callable"})
_SIZE_ATTRS = frozenset({"shape", "ndim"})


def _never_none(ix: FileIndex, node: Node) -> bool:
    if node.type in ("binary_operator", "comparison_operator", "not_operator", "unary_operator", "list", "tuple",
                     "dictionary", "set", "list_comprehension", "concatenated_string"):
        return True
    if node.type == "subscript":  # `w.shape[0]`
        value = node.child_by_field_name("value")
        return value is not None and value.type == "attribute" and ix.text(value).rsplit(".", 1)[-1] in _SIZE_ATTRS
    if node.type == "attribute":
        return ix.text(node).rsplit(".", 1)[-1] in _SIZE_ATTRS
    if node.type != "call":
        return False
    fn = node.child_by_field_name("function")
    if fn is None:
        return False
    if fn.type == "identifier":  # a builtin only where nothing in the file rebinds its name
        if ix.text(fn) not in _VALUE_BUILTINS:
            return False
        bound, _scope, is_param = ix.lookup(ix.text(fn), node)
        return bound is None and not is_param
    return fn.type == "attribute" and ix.text(fn).rsplit(".", 1)[-1] in SCALAR_METHODS


def _defaulted(ix: FileIndex, fn: FuncInfo, env: Env, pre: Env, call: Node | None) -> tuple[tuple[str, Node], ...]:
    """The parameters with a default that `call` binds to nothing (a call without splats binds all it passes)."""
    if call is None or call.type != "call" or has_splat(call):
        return ()
    bound = {k for k, _ in env.params} | {k for k, _ in pre.params}
    return tuple((name, d) for name, d in param_defaults(ix, fn.node).items() if name not in bound)


def _bound_once(ix: FileIndex, name: Node) -> Node | None:
    """The value of a name its scope binds once, by a plain assignment before `name`."""
    assign, scope, is_param = ix.lookup(ix.text(name), name)
    if is_param or assign is None or assign.value is None or scope is None:
        return None
    if len(scope.assigns.get(ix.text(name), ())) != 1 or assign.stmt.type != "assignment":
        return None
    return strip_parens(assign.value) if assign.start_byte < name.start_byte else None


def _and_tail(ix: FileIndex, v: Node) -> Node:
    """The last operand of `a and b` (what decides a guard wrapper's answer), else `v` itself."""
    op = v.child_by_field_name("operator") if v.type == "boolean_operator" else None
    right = v.child_by_field_name("right")
    if op is not None and right is not None and ix.text(op) == "and":
        return strip_parens(right)
    return v
