"""The detectors: what breaks or silently corrupts a CUDA-graph capture (ground truth: gpu/FINDINGS.md).

Two families:
- `CaptureWalker` visits the code a capture runs (the region's statements and, through callgraph.py, the
  functions they call) and reports host syncs, host<->device copies, dynamic shapes, stream, RNG, optimizer
  and lazy-init hazards. Guarded branches (`torch.cuda.is_current_stream_capturing()` and configured guard
  names), nested definitions, comments and strings are skipped.
- `around_region` looks at the code after a capture in the same scope (the replay side): rebinding, deleting
  or aliasing static tensors, Python scalars changed after capture, shape changes, and reduce-overhead outputs.

Each report names a detector (`hazard`); the rule book maps detectors to rules (`source.hazards`).
"""

from __future__ import annotations

import heapq
import itertools
import re
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache

from tree_sitter import Node, QueryCursor

from denpex.source import fixes as F
from denpex.source.callgraph import EMPTY_ENV, Env, Resolver, resolve_region_callable
from denpex.source.index import FileIndex, FuncInfo, Kind, Scope, kwarg, positional
from denpex.source.model import Fix, Severity, TextEdit
from denpex.source.parse import (
    ParsedSource,
    compile_query,
    run_query,
    run_query_range,
    strip_parens,
    walk,
)
from denpex.source.regions import (
    CG_MODES,
    CaptureRegion,
    _string_value,
    is_inside_stream_context,
    opens_stream_context,
)

DEFAULT_GUARDS = frozenset({
    "is_current_stream_capturing", "is_graph_capturing", "get_is_capture_mode", "is_capturing",
    "is_cuda_graph_capturing",
})
RNG_FUNCS = frozenset({"rand", "randn", "randint", "randperm", "normal", "bernoulli", "multinomial", "rand_like",
                       "randn_like", "dropout", "poisson"})
SEED_FUNCS = frozenset({"torch.manual_seed", "torch.cuda.manual_seed", "torch.cuda.manual_seed_all", "torch.seed",
                        "torch.cuda.seed", "torch.cuda.seed_all", "torch.set_rng_state", "torch.cuda.set_rng_state",
                        "torch.cuda.set_rng_state_all", "torch.random.set_rng_state"})
GET_STATE_FUNCS = frozenset({"torch.get_rng_state", "torch.cuda.get_rng_state", "torch.cuda.get_rng_state_all",
                             "torch.random.get_rng_state"})
CUBLAS_FUNCS = frozenset({"torch.matmul", "torch.mm", "torch.bmm", "torch.addmm", "torch.baddbmm", "torch.einsum",
                          "torch.nn.functional.linear", "torch.linalg.matmul"})
CUDNN_FUNCS = frozenset({"torch.nn.functional.conv1d", "torch.nn.functional.conv2d", "torch.nn.functional.conv3d",
                         "torch.conv2d", "torch.conv1d", "torch.conv3d"})
LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "log"})
TIMERS = frozenset({"time.time", "time.perf_counter", "time.monotonic", "time.process_time", "time.time_ns",
                    "time.perf_counter_ns"})


@dataclass
class Hit:
    hazard: str
    ix: FileIndex
    node: Node
    region: CaptureRegion
    chain: tuple[str, ...] = ()
    fixes: list[Fix] = field(default_factory=list)
    severity: Severity | None = None
    message: str | None = None
    branch: str | None = None  # a branch on the call path from the capture to here (see branch_head)


_BRANCH_CLAUSES = frozenset({"if_statement", "elif_clause", "else_clause", "except_clause", "case_clause"})


def branch_head(src: ParsedSource, node: Node, anchor: Node | None) -> str | None:
    """The header of the branch (`if c:`, `elif c:`, `else:`, `except E:`, `case p:`, or a conditional
    expression's `if c`) whose body holds `node` inside its function, or None. A branch that also holds the
    capture `anchor` does not count: the capture and the line run together."""
    n = node
    while n.parent is not None:
        p = n.parent
        if p.type in ("function_definition", "lambda", "class_definition", "module") or (
            anchor is not None and p.id == anchor.id
        ):
            return None
        if n.type == "block" and p.type in _BRANCH_CLAUSES and not (
            p.type == "else_clause" and (p.parent is None or p.parent.type != "if_statement")
        ):  # a loop's or a try's `else:` runs in the usual case
            if anchor is not None and p.start_byte <= anchor.start_byte < p.end_byte:
                return None
            head = _header(src, p)
            if p.type == "else_clause" and p.parent is not None:
                head = f"{head}` of `{_header(src, p.parent)}"
            return head
        if p.type == "conditional_expression" and p.named_child_count == 3 and p.named_children[1].id != n.id:
            return "if " + " ".join(src.node_text(p.named_children[1]).split())[:77]
        n = p
    return None


def _header(src: ParsedSource, clause: Node) -> str:
    """`if c:` / `except E:` ...: a clause's text up to its colon, on one line, shortened."""
    colon = next((c for c in clause.children if c.type == ":"), None)
    end = colon.end_byte if colon is not None else clause.start_byte
    head = " ".join(src.data[clause.start_byte:end].decode("utf-8", "surrogatepass").split())
    return head if len(head) <= 60 else head[:57].rstrip() + "...:"


@dataclass
class Frame:
    ix: FileIndex
    env: Env
    chain: tuple[str, ...]
    depth: int
    func: FuncInfo | None = None
    branch: str | None = None  # the first branch on the call path from the capture to this function


Sink = Callable[[Hit], None]


def _call_parts(ix: FileIndex, call: Node) -> tuple[Node | None, str | None, str | None, Node | None]:
    """(function node, qualified name, method name, receiver)."""
    f = call.child_by_field_name("function")
    if f is None:
        return None, None, None, None
    q = ix.qualname(f)
    if f.type == "attribute":
        attr = f.child_by_field_name("attribute")
        return f, q, ix.text(attr) if attr is not None else None, f.child_by_field_name("object")
    return f, q, None, None


def _stmt_of(node: Node) -> Node:
    n = node
    while n.parent is not None and n.parent.type not in ("block", "module"):
        n = n.parent
    return n


class CaptureWalker:
    def __init__(self, region: CaptureRegion, resolver: Resolver, sink: Sink, *, guards: frozenset[str],
                 max_depth: int) -> None:
        self.region = region
        self.resolver = resolver
        self.sink = sink
        self.guards = guards
        self.max_depth = max_depth
        # functions entered, with the branch on the path that entered them (None: entered unconditionally)
        self.visited: dict[tuple[int, int], str | None] = {}
        self.rng_reported = False
        self.lazy_reported: set[str] = set()
        self.region_stmt_ids = {s.id for s in region.stmts}
        self.torch = F.torch_alias(region.ix)
        self._replays: list[Node] | None = None
        self._replays_done = False
        self._fallback: Fix | None = None
        self._fallback_done = False

    # ---- driving -----------------------------------------------------------------------------------------
    def run(self) -> None:
        r = self.region
        root = Frame(r.ix, EMPTY_ENV, (), 0)
        if r.kind in ("graph", "wrapper", "capture_begin"):
            for st in r.stmts:
                self.visit(st, root)
        elif r.kind == "graphed_callables":
            for expr in r.callables:
                for t in resolve_region_callable(self.resolver, r.ix, expr):
                    self.enter(t.ix, t.func, t.env, root, t.label)

    def enter(self, ix: FileIndex, fn: FuncInfo, env: Env, frame: Frame, label: str, branch: str | None = None) -> None:
        if frame.depth >= self.max_depth:
            return
        key = (id(ix), fn.node.id)
        if key in self.visited and (self.visited[key] is None or branch is not None):
            return  # entered already (a function first reached on a branch is entered again when reached without)
        self.visited[key] = branch
        ix.touched.append((fn.node.start_byte, fn.node.end_byte))
        body = fn.body
        if body is None:
            return
        child = Frame(ix, env, (*frame.chain, label), frame.depth + 1, fn, branch)
        self.visit(body, child)

    def report(self, hazard: str, node: Node, frame: Frame, fixes: list[Fix | None] | None = None,
               severity: Severity | None = None, message: str | None = None) -> None:
        fx = [f for f in (fixes or []) if f is not None]
        if frame.ix is not self.region.ix:
            fx = [f for f in fx if f.title.startswith(("Skip it", "Static buffer:", "Compute both", "Select on",
                                                       "Mask on", "Write the scalar", "Use ", "Fork the",
                                                       "Join the", "Create the optimizer"))]
        elif hazard not in ("empty-cache", "pinned-nonblocking-copy", "default-generator-rng", "rng-state-get"):
            if not self._fallback_done:
                self._fallback_done = True
                self._fallback = eager_fallback(self.region, self.replays())
            if self._fallback is not None:
                fx.append(self._fallback)
        self.sink(Hit(hazard, frame.ix, node, self.region, frame.chain, fx, severity, message, frame.branch))

    # ---- traversal ---------------------------------------------------------------------------------------
    def visit(self, node: Node, frame: Frame) -> None:
        t = node.type
        if t in ("function_definition", "class_definition", "decorated_definition", "lambda", "comment"):
            return
        if t == "block" or t == "module":
            for c in node.named_children:
                self.visit(c, frame)
                if c.type == "if_statement" and self._early_exit_guard(frame.ix, c):
                    break
            return
        if t == "if_statement":
            self._visit_if(node, frame)
            return
        if t in ("while_statement",):
            cond = node.child_by_field_name("condition")
            if cond is not None:
                self._check_bool(cond, frame)
        elif t == "assert_statement":
            if node.named_child_count:
                self._check_bool(node.named_children[0], frame)
        elif t == "conditional_expression":
            if node.named_child_count >= 2:
                cond = node.named_children[1]
                if self._guard_polarity(frame.ix, cond) is None:
                    self._check_bool(cond, frame, ternary=node)
        elif t == "boolean_operator":
            for operand in (node.child_by_field_name("left"), node.child_by_field_name("right")):
                if operand is not None and operand.type != "boolean_operator":
                    self._check_bool(operand, frame)
        elif t == "not_operator":
            arg = node.child_by_field_name("argument")
            if arg is not None and self._guard_polarity(frame.ix, arg) is None:
                self._check_bool(arg, frame)
        elif t == "call":
            self._visit_call(node, frame)
        elif t == "subscript":
            self._check_mask_index(node, frame)
        elif t == "assignment":
            self._check_setitem(node, frame)
        elif t == "augmented_assignment":
            self._check_counter(node, frame)
        elif t == "with_statement":
            self._check_side_stream(node, frame)
        elif t == "string":
            self._check_fstring(node, frame)
        for c in node.named_children:
            self.visit(c, frame)

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
            f = cond.child_by_field_name("function")
            name = ix.text(f).rsplit(".", 1)[-1] if f is not None else ""
            q = ix.qualname(f) if f is not None else None
            if name in self.guards or (q is not None and q in self.guards):
                return not neg
        elif cond.type in ("identifier", "attribute"):
            name = ix.text(cond).rsplit(".", 1)[-1]
            if name in self.guards:
                return not neg
        return None

    def _early_exit_guard(self, ix: FileIndex, if_stmt: Node) -> bool:
        cond = if_stmt.child_by_field_name("condition")
        body = if_stmt.child_by_field_name("consequence")
        if cond is None or body is None or self._guard_polarity(ix, cond) is not True:
            return False
        last = [c for c in body.named_children if c.type != "comment"]
        return bool(last) and last[-1].type in ("return_statement", "raise_statement", "continue_statement",
                                                 "break_statement")

    def _visit_if(self, node: Node, frame: Frame) -> None:
        cond = node.child_by_field_name("condition")
        pol = self._guard_polarity(frame.ix, cond) if cond is not None else None
        cons = node.child_by_field_name("consequence")
        alts = node.children_by_field_name("alternative")
        if pol is True:  # if capturing: ...  -> only the consequence runs under capture
            if cons is not None:
                self.visit(cons, frame)
            return
        if pol is False:  # if not capturing: ... -> only the alternatives run under capture
            for a in alts:
                self.visit(a, frame)
            return
        if cond is not None:
            self._check_bool(cond, frame, if_stmt=node)
            self.visit(cond, frame)
        if cons is not None:
            self.visit(cons, frame)
        for a in alts:
            if a.type == "elif_clause":
                c2 = a.child_by_field_name("condition")
                if c2 is not None:
                    if self._guard_polarity(frame.ix, c2) is not None:
                        continue
                    self._check_bool(c2, frame)
                    self.visit(c2, frame)
                b2 = a.child_by_field_name("consequence")
                if b2 is not None:
                    self.visit(b2, frame)
            else:
                self.visit(a, frame)

    # ---- kinds under bindings ----------------------------------------------------------------------------
    def kind(self, node: Node, frame: Frame) -> Kind:
        node = strip_parens(node)
        if node.type == "identifier":
            b = frame.env.get(frame.ix.text(node))
            if b is not None:
                return b.ix.kind(b.node)
        return frame.ix.kind(node)

    def tensorish(self, node: Node, frame: Frame) -> bool:
        node = strip_parens(node)
        k = self.kind(node, frame)
        if k.tensor:
            return True
        if node.type == "comparison_operator":
            ops = [frame.ix.text(c) for c in node.children if not c.is_named]
            if any(o in ("is", "is not", "in", "not in") for o in ops):
                return False
            return any(self.tensorish(c, frame) for c in node.named_children)
        if node.type == "binary_operator":
            return any(self.tensorish(c, frame) for c in node.named_children)
        return False

    # ---- detectors: conditions ---------------------------------------------------------------------------
    def _check_bool(self, cond: Node, frame: Frame, if_stmt: Node | None = None, ternary: Node | None = None) -> None:
        c = strip_parens(cond)
        if c.type in ("boolean_operator", "not_operator"):
            return  # the operands are checked when the operator is visited
        if not self.tensorish(c, frame):
            return
        fixes: list[Fix | None] = []
        if if_stmt is not None:
            fixes.append(self._where_fix_if(frame.ix, if_stmt, c))
        if ternary is not None:
            fixes.append(self._where_fix_ternary(frame.ix, ternary))
        self.report("implicit-bool", c, frame, fixes)

    def _where_fix_if(self, ix: FileIndex, if_stmt: Node, cond: Node) -> Fix | None:
        cons = if_stmt.child_by_field_name("consequence")
        alts = if_stmt.children_by_field_name("alternative")
        if cons is None:
            return None
        body = [c for c in cons.named_children if c.type != "comment"]
        if len(body) != 1 or F._has_multiline_string(if_stmt):
            return None
        a = body[0]
        tw = f"{self.torch}.where"
        if not alts and a.type == "return_statement" and a.named_child_count == 1:
            nxt = _next_stmt(if_stmt)
            if nxt is None or nxt.type != "return_statement" or nxt.named_child_count != 1:
                return None
            new = f"return {tw}({ix.text(cond)}, {ix.text(a.named_children[0])}, {ix.text(nxt.named_children[0])})"
            sl, sc = ix.src.start(if_stmt)
            el, ec = ix.src.end(nxt)
            return F.fix("Compute both branches on the device with torch.where", "unsafe", [TextEdit(sl, sc, el, ec, new)])
        if len(alts) == 1 and alts[0].type == "else_clause":
            eb = alts[0].child_by_field_name("body")
            eb_stmts = [c for c in eb.named_children if c.type != "comment"] if eb is not None else []
            if len(eb_stmts) != 1:
                return None
            x, y = a, eb_stmts[0]
            if x.type == y.type == "expression_statement" and x.named_children[0].type == y.named_children[0].type == "assignment":
                ax, ay = x.named_children[0], y.named_children[0]
                lx, ly = ax.child_by_field_name("left"), ay.child_by_field_name("left")
                rx, ry = ax.child_by_field_name("right"), ay.child_by_field_name("right")
                if lx is None or ly is None or rx is None or ry is None or ix.text(lx) != ix.text(ly):
                    return None
                new = f"{ix.text(lx)} = {tw}({ix.text(cond)}, {ix.text(rx)}, {ix.text(ry)})"
                return F.fix("Compute both branches on the device with torch.where", "unsafe",
                             [F.replace_node(ix, if_stmt, new)])
            if x.type == y.type == "return_statement" and x.named_child_count == y.named_child_count == 1:
                new = f"return {tw}({ix.text(cond)}, {ix.text(x.named_children[0])}, {ix.text(y.named_children[0])})"
                return F.fix("Compute both branches on the device with torch.where", "unsafe",
                             [F.replace_node(ix, if_stmt, new)])
        return None

    def _where_fix_ternary(self, ix: FileIndex, node: Node) -> Fix | None:
        if node.named_child_count != 3:
            return None
        a, cond, b = node.named_children
        new = f"{self.torch}.where({ix.text(cond)}, {ix.text(a)}, {ix.text(b)})"
        return F.fix("Select on the device with torch.where", "unsafe", [F.replace_node(ix, node, new)])

    # ---- detectors: calls --------------------------------------------------------------------------------
    def _visit_call(self, call: Node, frame: Frame) -> None:
        ix = frame.ix
        f, q, meth, recv = _call_parts(ix, call)
        if f is None:
            return
        stmt = _stmt_of(call)
        direct = stmt.id in self.region_stmt_ids and frame.depth == 0
        rk = self.kind(recv, frame) if recv is not None else None
        args = positional(call)
        if meth == "item" and not args and (rk is None or rk.cat in ("tensor", "unknown", "param")):
            drop = F.fix("Static buffer: keep the value on the device as a 0-dim tensor (drop .item())", "unsafe",
                         [TextEdit(*ix.src.end(recv), *ix.src.end(call), "")]) if recv is not None else None
            self.report("item-call", call, frame, [drop, self._move_after_replay(stmt, frame, direct)])
        elif q in ("float", "int", "bool", "complex") and len(args) == 1 and self.tensorish(args[0], frame):
            self.report("host-scalar-conversion", call, frame, [
                F.fix(f"Static buffer: keep the value on the device as a 0-dim tensor (drop {q}())", "unsafe", [F.replace_node(ix, call, ix.text(args[0]))]),
            ])
        elif q in ("torch.equal", "torch.allclose", "torch.is_nonzero") or (meth == "is_nonzero" and rk is not None and rk.tensor):
            self.report("host-scalar-conversion", call, frame)
        elif meth in ("cpu", "tolist", "numpy") and rk is not None and rk.cat in ("tensor", "unknown", "param") and not (
            meth == "cpu" and rk.cat != "tensor" and recv is not None and recv.type == "identifier" and self._is_module_name(recv, frame)
        ):
            self.report("device-to-host-copy", call, frame, [self._move_after_replay(stmt, frame, direct)])
        elif q in ("print",):
            if any(self.tensorish(a, frame) for a in args):
                self.report("print-tensor", call, frame, [self._guard_fix(stmt, call, frame)])
            else:
                self.report("python-side-effect", call, frame, [self._move_after_replay(stmt, frame, direct)],
                            message="`print` inside a CUDA-graph capture runs once, at capture; replays never print")
        elif meth in LOG_METHODS and recv is not None and ("log" in ix.text(recv).lower()):
            if any(self.tensorish(a, frame) for a in args[1:]):
                sev: Severity = "error" if _logging_level_low(ix) else "warning"
                self.report("log-tensor", call, frame, [self._guard_fix(stmt, call, frame)], severity=sev,
                            message=None if sev == "error" else "Logging a tensor inside a CUDA-graph capture formats it (a host sync) as soon as the level lets the record through")
            else:
                self.report("python-side-effect", call, frame, message="Logging inside a CUDA-graph capture runs once, at capture; replays log nothing")
        elif q == "torch.cuda.synchronize" or (meth in ("synchronize", "query") and (
            (rk is not None and rk.cat in ("stream", "event")) or (recv is not None and recv.type == "call" and "stream" in ix.text(recv))
        )):
            self.report("cuda-synchronize", call, frame, [self._guard_fix(stmt, call, frame), self._move_after_replay(stmt, frame, direct)])
        elif q in ("torch.nonzero", "torch.argwhere") or (meth in ("nonzero", "argwhere") and rk is not None and rk.cat in ("tensor", "unknown", "param")):
            self.report("nonzero-call", call, frame, [self._nonzero_static_fix(ix, call, q, recv)])
        elif q in ("torch.unique", "torch.unique_consecutive") or (meth in ("unique", "unique_consecutive") and rk is not None and rk.tensor):
            self.report("unique-call", call, frame)
        elif q == "torch.masked_select" or (meth == "masked_select" and rk is not None and rk.cat in ("tensor", "unknown", "param")):
            self.report("masked-select", call, frame)
        elif q in ("torch.tensor", "torch.as_tensor") and self._device_is_cuda(ix, call):
            self.report("pageable-host-to-device", call, frame, [self._hoist(stmt, frame, direct, call)])
        elif meth in ("to", "cuda") and rk is not None and rk.tensor and rk.device in ("cpu", "pinned") and (
            meth == "cuda" or any("cuda" in ix.text(a) or "device" in ix.text(a) for a in (call.child_by_field_name("arguments") or call).named_children)
        ):
            nb = kwarg(ix, call, "non_blocking")
            if rk.device == "pinned" and nb is not None and ix.text(nb) == "True":
                self.report("pinned-nonblocking-copy", call, frame)
            else:
                self.report("pageable-host-to-device", call, frame, [self._hoist(stmt, frame, direct, call, safe=False)])
        elif q in SEED_FUNCS or (meth == "manual_seed" and rk is not None and rk.cat == "generator"):
            self.report("rng-seed-call", call, frame, [self._move_before_capture(stmt, frame, direct)])
        elif q in GET_STATE_FUNCS:
            self.report("rng-state-get", call, frame, [self._move_before_capture(stmt, frame, direct)])
        elif q == "torch.cuda.empty_cache":
            self.report("empty-cache", call, frame)
        elif meth == "step" and recv is not None and rk is not None and rk.cat == "optimizer" and _capturable_optimizer(ix, rk):
            self._check_optimizer(call, recv, rk, frame)
        elif meth in ("step", "update") and rk is not None and rk.cat == "scaler":
            self.report("gradscaler-step", call, frame, [self._gradscaler_fix(stmt, frame, direct)])
        elif q in TIMERS:
            self.report("python-side-effect", call, frame, [self._move_after_replay(stmt, frame, direct)], message="A timer inside a CUDA-graph capture reads the clock once, at capture; replays do not run Python")
        elif meth == "append" and recv is not None and self._is_global_container(recv, frame):
            self.report("python-side-effect", call, frame, message="Appending to a Python container inside a capture runs once, at capture; replays append nothing")
        # RNG with the default generator / custom generators
        last = (q or "").rsplit(".", 1)[-1]
        gen = kwarg(ix, call, "generator")
        if gen is not None:
            gk = self.kind(gen, frame)
            if gk.cat == "generator" and gk.device == "cuda" and not self._generator_registered(ix, gen):
                self.report("unregistered-generator", gen, frame, [self._register_generator_fix(ix, gen)])
        elif q is not None and q.startswith("torch") and last in RNG_FUNCS and not self.rng_reported and self.region.kind != "graphed_callables":
            self.rng_reported = True
            self.report("default-generator-rng", call, frame)
        # lazy init of cuBLAS / cuDNN
        self._check_lazy_init(call, f, q, frame)
        # follow the call
        if frame.depth < self.max_depth:
            targets = self.resolver.resolve_call(ix, call, frame.env)
            anchor = self.region.anchor if frame.depth == 0 and ix is self.region.ix else None
            branch = frame.branch or (branch_head(ix.src, call, anchor) if targets or args else None)
            for tgt in targets:
                self.enter(tgt.ix, tgt.func, tgt.env, frame, tgt.label, branch)
            if not targets and q not in ("print",):
                # callables passed to library code run inside the capture (checkpoint(block, x), ...)
                for a in args:
                    if strip_parens(a).type in ("identifier", "attribute") and not self.kind(a, frame).tensor:
                        for tgt in self.resolver.resolve_callable(ix, a, frame.env):
                            self.enter(tgt.ix, tgt.func, tgt.env, frame, tgt.label, branch)

    def _is_module_name(self, node: Node, frame: Frame) -> bool:
        return self.kind(node, frame).cat == "module"

    def _is_global_container(self, recv: Node, frame: Frame) -> bool:
        recv = strip_parens(recv)
        if recv.type == "attribute":
            return frame.ix.text(recv).startswith("self.")
        if recv.type != "identifier":
            return False
        name = frame.ix.text(recv)
        assign, scope, is_param = frame.ix.lookup(name, recv)
        if is_param or assign is None or scope is None:
            return False
        if frame.depth == 0:
            return False  # a list built in the region's own scope
        return scope.node.type == "module" and assign.value is not None and strip_parens(assign.value).type in ("list", "dictionary", "set")

    def _device_is_cuda(self, ix: FileIndex, call: Node) -> bool:
        d = kwarg(ix, call, "device")
        return d is not None and "cuda" in ix.text(d)

    def _check_optimizer(self, call: Node, recv: Node, rk: Kind, frame: Frame) -> None:
        ix = frame.ix
        ctor = rk.node
        if ctor is None:
            return
        cap = kwarg(ix, ctor, "capturable")
        cap_true = cap is not None and _truthy(ix, cap)
        if not cap_true:
            edit: TextEdit | None
            if cap is not None:
                edit = F.replace_node(ix, cap, "True")
            else:
                args = ctor.child_by_field_name("arguments")
                if args is None:
                    return
                el, ec = ix.src.end(args)
                inner = [c for c in args.named_children if c.type != "comment"]
                sep = ", " if inner else ""
                if inner and ix.text(args).rstrip()[:-1].rstrip().endswith(","):
                    sep = " "
                edit = TextEdit(el, ec - 1, el, ec - 1, f"{sep}capturable=True")
            self.report("optimizer-not-capturable", call, frame, [F.fix("Create the optimizer with capturable=True", "safe", [edit])])
            return
        if ix is self.region.ix and ix.has(b"load_state_dict"):
            loaded_state_hazard(self.region, ctor, self.sink)
        lr = kwarg(ix, ctor, "lr")
        if lr is not None and ix.kind(lr).cat == "scalar" and _has_scheduler(ix, recv):
            new = f'{F.torch_alias(ix)}.tensor({ix.text(lr)}, device="cuda")'
            self.report("capturable-float-lr", lr, frame,
                        [F.fix("Static buffer: keep the learning rate in a 0-dim CUDA tensor", "unsafe", [F.replace_node(ix, lr, new)])])

    def _check_lazy_init(self, call: Node, f: Node, q: str | None, frame: Frame) -> None:
        if self.region.kind not in ("graph", "wrapper", "capture_begin"):
            return
        libs: set[str] = set()
        if q in CUBLAS_FUNCS:
            libs.add("cublas")
        elif q in CUDNN_FUNCS:
            libs.add("cudnn")
        else:
            k = self.kind(f, frame) if f.type in ("identifier", "attribute") else None
            if k is not None and k.cat == "module":
                libs |= set(k.lib)
        for lib in sorted(libs - self.lazy_reported):
            if self._warmed_up(lib):
                continue
            self.lazy_reported.add(lib)
            hazard = "cublas-first-use" if lib == "cublas" else "cudnn-first-use"
            self.report(hazard, call, frame, [self._warmup_fix()])

    def _warmed_up(self, lib: str) -> bool:
        r = self.region
        ix = r.ix
        anchor = r.anchor
        callees: set[str] = set()
        names: set[str] = set()
        for st in r.stmts:
            for n in walk(st):
                if n.type == "call":
                    fn = n.child_by_field_name("function")
                    if fn is not None:
                        callees.add(ix.text(fn))
                        if fn.type == "identifier":
                            names.add(ix.text(fn))
                elif n.type == "identifier":
                    names.add(ix.text(n))
        lib_funcs = {q.rsplit(".", 1)[-1] for q in (CUBLAS_FUNCS if lib == "cublas" else CUDNN_FUNCS)}
        wanted = {c.rsplit(".", 1)[-1] for c in callees} | lib_funcs
        owner = ix.scope_of(anchor).node
        # the calls of the scope before the capture that call a wanted name or pass one of the names
        calls = _scope_table(ix, "calls", owner)
        argcalls = _scope_table(ix, "argcalls", owner)
        before = [_upto(calls.get(w), anchor.start_byte) for w in sorted(wanted) if w.isidentifier()]
        before += [_upto(argcalls.get(a), anchor.start_byte) for a in sorted(names) if a.isidentifier()]
        for n in heapq.merge(*before, key=lambda c: c.start_byte):
            if n.end_byte > anchor.start_byte:
                continue
            fn = n.child_by_field_name("function")
            if fn is None:
                continue
            text = ix.text(fn)
            if text in callees and not text.endswith((".cuda", ".to")):
                k = ix.kind(fn) if fn.type in ("identifier", "attribute") else None
                if k is None or k.cat != "optimizer":
                    return True
            qn = ix.qualname(fn)
            if (lib == "cublas" and qn in CUBLAS_FUNCS) or (lib == "cudnn" and qn in CUDNN_FUNCS):
                return True
            if fn.type in ("identifier", "attribute") and ix.kind(fn).cat == "module" and lib in ix.kind(fn).lib:
                return True
            for arg in positional(n):
                if strip_parens(arg).type == "identifier" and ix.text(arg) in names and ix.kind(arg).cat == "module":
                    return True
        return False

    def _warmup_fix(self) -> Fix | None:
        r = self.region
        ix = r.ix
        if r.kind not in ("graph", "wrapper") or not r.stmts:
            return None
        body_lines: list[str] = []
        for st in r.stmts:
            text = F.statement_lines(ix, st, "        ")
            if text is None:
                return None
            body_lines.extend(text.rstrip("\n").split("\n"))
        t = self.torch
        s = _fresh_name(ix, "warmup_stream")
        lines = [
            f"{s} = {t}.cuda.Stream()",
            f"{s}.wait_stream({t}.cuda.current_stream())",
            f"with {t}.cuda.stream({s}):",
            "    for _ in range(3):",
            *[ln[len("    "):] if ln.startswith("    ") else ln for ln in body_lines],
            f"{t}.cuda.current_stream().wait_stream({s})",
        ]
        # body lines already carry 8 spaces; insert_before_statement adds the anchor's indent
        lines = [ln if i < 4 or ln == lines[-1] else "    " + ln for i, ln in enumerate(lines)]
        return F.fix("Warm up on a side stream before the capture", "unsafe", [F.insert_before_statement(ix, r.anchor, lines)])

    # ---- detectors: subscripts and stores ----------------------------------------------------------------
    def _check_mask_index(self, node: Node, frame: Frame) -> None:
        parent = node.parent
        if parent is not None and parent.type == "assignment" and parent.child_by_field_name("left") == node:
            return
        idx = node.child_by_field_name("subscript")
        value = node.child_by_field_name("value")
        if idx is None or value is None:
            return
        k = self.kind(idx, frame)
        if k.tensor and k.is_bool:
            ix = frame.ix
            t = self.torch
            new = f"{t}.where({ix.text(idx)}, {ix.text(value)}, {t}.zeros_like({ix.text(value)}))"
            self.report("bool-mask-index", node, frame,
                        [F.fix("Mask on the device with torch.where (keeps the shape)", "unsafe", [F.replace_node(frame.ix, node, new)])])

    def _check_setitem(self, node: Node, frame: Frame) -> None:
        left = node.child_by_field_name("left")
        right = node.child_by_field_name("right")
        if left is None or right is None or left.type != "subscript":
            return
        value = left.child_by_field_name("value")
        idx = left.child_by_field_name("subscript")
        if value is None or idx is None:
            return
        vk = self.kind(value, frame)
        rk = self.kind(right, frame)
        if not (vk.tensor and vk.device == "cuda") or rk.cat != "scalar":
            return
        ix = frame.ix
        ik = self.kind(idx, frame)
        stmt = node.parent if node.parent is not None and node.parent.type == "expression_statement" else None
        new: str
        if ik.tensor and ik.is_bool:
            new = f"{ix.text(value)}.masked_fill_({ix.text(idx)}, {ix.text(right)})"
        elif ik.tensor:
            new = f"{ix.text(value)}.index_fill_(0, {ix.text(idx)}, {ix.text(right)})"
        else:
            new = f"{ix.text(left)}.fill_({ix.text(right)})"
        fx = F.fix("Write the scalar with an in-place device kernel", "safe", [F.replace_node(ix, node, new)]) if stmt is not None else None
        self.report("scalar-setitem", node, frame, [fx])

    def _check_counter(self, node: Node, frame: Frame) -> None:
        left = node.child_by_field_name("left")
        if left is None:
            return
        ix = frame.ix
        k = self.kind(left, frame) if left.type == "identifier" else None
        if k is not None and k.tensor:
            return
        is_side = False
        if left.type == "attribute" and ix.text(left).startswith("self."):
            right = node.child_by_field_name("right")
            is_side = right is not None and right.type in ("integer", "float")
        elif left.type == "identifier":
            name = ix.text(left)
            fn = ix.enclosing_function(node)
            if fn is not None:
                sc = ix.scope(fn.node)
                is_side = name in sc.globals
            else:
                is_side = k is not None and k.cat == "scalar"
        if is_side:
            st = _stmt_of(node)
            self.report("python-side-effect", node, frame,
                        [self._move_after_replay(st, frame, st.id in self.region_stmt_ids and frame.depth == 0)],
                        message="A Python counter updated inside a capture changes once, at capture; replays do not run Python")

    def _check_fstring(self, node: Node, frame: Frame) -> None:
        for c in node.named_children:
            if c.type == "interpolation":
                e = c.child_by_field_name("expression")
                if e is not None and self.tensorish(e, frame):
                    stmt = _stmt_of(node)
                    self.report("tensor-format", c, frame, [self._guard_fix(stmt, node, frame)])

    # ---- detectors: streams ------------------------------------------------------------------------------
    def _check_side_stream(self, node: Node, frame: Frame) -> None:
        ix = frame.ix
        clause = next((c for c in node.children if c.type == "with_clause"), None)
        if clause is None:
            return
        for item in clause.named_children:
            v = item.child_by_field_name("value")
            if v is None or v.type != "call":
                continue
            f = v.child_by_field_name("function")
            if f is None or ix.qualname(f) != "torch.cuda.stream":
                continue
            args = positional(v)
            if not args:
                continue
            s = ix.text(args[0])
            if self.region.stream_arg is not None and ix.text(self.region.stream_arg) == s and frame.ix is self.region.ix:
                continue
            if "current_stream" in s:
                continue
            before = _siblings(node, after=False)
            after = _siblings(node, after=True)
            forked = any(f"{s}.wait_stream(" in ix.text(b).replace(" ", "") for b in before)
            joined = any(f".wait_stream({s})" in ix.text(a).replace(" ", "") for a in after)
            t = self.torch
            fork_line = f"{s}.wait_stream({t}.cuda.current_stream())"
            join_line = f"{t}.cuda.current_stream().wait_stream({s})"
            if not forked:
                edits = [F.insert_before_statement(ix, node, [fork_line])]
                if not joined:
                    edits.append(F.insert_after_statement(ix, node, [join_line]))
                self.report("side-stream-no-fork", item, frame,
                            [F.fix("Fork the side stream from the capturing stream (and join it back)", "safe", edits)])
            elif not joined:
                self.report("side-stream-no-join", item, frame,
                            [F.fix("Join the side stream back into the capturing stream", "safe",
                                   [F.insert_after_statement(ix, node, [join_line])])])

    # ---- generators --------------------------------------------------------------------------------------
    def _generator_registered(self, ix: FileIndex, gen: Node) -> bool:
        name = ix.text(gen)
        return f"register_generator_state({name})" in ix.spaceless_text

    def _register_generator_fix(self, ix: FileIndex, gen: Node) -> Fix | None:
        r = self.region
        if r.graph_name is None or r.kind not in ("graph", "capture_begin") or ix is not r.ix:
            return None
        line = f"{r.graph_name}.register_generator_state({ix.text(gen)})"
        return F.fix("Register the generator with the graph before capture", "safe", [F.insert_before_statement(ix, r.anchor, [line])])

    # ---- fix helpers -------------------------------------------------------------------------------------
    def _guard_fix(self, stmt: Node, node: Node, frame: Frame) -> Fix | None:
        if stmt.type != "expression_statement":
            return None
        inner = stmt.named_children[0] if stmt.named_child_count else None
        if inner is None or inner.type == "assignment":
            return None
        edit = F.guard_statement(frame.ix, stmt)
        return F.fix("Skip it while capturing (guard with is_current_stream_capturing())", "safe",
                     [edit] if edit is not None else None)

    def replays(self) -> list[Node] | None:
        """The region's `g.replay()` statements (see `graph_replays`), computed once per region."""
        if not self._replays_done:
            self._replays_done = True
            self._replays = graph_replays(self.region, self.resolver)
        return self._replays

    def _after_each_replay(self, stmts: list[Node]) -> list[TextEdit] | None:
        """Delete `stmts` (direct statements of the region) and insert them after every replay of its graph;
        None when the replays are not all known (see `graph_replays`)."""
        replays = self.replays()
        if not replays:
            return None
        ix = self.region.ix
        edits: list[TextEdit] = []
        for st in stmts:
            d = F.delete_statement(ix, st)
            if d is None:
                return None
            edits.append(d)
        for r in replays:
            texts: list[str] = []
            for st in stmts:
                body = F.statement_lines(ix, st, ix.src.indent_of(r))
                if body is None:
                    return None
                texts.append(body.rstrip("\n"))
            edits.append(F.insert_after_statement(ix, r, texts, indent=""))
        return edits

    def _move_after_replay(self, stmt: Node, frame: Frame, direct: bool) -> Fix | None:
        if not direct or self.region.kind not in ("graph", "capture_begin", "wrapper"):
            return None
        ix = self.region.ix
        # names it binds must not be read later in the region
        bound = _bound_names(ix, stmt)
        later = [s for s in self.region.stmts if s.start_byte > stmt.start_byte]
        if bound and any(ix.text(n) in bound for s in later for n in walk(s) if n.type == "identifier"):
            return None
        # ... nor between the capture and the first replay
        replays = self.replays()
        if bound and replays and _read_between(ix, bound, ix.scope_of(self.region.anchor).node, self.region.end_byte,
                                              replays[0].start_byte):
            return None
        edits = self._after_each_replay([stmt])
        return F.fix("Move it after the replay (read the static output outside the capture)", "unsafe", edits)

    def _move_before_capture(self, stmt: Node, frame: Frame, direct: bool) -> Fix | None:
        if not direct or self.region.kind not in ("graph", "capture_begin", "wrapper"):
            return None
        edits = F.move_statement_before(self.region.ix, stmt, self.region.anchor)
        return F.fix("Move it before the capture", "unsafe", edits)

    def _hoist(self, stmt: Node, frame: Frame, direct: bool, call: Node, safe: bool = True) -> Fix | None:
        if not direct or self.region.kind not in ("graph", "capture_begin", "wrapper"):
            return None
        ix = self.region.ix
        literal = all(n.type not in ("identifier",) or ix.text(n) in ("device", "dtype", "torch", self.torch, "float32", "float16", "int64", "int32", "bfloat16", "long", "float", "requires_grad")
                      for n in walk(call.child_by_field_name("arguments") or call))
        edits = F.move_statement_before(ix, stmt, self.region.anchor)
        return F.fix("Build the tensor once, before the capture", "safe" if (safe and literal) else "unsafe", edits)

    def _nonzero_static_fix(self, ix: FileIndex, call: Node, q: str | None, recv: Node | None) -> Fix | None:
        f = call.child_by_field_name("function")
        if f is None:
            return None
        if q in ("torch.nonzero",):
            args = positional(call)
            if len(args) != 1 or kwarg(ix, call, "as_tuple") is not None:
                return None
            arg = strip_parens(args[0])
            base = arg
            if arg.type == "comparison_operator" and arg.named_child_count:
                first = arg.named_children[0]
                if first.type in ("identifier", "attribute"):
                    base = first
            base_text = ix.text(base) if base.type in ("identifier", "attribute") else f"({ix.text(arg)})"
            fname = ix.text(f)[: -len("nonzero")] + "nonzero_static"
            new = f"{fname}({ix.text(args[0])}, size={base_text}.numel(), fill_value=-1)"
            return F.fix("Use torch.nonzero_static with a fixed size (pads with -1)", "unsafe", [F.replace_node(ix, call, new)])
        if recv is not None and not positional(call) and kwarg(ix, call, "as_tuple") is None:
            r = ix.text(recv)
            r_p = r if strip_parens(recv).type in ("identifier", "attribute", "call") else f"({r})"
            new = f"{r_p}.nonzero_static(size={r_p}.numel(), fill_value=-1)"
            return F.fix("Use nonzero_static with a fixed size (pads with -1)", "unsafe", [F.replace_node(ix, call, new)])
        return None

    def _gradscaler_fix(self, stmt: Node, frame: Frame, direct: bool) -> Fix | None:
        if not direct or self.region.kind not in ("graph", "wrapper"):
            return None
        ix = self.region.ix
        group = [stmt]
        nxt = _next_stmt(stmt)
        if nxt is not None and nxt.id in self.region_stmt_ids and ".update(" in ix.text(nxt) and ".step(" in ix.text(stmt):
            group.append(nxt)
        prev = _prev_stmt(stmt)
        if ".update(" in ix.text(stmt) and prev is not None and prev.id in self.region_stmt_ids and ".step(" in ix.text(prev):
            return None  # the step's fix moves both
        if len(group) == len(self.region.stmts):
            return None
        edits = self._after_each_replay(group)
        return F.fix("Run scaler.step()/update() eagerly after each replay", "unsafe", edits)


def _next_stmt(n: Node) -> Node | None:
    s = n.next_named_sibling
    while s is not None and s.type == "comment":
        s = s.next_named_sibling
    return s


def _prev_stmt(n: Node) -> Node | None:
    s = n.prev_named_sibling
    while s is not None and s.type == "comment":
        s = s.prev_named_sibling
    return s


def _scope_calls(ix: FileIndex, body: Node) -> list[Node]:
    out: list[Node] = []
    stack = [body]
    while stack:
        n = stack.pop()
        if n.type == "call":
            out.append(n)
        for c in reversed(n.named_children):
            if c.type not in ("function_definition", "class_definition", "decorated_definition", "lambda", "comment", "string"):
                stack.append(c)
    out.sort(key=lambda n: n.start_byte)
    return out


def _siblings(node: Node, after: bool) -> list[Node]:
    """The named siblings after `node` in order, or those before it nearest first."""
    out = []
    s = node.next_named_sibling if after else node.prev_named_sibling
    while s is not None:
        out.append(s)
        s = s.next_named_sibling if after else s.prev_named_sibling
    return out


def _bound_names(ix: FileIndex, stmt: Node) -> set[str]:
    out: set[str] = set()
    if stmt.type == "expression_statement" and stmt.named_child_count and stmt.named_children[0].type == "assignment":
        left = stmt.named_children[0].child_by_field_name("left")
        if left is not None:
            for n in walk(left):
                if n.type == "identifier":
                    out.add(ix.text(n))
    return out


CAPTURABLE_OPTIMIZERS = frozenset({"Adam", "AdamW", "Adamax", "Adadelta", "Adagrad", "ASGD", "NAdam", "RAdam",
                                   "RMSprop", "Rprop", "SparseAdam"})


def _capturable_optimizer(ix: FileIndex, k: Kind) -> bool:
    if k.node is None:
        return False
    f = k.node.child_by_field_name("function")
    q = ix.qualname(f) if f is not None else None
    return q is not None and q.rsplit(".", 1)[-1] in CAPTURABLE_OPTIMIZERS


def _truthy(ix: FileIndex, node: Node) -> bool:
    node = strip_parens(node)
    if node.type == "true":
        return True
    if node.type == "identifier":
        assign, _s, _p = ix.lookup(ix.text(node), node)
        if assign is not None and assign.value is not None:
            return strip_parens(assign.value).type == "true"
        return True  # unknown: give the benefit of the doubt
    return node.type not in ("false", "none", "integer")


def _has_scheduler(ix: FileIndex, opt: Node) -> bool:
    name = ix.text(opt)
    ix.src.need_word(name)
    caps = run_query("(call) @call", ix.src.root)
    for call in caps.get("call", []):
        f = call.child_by_field_name("function")
        if f is None:
            continue
        q = ix.qualname(f) or ""
        if q.startswith("torch.optim.lr_scheduler.") or q.endswith(("LR", "Scheduler", "Annealing", "Warmup")):
            pos = positional(call)
            if pos and ix.text(pos[0]) == name:
                return True
            o = kwarg(ix, call, "optimizer")
            if o is not None and ix.text(o) == name:
                return True
    return False


def _logging_level_low(ix: FileIndex) -> bool:
    return logging_level_low(ix.src.text)


def logging_level_low(text: str) -> bool:
    for marker in ("basicConfig(", "setLevel("):
        pos = text.find(marker)
        while pos >= 0:
            seg = text[pos : pos + 200]
            if "INFO" in seg or "DEBUG" in seg or "NOTSET" in seg:
                return True
            pos = text.find(marker, pos + 1)
    return False


def _fresh_name(ix: FileIndex, base: str) -> str:
    if not ix.has(base.encode()):
        return base
    return fresh_name(ix.src.text, base)


def fresh_name(text: str, base: str) -> str:
    if base not in text:
        return base
    i = 2
    while f"{base}{i}" in text:
        i += 1
    return f"{base}{i}"


# ---- the graph's replays ---------------------------------------------------------------------------------------
def _graph_node(region: CaptureRegion) -> Node | None:
    """The identifier naming the captured graph at the capture site (None for an attribute, a call...)."""
    if region.kind == "graph":
        pos = positional(region.site)
        node = strip_parens(pos[0]) if pos else None
    elif region.kind == "capture_begin":
        f = region.site.child_by_field_name("function")
        node = f.child_by_field_name("object") if f is not None else None
    else:
        return None
    return node if node is not None and node.type == "identifier" else None


@cache
def _name_re(name: str) -> re.Pattern[bytes]:
    return re.compile(rb"(?<![A-Za-z0-9_])" + re.escape(name.encode()) + rb"(?![A-Za-z0-9_])")


def _identifiers(ix: FileIndex, name: str, start: int, end: int) -> Iterator[Node]:
    """The identifier nodes spelled `name` that start in bytes [start, end), in document order, lazily (a text
    search for the whole word, then a lookup in the tree: no walk, and no scopes built as a side effect). A range
    of more than a few kilobytes is searched through the file's offsets of the word, found once per file and
    name, so the many captures of one module do not search the module again each."""
    ix.touched.append((start, end))
    ix.src.need_word(name, start, end)
    find = ix.src.root.descendant_for_byte_range
    n = len(name.encode())
    offsets: Iterable[int]
    if end - start > 16384:
        every = _word_offsets(ix, name)
        offsets = itertools.islice(every, bisect_left(every, start), None)
    else:
        offsets = (m.start() for m in _name_re(name).finditer(ix.src.data, start, end))
    for off in offsets:
        if off + n > end:
            break
        node = find(off, off + n)
        if node is not None and node.type == "identifier" and node.start_byte == off and node.end_byte == off + n:
            yield node


_WORD = re.compile(rb"[A-Za-z0-9_]+")


def _word_offsets(ix: FileIndex, name: str) -> list[int]:
    """Every whole-word occurrence of `name` in the file, remembered on the file's index. After a few names,
    every ASCII word of the file is indexed in one pass (many captures, each with its own names)."""
    found = ix.word_offsets.get(name)
    if found is None:
        key = name.encode()
        if len(ix.word_offsets) >= 8 and _WORD.fullmatch(key):
            if ix.word_index is None:
                index: dict[bytes, list[int]] = {}
                for m in _WORD.finditer(ix.src.data):
                    index.setdefault(m.group(), []).append(m.start())
                ix.word_index = index
            found = ix.word_index.get(key, [])
        else:
            found = [m.start() for m in _name_re(name).finditer(ix.src.data)]
        ix.word_offsets[name] = found
    return found


def _def_of(node: Node) -> Node | None:
    """The function definition or module whose body holds `node` (lambdas and classes do not count)."""
    p = node.parent
    while p is not None and p.type not in ("function_definition", "module"):
        p = p.parent
    return p


def _in_nested_definition(node: Node, owner: Node) -> bool:
    """Inside a class body or lambda that sits between `node` and its scope's `owner`."""
    p = node.parent
    while p is not None and p.id != owner.id:
        if p.type in ("class_definition", "lambda"):
            return True
        p = p.parent
    return False


def graph_replays(region: CaptureRegion, resolver: Resolver | None = None) -> list[Node] | None:
    """Every `g.replay()` of the region's graph: expression statements of their own rows in the capture's scope
    (loop, branch and `with` bodies included), in document order.

    None (the caller then offers no fix that depends on the replays) unless every use of the graph's name that
    resolves to the capture's binding is understood: the construction `g = torch.cuda.CUDAGraph()`, this one
    capture, and such replay statements. A graph that is a parameter, an attribute or item (`self.g`,
    `graphs[k]`), a global of another scope, captured twice, passed, returned, stored, replayed from a nested
    function, a lambda or a comprehension, or whose `replay` is used as a value, or a module-level graph that
    another workspace file may import, may be replayed where this file cannot rewrite it; a graph never
    replayed here gets None too."""
    ix = region.ix
    gnode = _graph_node(region)
    if gnode is None:
        return None
    g = ix.text(gnode)
    owner = ix.scope_of(region.anchor)
    if g in owner.globals:
        return None
    assign, scope, is_param = ix.lookup(g, gnode)
    if scope is not owner or is_param or assign is None:
        return None
    if owner.node.type == "module":
        ix.watched.add(g)  # any function of the file may mention it
        if resolver is not None and resolver.imported_elsewhere is not None and resolver.imported_elsewhere(ix.path, g):
            return None
    else:
        ix.touched.append((owner.node.start_byte, owner.node.end_byte))
    capture_spans = [(region.site.start_byte, region.site.end_byte)]
    if region.kind == "capture_begin":
        capture_spans.append((region.anchor.start_byte, region.anchor.end_byte))
        if region.end_stmt is None:
            return None
        capture_spans.append((region.end_stmt.start_byte, region.end_stmt.end_byte))
    replays: list[Node] = []
    # the lookups below build the scopes of nested functions as a side effect; those are no dependency of the
    # answer (an edit that could change it spells the name, and watched names make such an edit non-local)
    mark = len(ix.touched)
    try:
        for n in _identifiers(ix, g, owner.node.start_byte, owner.node.end_byte):
            if not _replay_use(ix, region, n, g, owner, capture_spans, replays):
                return None
    finally:
        del ix.touched[mark:]
    return replays or None


def _replay_use(ix: FileIndex, region: CaptureRegion, n: Node, g: str, owner: Scope,
                capture_spans: list[tuple[int, int]], replays: list[Node]) -> bool:
    """Classify one mention of the graph's name: False when it is a use no fix can account for; a replay
    statement is appended to `replays`."""
    p = n.parent
    if p is None:
        return True
    if (p.type == "attribute" and p.child_by_field_name("attribute") == n) or (
        p.type == "keyword_argument" and p.child_by_field_name("name") == n
    ):
        return True  # `x.g`, `f(g=...)`: not the variable
    if ix.lookup(g, n)[1] is not owner:
        return True  # another scope's own `g`
    d = _def_of(n)
    direct = d is not None and d.id == owner.node.id and not _in_nested_definition(n, owner.node)
    if any(a <= n.start_byte and n.end_byte <= b for a, b in capture_spans):
        return True
    if direct and p.type == "assignment" and p.child_by_field_name("left") == n:
        right = p.child_by_field_name("right")
        f = strip_parens(right).child_by_field_name("function") if right is not None and strip_parens(right).type == "call" else None
        q = ix.qualname(f) if f is not None else None
        return q is not None and q.endswith("cuda.CUDAGraph")  # constructing a graph is harmless without a capture
    call = p.parent if p.type == "attribute" and p.child_by_field_name("object") == n else None
    stmt = call.parent if call is not None and call.type == "call" else None
    attr = p.child_by_field_name("attribute")
    args = call.child_by_field_name("arguments") if call is not None else None
    if (
        direct and call is not None and stmt is not None and stmt.type == "expression_statement"
        and stmt.named_child_count == 1 and attr is not None and ix.text(attr) == "replay"
        and call.child_by_field_name("function") == p and args is not None and args.named_child_count == 0
        and not (region.anchor.start_byte <= stmt.start_byte < region.end_byte)
        and F.owns_lines(ix, stmt)
    ):
        replays.append(stmt)
        return True
    return False


# ---- eager fallback --------------------------------------------------------------------------------------------
_LEAVES_BODY = frozenset({"return_statement", "yield", "break_statement", "continue_statement", "global_statement",
                          "nonlocal_statement"})


def _leaves_body(stmts: list[Node]) -> bool:
    """A statement that means something else once moved: return/yield anywhere, break/continue outside a loop
    of the body, global/nonlocal."""
    stack: list[tuple[Node, bool]] = [(s, False) for s in stmts]
    while stack:
        n, in_loop = stack.pop()
        if n.type in ("function_definition", "class_definition", "lambda"):
            continue
        if n.type in _LEAVES_BODY and not (in_loop and n.type in ("break_statement", "continue_statement")):
            return True
        loop = in_loop or n.type in ("for_statement", "while_statement")
        stack.extend((c, loop) for c in n.named_children)
    return False


def _bound_in(ix: FileIndex, stmts: list[Node]) -> set[str]:
    """Names the statements bind (assignment, loop, with-as and walrus targets, definitions, imports)."""
    out: set[str] = set()
    for st in stmts:
        for n in walk(st):
            target: Node | None = None
            if n.type in ("assignment", "augmented_assignment", "for_statement", "for_in_clause"):
                target = n.child_by_field_name("left")
            elif n.type == "named_expression":
                target = n.child_by_field_name("name")
            elif n.type in ("as_pattern_target", "dotted_name", "aliased_import"):
                target = n
            elif n.type in ("function_definition", "class_definition"):
                target = n.child_by_field_name("name")
            if target is None:
                continue
            if target.type == "identifier":
                out.add(ix.text(target))
            elif target.type not in ("attribute", "subscript"):
                for m in walk(target):
                    if m.type == "identifier" and (m.parent is None or m.parent.type not in ("attribute", "subscript")):
                        out.add(ix.text(m))
    return out


def _read_between(ix: FileIndex, names: set[str], owner: Node, start: int, end: int) -> bool:
    """One of `names` is used in the scope `owner` between byte offsets start and end."""
    for name in sorted(names):
        for n in _identifiers(ix, name, start, end):
            d = _def_of(n)
            if d is not None and d.id == owner.id:
                p = n.parent
                if p is not None and p.type == "attribute" and p.child_by_field_name("attribute") == n:
                    continue
                return True
    return False


def _grad_resets(ix: FileIndex, region: CaptureRegion, body_text: str) -> list[Node]:
    """`opt.zero_grad()` statements just before the capture (only graph constructions and comments between),
    when the captured code runs a backward: a captured backward after `zero_grad(set_to_none=True)` writes
    fresh gradients on every replay, so the eager body must start from the same reset."""
    if "backward" not in body_text:
        called = {ix.text(c.child_by_field_name("function") or c) for st in region.stmts for c in walk(st) if c.type == "call"}
        for name in called:
            ix.src.need_def(name)
        callees = [f.node for f in ix.functions if f.name in called]
        ix.touched.extend((c.start_byte, c.end_byte) for c in callees)
        if not any("backward" in ix.text(c) for c in callees):
            return []
    out: list[Node] = []
    prev = region.anchor.prev_named_sibling
    while prev is not None:
        text = ix.text(prev).replace(" ", "")
        if prev.type == "comment" or (prev.type == "expression_statement" and text.endswith("CUDAGraph()")):
            prev = prev.prev_named_sibling
            continue
        if prev.type == "expression_statement" and ".zero_grad(" in text and "set_to_none=False" not in text and (
            prev.named_child_count == 1 and prev.named_children[0].type == "call"
        ):
            out.insert(0, prev)
            prev = prev.prev_named_sibling
            continue
        break
    return out


def _eager_body(region: CaptureRegion, indent: str) -> tuple[str, list[TextEdit]] | None:
    """(the captured code as eager statements at `indent`, the edits that remove the capture); None when the
    region's shape does not allow it."""
    ix = region.ix
    if region.kind == "graph" and region.with_item is not None:
        w = region.anchor
        if F._has_multiline_string(w) or not F.owns_lines(ix, w) or not ix.text(w).startswith("with"):
            return None
        body = w.child_by_field_name("body")
        if body is None or body.start_point[0] == w.start_point[0]:
            return None
        stmts = [c for c in body.named_children if c.type != "comment"]
        item = region.with_item
        value = item.child_by_field_name("value")
        if not stmts or value is None or value.type == "as_pattern":
            return None
        value = strip_parens(value)
        if value.id != region.site.id:
            # a context manager stored in a variable: only `ctx = torch.cuda.graph(g)` itself, never a choice
            # between capturing and not (`... if c else nullcontext()`)
            assign = ix.lookup(ix.text(value), value)[0] if value.type == "identifier" else None
            if assign is None or assign.value is None or strip_parens(assign.value).id != region.site.id:
                return None
        clause = next((c for c in w.children if c.type == "with_clause"), None)
        others = [c for c in clause.named_children if c.type == "with_item" and c.id != item.id] if clause is not None else []
        first, last = body.start_point[0], body.end_point[0]
        delete = F.delete_statement(ix, w)
    elif region.kind == "capture_begin" and region.end_stmt is not None:
        begin, end_stmt = region.anchor, region.end_stmt
        stmts = region.stmts
        if not stmts or begin.parent is None or end_stmt.parent != begin.parent or any(
            F._has_multiline_string(s) for s in stmts
        ):
            return None
        others = []
        first, last = begin.end_point[0] + 1, end_stmt.start_point[0] - 1
        delete = F.delete_rows(ix, begin, end_stmt)
    else:
        return None
    if delete is None or first > last or _leaves_body(stmts):
        return None
    inner = indent + ("    " if others else "")
    text = F.rows_text(ix, first, last, ix.src.indent_of(stmts[0]), inner).strip("\n")
    resets = _grad_resets(ix, region, text)
    for r in reversed(resets):
        lines = F.statement_lines(ix, r, inner)
        if lines is None:
            return None
        text = lines + text
    if others:
        text = f"{indent}with {', '.join(ix.text(o) for o in others)}:\n{text}"
    return text, [delete]


def eager_fallback(region: CaptureRegion, replays: list[Node] | None = None) -> Fix | None:
    """Run the captured work eagerly where the graph would have run it.

    A `with torch.cuda.graph(g)` block or a `capture_begin()`...`capture_end()` span is removed, and every
    `g.replay()` statement becomes the captured statements (re-indented there; other items of the `with`
    re-entered around them; a `zero_grad()` that preceded a captured backward repeated first), so each
    "replay" recomputes eagerly and the capture itself computes nothing, as a capture does. Offered only when
    all replays of the graph are known (`graph_replays`) and the captured names are not read between the
    capture and the first replay. `make_graphed_callables(f, ...)` becomes `f`; a compile mode with CUDA graphs
    becomes its mode without."""
    ix = region.ix
    title = "Run without CUDA-graph capture (eager fallback)"
    if region.kind in ("graph", "capture_begin"):
        if not replays:
            return None
        owner = ix.scope_of(region.anchor).node
        if _read_between(ix, _bound_in(ix, region.stmts), owner, region.end_byte, replays[0].start_byte):
            return None
        built = _eager_body(region, ix.src.indent_of(replays[0]))
        if built is None:
            return None
        edits = list(built[1])
        bodies = {ix.src.indent_of(replays[0]): built[0]}
        for r in replays:
            indent = ix.src.indent_of(r)
            if indent not in bodies:
                made = _eager_body(region, indent)
                if made is None:
                    return None
                bodies[indent] = made[0]
            edit = F.replace_statement_rows(ix, r, bodies[indent])
            if edit is None:
                return None
            edits.append(edit)
        return F.fix(title, "unsafe", edits)
    if region.kind == "graphed_callables":
        pos = positional(region.site)
        if not pos:
            return None
        return F.fix(title, "unsafe", [F.replace_node(ix, region.site, ix.text(pos[0]))])
    if region.kind == "compile":
        if region.mode_node is not None and region.mode_node.type == "string":
            text = ix.text(region.mode_node)
            for mode, repl in CG_MODES.items():
                if mode in text:
                    return F.fix("Compile without CUDA graphs (mode without cudagraphs)", "unsafe",
                                 [F.replace_node(ix, region.mode_node, text.replace(mode, repl))])
        return None
    return None


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
                    d = _def_of(n)
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
                sn.looped[id(v)] = [n for n in v if _enclosing_loop(n, body) is not None]
        return sn

    def start_region(self) -> None:
        """Forget the remembered kinds: each region records the code its own kind lookups consult."""
        self._kinds.clear()

    def kind_cat(self, node: Node) -> str:
        cat = self._kinds.get(node.id)
        if cat is None:
            cat = self._kinds[node.id] = self.ix.kind(node).cat
        return cat


def _start_key(n: Node) -> int:
    return n.start_byte


def _after(nodes: list[Node] | None, start: int) -> list[Node]:
    """The nodes (of one scope, sorted by start) that start at or after byte `start`."""
    if not nodes:
        return []
    return nodes[bisect_left(nodes, start, key=lambda n: n.start_byte):]


def _after_names(table: dict[str, list[Node]], names: Iterable[str], start: int) -> list[Node]:
    """`_after` of the nodes of several names, each node once, sorted by start."""
    return _union([_after(table.get(name), start) for name in names])


def _union(lists: list[list[Node]]) -> list[Node]:
    """The nodes of several lists sorted by start, each once."""
    lists = [v for v in lists if v]
    if len(lists) <= 1:
        return lists[0] if lists else []
    return sorted({n.id: n for found in lists for n in found}.values(), key=lambda n: n.start_byte)


def around_region(region: CaptureRegion, resolver: Resolver, sink: Sink, index: AroundIndex | None = None) -> None:
    ix = region.ix
    _region_settings(region, sink)
    if region.kind == "compile":
        _compile_outputs(region, sink)
        compile_mutated_inputs(region, resolver, sink)
        return
    legacy_stream_step(region, resolver, sink)
    if region.kind == "capture_begin" and not is_inside_stream_context(ix, region.anchor) and region.stream_arg is None:
        sink(Hit("capture-begin-default-stream", ix, region.site, region, (), [f for f in [_side_stream_capture_fix(region)] if f]))
    if region.kind not in ("graph", "capture_begin", "wrapper") or not region.graph_name:
        return
    if index is None or index.ix is not ix:
        index = AroundIndex(ix)
    seen = index.seen
    g = region.graph_name
    scope = ix.scope_of(region.anchor)
    body = scope.node if scope.node.type == "module" else scope.node.child_by_field_name("body")
    if body is None:
        return
    # inputs: names read in the region that were bound before it (plus module globals read by callees);
    # outputs: names bound in the region
    reads: dict[str, Node] = {}
    outputs: set[str] = set()
    for st in region.stmts:
        for n in walk(st):
            if n.type == "identifier":
                p = n.parent
                name = ix.text(n)
                if p is not None and p.type == "assignment" and p.child_by_field_name("left") == n:
                    outputs.add(name)
                elif (p is not None and p.type == "attribute" and p.child_by_field_name("attribute") == n) or (p is not None and p.type == "keyword_argument" and p.child_by_field_name("name") == n):
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
    inputs_q = {n for n in inputs if n.isidentifier()}  # the names the query's #any-of? predicates took
    outputs_q = {n for n in outputs if n.isidentifier()}
    all_replays = sn.replays.get(f"{g}.replay(", [])
    first = bisect_left(all_replays, start, key=lambda r: r.start_byte)  # the replays after the capture
    if first == len(all_replays):
        return
    first_replay, last_replay = all_replays[first].start_byte, all_replays[-1].start_byte

    def replay_follows(node: Node) -> bool:
        if last_replay > node.end_byte:
            return True
        loop = _enclosing_loop(node, body)
        if loop is None:
            return False
        i = bisect_left(all_replays, max(start, loop.start_byte), key=lambda r: r.start_byte)
        return i < len(all_replays) and all_replays[i].start_byte < loop.end_byte

    def followed(table: dict[str, list[Node]], names: Iterable[str]) -> list[Node]:
        """The table's nodes of `names` after the capture that a replay of its graph follows (see replay_follows),
        in document order: those before the last replay, and those after it in a loop (the rest cannot be)."""
        out: list[list[Node]] = []
        for name in names:
            every = table.get(name)
            if every:
                key = _start_key
                out.append(every[bisect_left(every, start, key=key):bisect_left(every, last_replay, key=key)])
                looped = sn.looped[id(every)]
                out.append(looped[bisect_left(looped, max(start, last_replay), key=key):])
        return [n for n in _union(out) if replay_follows(n)]

    input_cats: dict[str, str] = {}
    for n in followed(sn.rebind, inputs_q):
        if ("static-input-rebound", n.id) in seen:
            continue
        left = n.child_by_field_name("left")
        right = n.child_by_field_name("right")
        stmt = n.parent if n.parent is not None and n.parent.type == "expression_statement" else None
        if left is None or right is None or stmt is None:
            continue
        name = ix.text(left)
        cat = input_cats.get(name)
        if cat is None:
            cat = input_cats[name] = index.kind_cat(inputs[name])
        if cat in ("tensor", "unknown") and index.kind_cat(left) != "scalar":
            fx = F.fix(f"Static buffer: {name}.copy_(...) into the captured tensor instead of rebinding {name}", "unsafe",
                       [F.replace_node(ix, n, f"{name}.copy_({ix.text(right)})")])
            seen.add(("static-input-rebound", n.id))
            sink(Hit("static-input-rebound", ix, n, region, (), [f for f in [fx] if f]))
    for n in followed(sn.alias, outputs_q):
        if ("static-output-aliased", n.id) in seen:
            continue
        rr = n.child_by_field_name("right")
        if rr is not None and first_replay < n.start_byte:
            fx = F.fix("Clone the static output before the next replay", "unsafe",
                       [F.replace_node(ix, rr, f"{ix.text(rr)}.clone()")])
            seen.add(("static-output-aliased", n.id))
            sink(Hit("static-output-aliased", ix, n, region, (), [f for f in [fx] if f]))
    for n in followed(sn.dels, inputs):
        if ("static-input-deleted", n.id) in seen:
            continue
        targets = [c for c in walk(n) if c.type == "identifier"]
        for tnode in targets:
            if ix.text(tnode) in inputs:
                d = F.delete_statement(ix, n) if len(targets) == 1 else None
                fx = F.fix("Keep the captured input alive (drop the del)", "unsafe", [d] if d else None)
                seen.add(("static-input-deleted", n.id))
                sink(Hit("static-input-deleted", ix, n, region, (), [f for f in [fx] if f]))
    # (a copy's shape check depends on the copy alone: it is made once, for the first capture it follows)
    mcalls = _union([followed({"": sn.empty_cache}, [""]),
                     [n for n in _after_names(sn.copies, inputs, start) if ("copy-checked", n.id) not in seen]])
    for n in mcalls:
        f = n.child_by_field_name("function")
        if f is None:
            continue
        if ix.qualname(f) == "torch.cuda.empty_cache" and replay_follows(n) and ("empty-cache", n.id) not in seen:
            seen.add(("empty-cache", n.id))
            sink(Hit("empty-cache", ix, n, region))
        if ix.text(f).endswith(".copy_"):
            obj = f.child_by_field_name("object")
            args = positional(n)
            if obj is not None and obj.type == "identifier" and ix.text(obj) in inputs and args:
                seen.add(("copy-checked", n.id))
                _check_shape(region, n, obj, args[0], sink)
    # Python scalars read by the capture and changed afterwards
    for name, node in inputs.items():
        if name not in inputs_q or index.kind_cat(node) != "scalar":
            continue
        later = _union([followed(sn.rebind, [name]), followed(sn.aug, [name])])
        if later and ("python-scalar-baked", later[0].id) not in seen:
            seen.add(("python-scalar-baked", later[0].id))
            sink(Hit("python-scalar-baked", ix, later[0], region, (), [f for f in [_scalar_fix(region, name, node, later)] if f]))


def _scalar_fix(region: CaptureRegion, name: str, read: Node, later: list[Node]) -> Fix | None:
    ix = region.ix
    assign, _scope, _p = ix.lookup(name, region.anchor)
    if assign is None or assign.value is None or assign.stmt.type != "assignment" or (
        assign.start_byte >= region.anchor.start_byte or any(n.id == assign.stmt.id for n in later)
    ):
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
    return F.fix("Static buffer: keep the scalar in a 0-dim device tensor and update it in place (fill_())", "unsafe", edits)


def _check_shape(region: CaptureRegion, call: Node, dst: Node, src: Node, sink: Sink) -> None:
    ix = region.ix
    dk = ix.kind(dst)
    sk = ix.kind(src)
    if dk.shape is not None and sk.shape is not None and len(dk.shape) == len(sk.shape) and dk.shape != sk.shape:
        fx = _pad_fix(region, call, dst, src, dk, sk)
        sink(Hit("replay-shape-mismatch", ix, call, region, (), [f for f in [fx] if f], severity="error"))
        return
    src = strip_parens(src)
    if src.type == "identifier":
        assign, _s, _p = ix.lookup(ix.text(src), src)
        stmt = assign.stmt if assign is not None else None
        if stmt is not None and stmt.type == "for_statement":
            it = stmt.child_by_field_name("right")
            if it is not None:
                lk = ix.kind(it)
                loader = lk.node if lk.cat == "dataloader" else None
                if loader is not None:
                    dl = kwarg(ix, loader, "drop_last")
                    if dl is None or ix.text(dl) != "True":
                        fx = _drop_last_fix(ix, loader, dl)
                        sink(Hit("dataloader-partial-batch", ix, call, region, (), [f for f in [fx] if f], severity="warning"))


def _drop_last_fix(ix: FileIndex, loader: Node, dl: Node | None) -> Fix | None:
    if dl is not None:
        return F.fix("Drop the last, smaller batch (drop_last=True)", "unsafe", [F.replace_node(ix, dl, "True")])
    args = loader.child_by_field_name("arguments")
    if args is None:
        return None
    el, ec = ix.src.end(args)
    return F.fix("Drop the last, smaller batch (drop_last=True)", "unsafe", [TextEdit(el, ec - 1, el, ec - 1, ", drop_last=True")])


def _pad_fix(region: CaptureRegion, call: Node, dst: Node, src: Node, dk: Kind, sk: Kind) -> Fix | None:
    ix = region.ix
    stmt = call.parent
    if stmt is None or stmt.type != "expression_statement" or dk.node is None or dk.shape is None or sk.shape is None:
        return None
    d, s = ix.text(dst), ix.text(src)
    edits: list[TextEdit] = []
    if sk.shape[0] > dk.shape[0]:
        args = positional(dk.node)
        first = args[0] if args else None
        if first is not None and first.type in ("tuple", "list") and first.named_child_count:
            first = first.named_children[0]
        if first is None or first.type != "integer":
            return None
        edits.append(F.replace_node(ix, first, str(sk.shape[0])))
    indent = ix.src.indent_of(stmt)
    new = f"{d}.zero_()\n{indent}{d}[: {s}.shape[0]].copy_({s})"
    edits.append(F.replace_node(ix, stmt, new))
    return F.fix("Capture at the largest batch size and copy each batch into a zero-padded slice", "unsafe", edits)


def _side_stream_capture_fix(region: CaptureRegion) -> Fix | None:
    ix = region.ix
    begin, end = region.anchor, region.end_stmt
    if end is None or begin.parent is None or end.parent is None or begin.parent.id != end.parent.id:
        return None
    indent = ix.src.indent_of(begin)
    t = F.torch_alias(ix)
    s = _fresh_name(ix, "capture_stream")
    lines = [f"{indent}{s} = {t}.cuda.Stream()", f"{indent}{s}.wait_stream({t}.cuda.current_stream())",
             f"{indent}with {t}.cuda.stream({s}):"]
    if not F.owns_lines(ix, begin) or not F.owns_lines(ix, end) or _has_ml(begin.parent, begin, end):
        return None
    lines.append(F.rows_text(ix, begin.start_point[0], end.end_point[0], indent, indent + "    "))
    lines.append(f"{indent}{t}.cuda.current_stream().wait_stream({s})")
    return F.fix("Capture on a side stream forked from (and joined to) the current stream", "safe",
                 [TextEdit(begin.start_point[0], 0, *F.row_end(ix, end.end_point[0]), "\n".join(lines))])


def _has_ml(block: Node | None, begin: Node, end: Node) -> bool:
    """A multi-line string in the statements of `block` from `begin` to `end` (both children of `block`)."""
    if block is None:
        return True
    c: Node | None = begin  # walk the siblings from begin, not every child of a long block
    while c is not None and c.start_byte <= end.start_byte:
        if c.start_byte >= begin.start_byte and F._has_multiline_string(c):
            return True
        c = c.next_named_sibling
    return False


def _scope_nodes_after(body: Node, after_byte: int) -> list[Node]:
    out: list[Node] = []
    stack = [body]
    while stack:
        n = stack.pop()
        if n.end_byte <= after_byte:
            continue
        if n.start_byte >= after_byte:
            out.append(n)
        for c in reversed(n.named_children):
            if c.type not in ("function_definition", "class_definition", "decorated_definition", "lambda", "comment", "string"):
                stack.append(c)
    out.sort(key=lambda n: n.start_byte)
    return out


def _enclosing_loop(node: Node, stop: Node) -> Node | None:
    p = node.parent
    while p is not None and p.id != stop.id:
        if p.type in ("for_statement", "while_statement"):
            return p
        p = p.parent
    return None


def _compile_outputs(region: CaptureRegion, sink: Sink) -> None:
    """reduce-overhead outputs kept in a name, then the compiled function called again, then the name read."""
    ix = region.ix
    names = set(region.compiled_names)
    if not names:
        return
    scope_owner = ix.scope_of(region.anchor).node
    body = scope_owner if scope_owner.type == "module" else scope_owner.child_by_field_name("body")
    if body is None:
        return
    start, end = region.end_byte, body.end_byte
    owner = ix.scope_of(region.anchor).node
    by_name = _scope_table(ix, "named_calls", owner)
    calls = sorted((c for name in names if name.isidentifier() for c in _after(by_name.get(name), start)),
                   key=lambda c: c.start_byte)
    for call in calls:
        parent = call.parent
        if parent is None or parent.type != "assignment" or parent.child_by_field_name("right") != call:
            continue
        left = parent.child_by_field_name("left")
        if left is None or left.type != "identifier" or _enclosing_loop(call, body) is not None:
            continue
        name = ix.text(left)
        later_calls = [c for c in calls if c.start_byte > parent.end_byte]
        if not later_calls:
            continue
        nxt = later_calls[0]
        for n in _identifiers(ix, name, nxt.end_byte, end):
            if n.start_byte <= nxt.end_byte or ix.scope_of(n).node.id != owner.id:
                continue
            p = n.parent
            if p is not None and p.type == "assignment" and p.child_by_field_name("left") == n:
                break
            fx = F.fix("Clone the output before the next call", "unsafe", [F.replace_node(ix, call, f"{ix.text(call)}.clone()")])
            fb = eager_fallback(region, None)
            sink(Hit("compile-output-reused", ix, parent, region, (), [f for f in (fx, fb) if f]))
            break


_TABLE_QUERIES = {
    # calls by the called name (`f(...)` and `x.f(...)`), for the warm-up check
    "calls": "(call function: [(identifier) @key (attribute attribute: (identifier) @key)]) @node",
    # calls by each identifier passed positionally, for the warm-up check
    "argcalls": "(call arguments: (argument_list (identifier) @key)) @node",
    # `f(...)` by the name f, for reduce-overhead outputs
    "named_calls": "(call function: (identifier) @key) @node",
}


def _scope_table(ix: FileIndex, table: str, owner: Node) -> dict[str, list[Node]]:
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
            d = _def_of(node[0])
            if (d.id if d is not None else root_id) == owner.id:
                found.setdefault(ix.text(key[0]), []).append(node[0])
        for v in found.values():
            v.sort(key=lambda n: n.start_byte)
    return found


def _upto(nodes: list[Node] | None, end: int) -> list[Node]:
    """The nodes (sorted by start) that start before byte `end`."""
    if not nodes:
        return []
    return nodes[: bisect_left(nodes, end, key=lambda n: n.start_byte)]


def _region_settings(region: CaptureRegion, sink: Sink) -> None:
    """Settings around a capture that break it: autocast cache, cudaMallocAsync, pinning threads."""
    ix = region.ix
    if region.kind == "graphed_callables":
        p = region.site.parent
        while p is not None:
            if p.type == "with_statement":
                clause = next((c for c in p.children if c.type == "with_clause"), None)
                for item in clause.named_children if clause is not None else []:
                    v = item.child_by_field_name("value")
                    if v is None or v.type != "call":
                        continue
                    f = v.child_by_field_name("function")
                    q = ix.qualname(f) if f is not None else None
                    if q is None or not q.endswith("autocast"):
                        continue
                    ce = kwarg(ix, v, "cache_enabled")
                    if ce is not None and not _truthy(ix, ce):
                        continue
                    if ce is not None:
                        edit = F.replace_node(ix, ce, "False")
                    else:
                        args = v.child_by_field_name("arguments")
                        if args is None:
                            continue
                        el, ec = ix.src.end(args)
                        sep = ", " if args.named_child_count else ""
                        edit = TextEdit(el, ec - 1, el, ec - 1, f"{sep}cache_enabled=False")
                    sink(Hit("graphed-callables-autocast-cache", ix, v, region, (),
                             [f for f in [F.fix("Disable the autocast cache (cache_enabled=False)", "safe", [edit])] if f]))
            if p.type in ("function_definition", "module"):
                break
            p = p.parent
    if region.kind == "compile" and ix.has(b"cudaMallocAsync"):
        found = ix.scope_tables.get(("cudaMallocAsync", ix.src.root.id))
        if found is None:  # the first string naming the backend, looked for once per file
            ix.src.need_word("cudaMallocAsync", whole=False)
            first = next((n for n in run_query("(string) @s", ix.src.root).get("s", [])
                          if "cudaMallocAsync" in ix.text(n) and "backend" in ix.text(n)), None)
            found = ix.scope_tables[("cudaMallocAsync", ix.src.root.id)] = {"": [first] if first is not None else []}
        for n in found[""]:
            sink(Hit("cudamallocasync-with-cudagraphs", ix, n, region))
    if region.kind in ("graph", "wrapper") and ix.has(b"pin_memory=True") and (ix.has(b"Thread(") or ix.has(b"threading")):
        mode = kwarg(ix, region.site, "capture_error_mode")
        if mode is None or "global" in ix.text(mode) or (mode.type == "identifier" and "thread_local" not in ix.text(mode)
                                                         and "global" in _value_text(ix, mode)):
            if mode is not None:
                edit = F.replace_node(ix, mode, '"thread_local"')
            else:
                args = region.site.child_by_field_name("arguments")
                if args is None:
                    return
                el, ec = ix.src.end(args)
                edit = TextEdit(el, ec - 1, el, ec - 1, ', capture_error_mode="thread_local"')
            sink(Hit("pinning-thread-global-capture", ix, region.site, region, (),
                     [f for f in [F.fix('Capture with capture_error_mode="thread_local"', "safe", [edit])] if f]))


def _value_text(ix: FileIndex, node: Node) -> str:
    assign, _s, _p = ix.lookup(ix.text(node), node)
    return ix.text(assign.value) if assign is not None and assign.value is not None else ""


# ---- module constants folded in `if` conditions (`FIX = "none"` ... `if FIX == "flag":`) ----------------------
def _const_value(ix: FileIndex, node: Node, depth: int = 0) -> object:
    """The value of a literal, or of a name bound once at module level to a literal; `_UNKNOWN` otherwise."""
    node = strip_parens(node)
    t = node.type
    if t == "true":
        return True
    if t == "false":
        return False
    if t == "none":
        return None
    if t == "integer":
        try:
            return int(ix.text(node), 0)
        except ValueError:
            return _UNKNOWN
    if t == "string":
        text = ix.text(node)
        if any(c.type == "interpolation" for c in node.named_children) or text[:1] not in ("'", '"'):
            return _UNKNOWN
        return _string_value(ix, node)
    if t in ("tuple", "list", "set"):
        vals = [_const_value(ix, c, depth) for c in node.named_children if c.type != "comment"]
        return _UNKNOWN if any(v is _UNKNOWN for v in vals) else tuple(vals)
    if t == "identifier" and depth < 3:
        name = ix.text(node)
        assign, scope, is_param = ix.lookup(name, node)
        if is_param or assign is None or assign.value is None or scope is None or scope.node.type != "module":
            return _UNKNOWN
        if len(scope.assigns.get(name, ())) != 1 or name in scope.globals:
            return _UNKNOWN
        st = _stmt_of(assign.stmt)
        if st.parent is None or st.parent.type != "module":
            return _UNKNOWN  # bound inside a branch, loop, with or try
        return _const_value(ix, assign.value, depth + 1)
    return _UNKNOWN


_UNKNOWN = object()


def _const_truth(ix: FileIndex, cond: Node | None) -> bool | None:
    """True/False when a condition folds to a constant (module constants, literals, ==, !=, in, not in, not,
    and, or); None when it does not."""
    if cond is None:
        return None
    cond = strip_parens(cond)
    t = cond.type
    if t == "not_operator":
        arg = cond.child_by_field_name("argument")
        v = _const_truth(ix, arg)
        return None if v is None else not v
    if t == "boolean_operator":
        a = _const_truth(ix, cond.child_by_field_name("left"))
        b = _const_truth(ix, cond.child_by_field_name("right"))
        op = next((ix.text(c) for c in cond.children if not c.is_named), "")
        if op == "and":
            return False if a is False or b is False else (True if a and b else None)
        return True if a is True or b is True else (False if a is False and b is False else None)
    if t == "comparison_operator":
        operands = [c for c in cond.named_children if c.type != "comment"]
        ops = " ".join(ix.text(c) for c in cond.children if not c.is_named)
        if len(operands) != 2 or ops not in ("==", "!=", "in", "not in"):
            return None
        lv, rv = (_const_value(ix, o) for o in operands)
        if lv is _UNKNOWN or rv is _UNKNOWN:
            return None
        if ops in ("in", "not in"):
            if not isinstance(rv, tuple):
                return None
            return (lv in rv) == (ops == "in")
        return (lv == rv) == (ops == "==")
    cv = _const_value(ix, cond)
    return None if cv is _UNKNOWN or isinstance(cv, tuple) else bool(cv)


def _dead_code(ix: FileIndex, node: Node) -> bool:
    """`node` sits in a branch whose condition folds to a constant that never takes it."""
    child = node
    p = node.parent
    while p is not None and p.type not in ("function_definition", "module"):
        if p.type == "if_statement":
            cons = p.child_by_field_name("consequence")
            if cons is not None and cons.id == child.id and _const_truth(ix, p.child_by_field_name("condition")) is False:
                return True
            if child.type in ("elif_clause", "else_clause") and _const_truth(ix, p.child_by_field_name("condition")) is True:
                return True
        elif p.type == "elif_clause":
            cons = p.child_by_field_name("consequence")
            if cons is not None and cons.id == child.id and _const_truth(ix, p.child_by_field_name("condition")) is False:
                return True
        child, p = p, p.parent
    return False


# ---- capturable optimizer reset by load_state_dict (DPX410 / DPX411) --------------------------------------------
_SUBSCRIPT_ASSIGNS = "(assignment left: (subscript subscript: (string) @key)) @assign"


def _restores(ix: FileIndex, load: Node, limit: int) -> tuple[bool, bool]:
    """(flag restored, steps moved) after the `load_state_dict` call `load`: `x["capturable"] = ...` and
    `x["step"] = ...` assignments (live, after the call in its scope and before byte `limit`, or anywhere in
    another function: a helper is given the benefit of the doubt), or `capturable=True` passed to a call."""
    flag = steps = False
    scope = ix.scope_of(load).node
    for quoted in ('"capturable"', "'capturable'", '"step"', "'step'"):
        ix.src.need_word(quoted, whole=False)
    caps = run_query(_SUBSCRIPT_ASSIGNS, ix.src.root)
    for assign, key in zip(caps.get("assign", []), caps.get("key", []), strict=False):
        which = _string_value(ix, key)
        if which not in ("capturable", "step"):
            continue
        owner = ix.scope_of(assign).node
        if owner.id == scope.id:
            if not (load.end_byte <= assign.start_byte < limit) or _dead_code(ix, assign):
                continue
        else:
            ix.touched.append((owner.start_byte, owner.end_byte))
        if which == "capturable":
            flag = True
        else:
            steps = True
    if not flag:
        for call in run_query("(call) @call", ix.src.root).get("call", []):
            if load.end_byte <= call.start_byte < limit and ix.scope_of(call).node.id == scope.id:
                cap = kwarg(ix, call, "capturable")
                if cap is not None and _truthy(ix, cap) and not _dead_code(ix, call):
                    flag = True
                    break
    return flag, steps


def _saved_by_noncapturable(ix: FileIndex) -> bool:
    """The file saves the state of an optimizer built without capturable=True (`old.state_dict()`)."""
    ix.src.need_word("state_dict")
    for call in run_query("(call) @call", ix.src.root).get("call", []):
        f = call.child_by_field_name("function")
        if f is None or f.type != "attribute" or ix.text(f.child_by_field_name("attribute") or f) != "state_dict":
            continue
        obj = f.child_by_field_name("object")
        k = ix.kind(obj) if obj is not None else None
        if k is not None and k.cat == "optimizer" and _capturable_optimizer(ix, k) and k.node is not None:
            cap = kwarg(ix, k.node, "capturable")
            if cap is None or not _truthy(ix, cap):
                return True
    return False


def loaded_state_hazard(region: CaptureRegion, ctor: Node, sink: Sink) -> None:
    """An optimizer built with capturable=True, then `opt.load_state_dict(...)` before the capture that steps it:
    loading a checkpoint of a non-capturable optimizer sets param_groups' capturable back to False (DPX410) and
    leaves state["step"] on the CPU (DPX411, once the flag alone is restored)."""
    ix = region.ix
    parent = ctor.parent
    if parent is None or parent.type != "assignment" or parent.child_by_field_name("right") != ctor:
        return
    left = parent.child_by_field_name("left")
    if left is None or left.type != "identifier":
        return
    name = ix.text(left)
    scope = ix.scope_of(ctor).node
    body = scope if scope.type == "module" else scope.child_by_field_name("body")
    if body is None:
        return
    if scope.type != "module":
        ix.touched.append((scope.start_byte, scope.end_byte))
    same = ix.scope_of(region.anchor).node.id == scope.id
    limit = region.anchor.start_byte if same else body.end_byte
    load: Node | None = None
    for n in _identifiers(ix, name, ctor.end_byte, limit):
        p = n.parent
        if p is None or p.type != "attribute" or p.child_by_field_name("object") != n:
            continue
        attr = p.child_by_field_name("attribute")
        call = p.parent
        if attr is None or ix.text(attr) != "load_state_dict" or call is None or call.type != "call":
            continue
        if ix.scope_of(n).node.id == scope.id and not _dead_code(ix, call):
            load = call
    if load is None:
        return
    for n in _identifiers(ix, name, load.end_byte, limit):  # handed to code we cannot see after the load
        p = n.parent
        call = p.parent if p is not None and p.type == "argument_list" else None
        if call is not None and call.type == "call" and ix.scope_of(n).node.id == scope.id:
            f = call.child_by_field_name("function")
            q = ix.qualname(f) if f is not None else None
            if q is not None and q.split(".", 1)[0] not in ("torch", "print", "copy"):
                fn = f if f is not None and f.type == "identifier" else None
                if fn is not None:
                    ix.src.need_def(ix.text(fn))
                if fn is None or not any(fi.name == ix.text(fn) and fi.class_name is None for fi in ix.functions):
                    return
    flag, steps = _restores(ix, load, limit)
    if flag and steps:
        return
    known = _saved_by_noncapturable(ix)
    sev: Severity | None = None if known else "warning"
    stmt = _stmt_of(load)
    torch = F.torch_alias(ix)
    lines: list[str] = []
    if not flag:
        g = _fresh_name(ix, "opt_group")
        lines += [f"for {g} in {name}.param_groups:", f'    {g}["capturable"] = True']
    if not steps:
        st = _fresh_name(ix, "opt_state")
        lines += [f"for {st} in {name}.state.values():",
                  f'    {st}["step"] = {st}["step"].to(device="cuda", dtype={torch}.float32)']
    fx = F.fix("Restore capturable after load_state_dict" if not flag else "Move state['step'] to the GPU after load_state_dict",
               "unsafe", [F.insert_after_statement(ix, stmt, lines)]) if stmt.parent is not None and stmt.parent.type in ("module", "block") else None
    origin = "" if known else " (when the checkpoint was saved by an optimizer with capturable=False)"
    if not flag:
        msg = ("load_state_dict() takes the saved param_groups: loading a non-capturable checkpoint sets capturable "
               f"back to False{origin}, and the captured {name}.step() raises; set group['capturable'] = True again and "
               "move state['step'] to the GPU")
        sink(Hit("optimizer-capturable-reset-by-load", ix, load, region, (), [fx] if fx else [], sev, msg))
    else:
        msg = ("capturable is restored after load_state_dict(), but state['step'] stays where the checkpoint put "
               f"it, on the CPU{origin}: the first step asserts 'params and state_steps must be on supported "
               "devices'; move every state['step'] to the GPU as float32")
        sink(Hit("optimizer-state-step-on-cpu", ix, load, region, (), [fx] if fx else [], sev, msg))


# ---- reduce-overhead on a function that mutates its inputs (DPX701) --------------------------------------------
_NOT_MUTATING = frozenset({"requires_grad_", "share_memory_", "retain_grad_"})


def compile_mutated_inputs(region: CaptureRegion, resolver: Resolver, sink: Sink) -> None:
    """An in-place method (`buf.add_(1)`) on a parameter of a function compiled with CUDA graphs: Inductor skips
    cudagraphs for that graph ('skipping cudagraphs due to mutated inputs'; an error with
    TORCHINDUCTOR_CUDAGRAPH_OR_ERROR=1)."""
    ix = region.ix
    funcs: list[Node] = list(region.functions)
    for expr in region.callables:
        for t in resolve_region_callable(resolver, ix, expr):
            if t.ix is ix and t.func.class_name is None:
                funcs.append(t.func.node)
    for fn in funcs:
        body = fn.child_by_field_name("body")
        if body is None:
            continue
        ix.touched.append((fn.start_byte, fn.end_byte))
        for call in run_query_range("(call function: (attribute object: (identifier) @obj attribute: (identifier) @m)) @call",
                                    body, body.start_byte, body.end_byte).get("call", []):
            f = call.child_by_field_name("function")
            if f is None or _in_nested_definition(call, fn) or _def_of(call) != fn:
                continue
            obj = f.child_by_field_name("object")
            m = f.child_by_field_name("attribute")
            if obj is None or m is None or obj.type != "identifier":
                continue
            meth = ix.text(m)
            if not (meth.endswith("_") and not meth.endswith("__") and not meth.startswith("_")) or meth in _NOT_MUTATING:
                continue
            _a, _s, is_param = ix.lookup(ix.text(obj), call)
            if not is_param or ix.text(obj) in ("self", "cls"):
                continue
            sink(Hit("compile-mutated-input", ix, call, region, (), [], None,
                     f"{ix.text(obj)}.{meth}(...) mutates an input of a function compiled with CUDA graphs: Inductor "
                     "skips cudagraphs for this graph ('skipping cudagraphs due to mutated inputs'; a RuntimeError with "
                     "TORCHINDUCTOR_CUDAGRAPH_OR_ERROR=1); return a new tensor or make it a module buffer"))


# ---- an eager step's graph kept alive on the legacy stream (DPX107) --------------------------------------------
_DETACHED_RETURNS = (".item()", ".detach()", ".tolist()", ".cpu()", ".numpy()")


def _keeps_graph(ix: FileIndex, fn: Node) -> bool:
    """The function runs `.backward(` and returns a value that can hold the autograd graph."""
    body = fn.child_by_field_name("body")
    if body is None:
        return False
    back = ret = False
    for n in walk(body):
        if n.type not in ("call", "return_statement") or _def_of(n) != fn:
            continue
        if _in_nested_definition(n, fn):
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


def legacy_stream_step(region: CaptureRegion, resolver: Resolver, sink: Sink) -> None:
    """`out = step()` on the default stream before the side-stream warm-up, where step() runs backward and returns
    a tensor, and the capture runs step() again while `out` is alive: `out` keeps the autograd graph, so the
    parameters' AccumulateGrad nodes stay on the legacy stream and the captured backward raises 906."""
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
    before = list(reversed(_siblings(anchor, after=False)))
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
            if deleted or (later.type == "expression_statement" and name in _bound_names(ix, later)):
                released = True
        if released:
            continue
        w = before[warm]
        reads_later = any(n.id != left.id and not (st.start_byte <= n.start_byte < w.start_byte)
                          for n in _identifiers(ix, name, 0, len(ix.src.data)))
        fx = None if reads_later else F.fix(f"Release {name} (and its autograd graph) before the side-stream warm-up",
                                            "unsafe", [F.insert_before_statement(ix, w, [f"del {name}"])])
        sink(Hit("eager-graph-on-legacy-stream", ix, asg, region, (), [fx] if fx else [], None,
                 f"{name} keeps the autograd graph of an eager backward run on the default (legacy) stream: the "
                 "parameters' AccumulateGrad nodes stay on the legacy stream, and the captured backward raises "
                 "'operation would make the legacy stream depend on a capturing blocking stream' (906); run this "
                 "call inside the side-stream warm-up or `del` the result before it"))
