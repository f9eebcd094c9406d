"""What an expression may be when the capture runs, for call resolution: instances of workspace classes (one
abstract object per construction site), workspace functions (bound to an instance or to call arguments),
containers of modules, and library objects by qualified name.

Demand-driven and flow-insensitive across functions, after the shape of PyCG's assignment graph with
allocation sites (research: call-resolution.md §3): a local name is the assignment visible where it is read,
`self.x` the union of every `self.x = ...` / `self.x.append(...)` in the class and its bases, a call the union
of its targets' returns, a parameter its annotation, its default or the arguments at its call sites in every
workspace file. Library behaviour is a small table of summaries (nn.Module's call runs `forward`; `.to()` /
`.cuda()` / `.eval()` return the module; `nn.Sequential` / `ModuleList` / `ModuleDict` hold their elements;
`torch.compile(m)` behaves like `m`). Every answer is capped (values per expression, depth, call sites): an
expression that needs more is unknown, and an unknown value gives no call edge, never a guess by name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from tree_sitter import Node

from denpex.source.resolve import callsites
from denpex.source.resolve.annotations import annotated_types, container_elements
from denpex.source.resolve.args import bind
from denpex.source.resolve.carried import Carried, CarriedAnswers, files_named
from denpex.source.resolve.consts import arm_dead
from denpex.source.resolve.hierarchy import Hierarchy
from denpex.source.resolve.index import (
    Assign,
    ClassInfo,
    FileIndex,
    FuncInfo,
    Kind,
    block_of,
    holds,
    positional,
    reaching_bindings,
)
from denpex.source.resolve.value_types import (
    ClassRef,
    FilesWith,
    Func,
    Inst,
    Lib,
    Lookup,
    Seq,
    Super,
    Value,
)
from denpex.source.syntax.parse import strip_parens

MAX_VALUES = 8  # per expression; more is unknown
MAX_DEPTH = 8  # nested questions per answer
MAX_SITES = 20  # call sites read for one parameter
MAX_CANDIDATES = 200  # calls of the name examined for one parameter (a method name such as `forward` is common)
NO_OPEN = 1 << 30  # no parameter under way
GUESS_CALLERS = 1  # a parameter's callers pass different objects (a may-be edge inside a call made under capture)
GUESS_PARTIAL = 2  # a union of which some members are not known (a may-be edge everywhere)

# methods of nn.Module (and tensors) that return the receiver itself
_SELF_RETURNING = frozenset({"to", "cuda", "cpu", "half", "float", "double", "bfloat16", "train", "eval",
                             "requires_grad_", "apply", "share_memory", "to_empty"})
# library calls whose result behaves like their first argument
_PASS_THROUGH = frozenset({"torch.compile", "torch.jit.script", "torch.jit.trace", "torch.nn.DataParallel",
                           "torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.DataParallel",
                           "torch.cuda.make_graphed_callables", "functools.wraps", "functools.lru_cache",
                           "functools.cache", "torch.no_grad", "torch.inference_mode", "torch.enable_grad"})
# builtins whose result iterates over the elements of their arguments
_ITERATING = frozenset({"enumerate", "zip", "reversed", "sorted", "list", "tuple", "iter"})
_CONTAINERS = ("Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict")


def _union(groups: Iterable[list[Value]]) -> list[Value]:
    out: dict[tuple[int, ...], Value] = {}
    lambdas: dict[tuple[int, ...], Value] = {}
    for g in groups:
        for v in g:
            (lambdas if isinstance(v, Func) and v.func.node.type == "lambda" else out).setdefault(v.key(), v)
            if len(out) > MAX_VALUES:
                return []  # too many to be useful: unknown
    if len(out) + len(lambdas) > MAX_VALUES:
        # lambdas passed at many call sites (tensordict's tests: CudaGraphModule(lambda td: ...)) do not crowd out
        # the other values (its TensorDictModule instances): they are left out
        return list(out.values())
    return [*out.values(), *lambdas.values()]


@dataclass
class Values(Hierarchy):
    lookup_module: Lookup
    files_with: FilesWith | None = None
    _memo: dict[tuple[int, int], tuple[list[Value], int]] = field(default_factory=dict)  # values, guessed
    _active: set[tuple[int, int]] = field(default_factory=set)
    # parameter values from the callers' arguments, per (file, function, parameter): (values, guessed)
    _params: dict[tuple[int, int, str], tuple[list[Value], int]] = field(default_factory=dict)
    _open: dict[tuple[int, int, str], int] = field(default_factory=dict)  # parameters under way -> stack position
    # callgraph.Resolver's callables from call sites per (file, function, parameter): (targets, ranges read)
    targets_memo: dict[tuple[int, int, str], tuple[list[Any], list[tuple[int, int]]]] = field(default_factory=dict)
    _mro: dict[tuple[int, int], list[tuple[FileIndex, ClassInfo]]] = field(default_factory=dict)
    _kinds: dict[tuple[int, int, str], Kind | None] = field(default_factory=dict)  # parameter_kind's answers
    _cut: bool = False  # an answer under way was cut by the depth bound (it is then not remembered)
    # the lowest stack position of a parameter under way that the answer under way read (a cycle through it):
    # the answer is then remembered only by that parameter itself, once it is complete
    _low: int = NO_OPEN
    # an answer since the last reset is a may-be one (GUESS_CALLERS | GUESS_PARTIAL bits, 0: none)
    guessed: int = 0
    # from_callers' answers that read nothing of the analysed file `pinned`, carried by its Document across
    # keystrokes while no other file changes (engine/analyse.py): see Carried
    carried: CarriedAnswers | None = None
    pinned: FileIndex | None = None
    current: Callable[[str], FileIndex | None] | None = None  # the workspace's index of a file now
    _seen_pinned: int = 0  # questions asked of `pinned`'s code (an answer that asked one is not carried)
    _words: set[str] | None = None  # while a carried answer is computed: the words its call sites were found by

    def forget(self) -> None:
        """Drop every remembered answer. The ranges an answer consulted are recorded (ix.touched) only when it is
        computed, so an analysis that tracks them per capture region starts each region afresh; otherwise a
        region reading another's answer would not record what it depends on, and an edit there would leave
        its findings stale."""
        self._memo.clear()
        self._params.clear()
        self.targets_memo.clear()
        self._mro.clear()
        self._kinds.clear()

    def memos(self) -> tuple[dict[Any, Any], ...]:
        return (self._memo, self._params, self.targets_memo, self._mro, self._kinds)

    def set_memos(self, memos: tuple[dict[Any, Any], ...] | None) -> None:
        """Put back `memos()`'s answers, or (None) start with none: engine/units.py walks an entry apart."""
        m = memos if memos is not None else ({}, {}, {}, {}, {})
        self._memo, self._params, self.targets_memo, self._mro, self._kinds = m

    def _asked(self, ix: FileIndex) -> None:
        """A question about `ix`'s code: counted when it is the analysed file (an answer that asked one is not
        carried across keystrokes)."""
        if ix is self.pinned:
            self._seen_pinned += 1

    def _pinned_mark(self) -> tuple[int, int, int, int] | None:
        """What grows, or is replaced, when an answer reads the analysed file: compared before and after one."""
        p = self.pinned
        return (self._seen_pinned, len(p.touched), len(p.attr_deps), id(p.watched)) if p is not None else None

    def busy(self) -> bool:
        """An answer is under way (its cycle guards are set)."""
        return bool(self._active or self._open)

    # ---- expressions -------------------------------------------------------------------------------------
    def of(self, ix: FileIndex, expr: Node, depth: int = 0) -> list[Value]:
        """The values `expr` (in `ix`) may have. An answer cut short by the depth bound is not remembered: asked
        again from nearer the top it may go further."""
        self._asked(ix)
        if depth > MAX_DEPTH:
            self._cut = True
            return []
        expr = strip_parens(expr)
        key = (id(ix), expr.id)
        hit = self._memo.get(key)
        if hit is not None:
            self.guessed |= hit[1]
            return hit[0]
        if key in self._active:
            return []  # a cycle (x = f(x)): no value through it
        self._active.add(key)
        outer_cut, self._cut = self._cut, False
        outer_low, self._low = self._low, NO_OPEN
        outer_guess, self.guessed = self.guessed, 0
        try:
            found = self._of(ix, expr, depth)
        finally:
            self._active.discard(key)
            cut, low, guess = self._cut, self._low, self.guessed
            self._cut = outer_cut or cut
            self._low = min(outer_low, low)
            self.guessed = outer_guess | guess
        if not cut and low == NO_OPEN:
            self._memo[key] = (found, guess)
        return found

    def _of(self, ix: FileIndex, expr: Node, depth: int) -> list[Value]:
        t = expr.type
        if t == "identifier":
            return self._name(ix, expr, depth)
        if t == "attribute":
            obj = expr.child_by_field_name("object")
            attr = expr.child_by_field_name("attribute")
            if obj is None or attr is None:
                return []
            return self.attribute(ix, self.of(ix, obj, depth + 1), ix.text(attr), depth, obj)
        if t == "call":
            return self._call(ix, expr, depth)
        if t == "subscript":
            v = expr.child_by_field_name("value")
            return self.elements(self.of(ix, v, depth + 1)) if v is not None else []
        if t in ("list", "tuple", "set", "expression_list"):
            return [Seq(tuple(_union(self.of(ix, c, depth + 1) for c in expr.named_children)))]
        if t in ("list_comprehension", "generator_expression", "set_comprehension"):
            body = expr.child_by_field_name("body")
            return [Seq(tuple(self.of(ix, body, depth + 1)))] if body is not None else []
        if t == "dictionary":
            vals = [p.child_by_field_name("value") for p in expr.named_children if p.type == "pair"]
            return [Seq(tuple(_union(self.of(ix, v, depth + 1) for v in vals if v is not None)))]
        if t == "conditional_expression" and expr.named_child_count == 3:
            a, _c, b = expr.named_children
            return _union([self.of(ix, a, depth + 1), self.of(ix, b, depth + 1)])
        if t == "boolean_operator":
            return _union(self.of(ix, c, depth + 1) for c in expr.named_children)
        if t == "lambda":
            return [Func(ix, ix.lambda_info(expr))]
        return []

    def _name(self, ix: FileIndex, ident: Node, depth: int) -> list[Value]:
        name = ix.text(ident)
        if name == "self":
            cls = ix.enclosing_class(ident)
            return [Inst(ix, cls, None)] if cls is not None else []
        if name == "cls":
            owner = _classmethod_of(ix, ident)
            if owner is not None:
                return [ClassRef(ix, owner)]  # the class itself (a subclass calling it inherits the same methods)
        assign, scope, is_param = ix.lookup(name, ident)
        if is_param and scope is not None:
            info = ix.by_node.get(scope.node.id)
            return self.parameter(ix, info, name, depth) if info is not None else []
        rhs = assign.stmt.child_by_field_name("right") if assign is not None and assign.stmt.type == "assignment" else None
        if assign is not None and rhs is not None and scope is not None and (
                rhs.start_byte <= ident.start_byte < rhs.end_byte):
            # `embed = make_graphed_callables(embed, ...)`: the name read on the right is the earlier binding
            earlier = [a for a in scope.assigns.get(name, []) if a.stmt.end_byte <= assign.stmt.start_byte]
            if earlier:
                assign = earlier[-1]
            elif scope.node.type != "module" and name in scope.params:
                info = ix.by_node.get(scope.node.id)
                return self.parameter(ix, info, name, depth) if info is not None else []
            else:
                return self.global_name(ix, name, depth)
        if assign is not None:
            if scope is not None and scope.node.type == "module":
                ix.watched.add(name)  # every binding of a module name may change the answer
            reaching = reaching_bindings(scope, name, assign, ident, MAX_VALUES) if scope is not None else [assign]
            if len(reaching) > 1 and scope is not None:
                # arms the program's default run does not take (`if name == "sgd":` with "adam" passed) are left out
                taken = [a for a in reaching if not arm_dead(ix, a.stmt, scope.node, self.call_sites)]
                reaching = taken or reaching
            groups = [self._assigned(ix, a, depth, name) for a in reaching]
            if scope is not None and scope.node.type == "module" and ix.imports.lookup(name) is not None and not any(
                    holds(block_of(a.stmt), ident) for a in reaching):
                # `try: from flash_attn import f` / `except ImportError: f = None`: every binding found sits in a
                # branch, so the import is the other way the name is bound (imports are not scope bindings)
                groups.append(self.global_name(ix, name, depth))
            found = _union(groups)
            if len(found) > 1 and sum(1 for g in groups if g) > 1:
                self.guessed |= GUESS_PARTIAL  # branches bind different objects: which one runs is not known
            return found
        # a def of the function around the read (`make()` of `if arch == "mixer": def make(): ...`); not a closure
        # returned as the function's result: an attribute that holds both the wrapped function and that wrapper
        # (torchtitan's self.fwd_bwd_fn) would make the wrapper call itself under capture
        local = ix.local_defs(name, ident) if not is_param and not _returned(ident) else []
        if local:
            if len(local) > 1:
                self.guessed |= GUESS_PARTIAL  # defined in several branches: which one runs is not known
            return [Func(ix, f) for f in local]
        if name in ix.branch_funcs:
            own = ix.module_func(name, ident)  # defined in several branches: the one of the branch read from
            if own is not None:
                return [Func(ix, own)]
        return self.global_name(ix, name, depth)

    def _assigned(self, ix: FileIndex, assign: Assign, depth: int, name: str | None = None) -> list[Value]:
        """The values one binding of a name gives it."""
        st = assign.stmt
        if assign.value is None and st.type in ("for_statement", "for_in_clause"):
            it = st.child_by_field_name("right")
            return self.elements(self.of(ix, it, depth + 1)) if it is not None else []
        if assign.value is None and assign.unpacked is not None and name is not None and st.type == "assignment":
            return self._unpacked(ix, st, assign.unpacked, name, depth)
        if assign.value is None or st.type == "augmented_assignment":
            return []
        return self.of(ix, assign.value, depth + 1)

    def _unpacked(self, ix: FileIndex, st: Node, right: Node, name: str, depth: int) -> list[Value]:
        """`model, opt, sched = build_components(cfg)`: the element at the name's position of every tuple the
        called workspace function returns (with as many elements as the targets; a splat target: nothing)."""
        left = st.child_by_field_name("left")
        r = strip_parens(right)
        f = r.child_by_field_name("function") if r.type == "call" else None
        if left is None or f is None:
            return []
        elems = list(strip_parens(left).named_children)
        at = [i for i, e in enumerate(elems) if e.type == "identifier" and ix.text(e) == name]
        if len(at) != 1 or any(e.type not in ("identifier", "attribute", "subscript") for e in elems):
            return []
        out: list[list[Value]] = []
        for v in self.of(ix, f, depth + 1):
            if not isinstance(v, Func) or v.partial is not None:
                continue
            bound = bind(ix, r, v.func)
            for ret in callsites.returned(v.ix, v.func):
                e = strip_parens(ret)
                if e.type in ("tuple", "expression_list") and e.named_child_count == len(elems):
                    out.append(self._returned(v.ix, v.func, e.named_children[at[0]], bound, ix, depth + 1))
        return _union(out)

    def global_name(self, ix: FileIndex, name: str, depth: int) -> list[Value]:
        """A module-level function or class of the file, or one imported from a workspace file."""
        self._asked(ix)
        fn = ix.module_funcs.get(name)
        if fn is not None:
            return [Func(ix, fn)]
        cls = ix.classes.get(name)
        if cls is not None:
            return [ClassRef(ix, cls)]
        q = ix.imports.lookup(name)
        if q is not None and "." in q:
            mod, _, attr = q.rpartition(".")
            return self.symbol(mod, attr, depth + 1)
        return []

    def symbol(self, module: str, name: str, depth: int) -> list[Value]:
        """`name` as defined in workspace module `module`, through re-exports (`from .model import Net` in a
        package's `__init__.py`)."""
        if depth > MAX_DEPTH:
            self._cut = True
            return []
        other = self.lookup_module(module)
        if other is None:
            return []
        self._asked(other)
        fn = other.module_funcs.get(name)
        if fn is not None:
            return [Func(other, fn)]
        cls = other.classes.get(name)
        if cls is not None:
            return [ClassRef(other, cls)]
        q = other.imports.lookup(name)
        if q is not None and "." in q and q != f"{module}.{name}":
            mod, _, attr = q.rpartition(".")
            return self.symbol(mod, attr, depth + 1)
        bound = other.scope(other.src.root).assigns.get(name, [])
        if len(bound) == 1 and bound[0].value is not None:
            # `_device_recorder = _DeviceRecorder()`, bound once at module level: that value
            other.watched.add(name)  # every binding of a module name may change the answer
            return self._assigned(other, bound[0], depth + 1)
        if not name.startswith("_"):  # `from .parallel_state import *` in a package's __init__.py: public names
            for star in other.imports.star_modules():
                if star != module:
                    found = self.symbol(star, name, depth + 1)
                    if found:
                        return found
        return []

    # ---- calls -------------------------------------------------------------------------------------------
    def _call(self, ix: FileIndex, call: Node, depth: int) -> list[Value]:
        f = call.child_by_field_name("function")
        if f is None:
            return []
        q = ix.qualname(f)
        args = positional(call)
        if q is not None:
            if q == "functools.partial" and args:
                return [Func(v.ix, v.func, v.bound, call, ix) if isinstance(v, Func) else v
                        for v in self.of(ix, args[0], depth + 1)]
            if q in _PASS_THROUGH or (q.endswith(".compile") and q.startswith("torch")):
                return self.of(ix, args[0], depth + 1) if args else []
            if q in _ITERATING and args and ix.imports.lookup(q) is None:
                # `for i, block in enumerate(blocks)`: the elements of what is iterated (a Seq keeps no positions)
                return [Seq(tuple(_union(self.elements(self.of(ix, a, depth + 1)) for a in args)))]
            if q.rsplit(".", 1)[-1] in _CONTAINERS and q.startswith("torch.nn"):
                return [self._container(ix, call, depth, runs=q.endswith("Sequential"))]
            if q == "super":
                cls = ix.enclosing_class(call)
                return [Super(ix, cls, Inst(ix, cls, None))] if cls is not None else []
        if f.type == "attribute":
            obj = f.child_by_field_name("object")
            attr = f.child_by_field_name("attribute")
            if obj is not None and attr is not None and ix.text(attr) in _SELF_RETURNING:
                recv = self.of(ix, obj, depth + 1)
                if recv:
                    return recv
            # a dict's items() as its values (a Seq keeps no keys: `for name, fn in VARIANTS.items()` binds fn)
            if obj is not None and attr is not None and ix.text(attr) in ("values", "items", "children", "modules"):
                seqs = [v for v in self.of(ix, obj, depth + 1) if isinstance(v, Seq)]
                if seqs:
                    return [Seq(tuple(self.elements(list(seqs))))]
        callee = self.of(ix, f, depth + 1)
        out: list[list[Value]] = []
        for v in callee:
            if isinstance(v, ClassRef):
                out.append([Inst(v.ix, v.cls, call, ix)])
            elif isinstance(v, Func):
                out.append(self.returns(v, depth + 1, (ix, call)))
        if not callee and q is not None and not q.startswith(("self.", "super")) and q.split(".", 1)[0] not in (
                "print", "len", "range", "isinstance"):
            head = q.split(".", 1)[0]
            if head != q or ix.imports.lookup(head) is not None:
                return [Lib(q, ix, call)]  # a library object: its kind is read at its construction
        return _union(out)

    def _container(self, ix: FileIndex, call: Node, depth: int, runs: bool) -> Seq:
        elems: list[list[Value]] = []
        arg_list = call.child_by_field_name("arguments")
        for a in arg_list.named_children if arg_list is not None else []:
            if a.type in ("keyword_argument", "comment", "dictionary_splat"):
                continue
            a = strip_parens(a)
            if a.type == "list_splat":
                inner = a.named_children[0] if a.named_child_count else None
                if inner is not None:
                    elems.append(self.elements(self.of(ix, inner, depth + 1)))
            elif a.type in ("list", "tuple", "dictionary", "list_comprehension", "generator_expression"):
                elems.append(self.elements(self.of(ix, a, depth + 1)))
            else:
                elems.append(self.of(ix, a, depth + 1))
        return Seq(tuple(_union(elems)), runs)

    def returns(self, fn: Func, depth: int, call: tuple[FileIndex, Node] | None = None) -> list[Value]:
        """The values a function returns (every `return` of its own body); for `call` (its file, the call), a
        returned parameter is that call's argument: `apply_module(self.mlp)` is `self.mlp`, not the union of what
        every caller passes."""
        body = fn.func.body
        if depth > MAX_DEPTH:
            self._cut = True
            return []
        if body is None:
            return []
        ix = fn.ix
        self._asked(ix)
        ix.touched.append((fn.func.node.start_byte, fn.func.node.end_byte))
        bound = bind(call[0], call[1], fn.func) if call is not None and fn.partial is None else {}
        rets = [self._returned(ix, fn.func, r, bound, call[0] if call is not None else ix, depth)
                for r in callsites.returned(ix, fn.func)]
        found = _union(rets)
        if found and not all(rets):
            self.guessed |= GUESS_PARTIAL  # a factory with a branch that returns what is not known: a may-be value
        if not found:
            found = self._annotated_return(fn, depth)
        return found

    def _returned(self, ix: FileIndex, func: FuncInfo, r: Node, bound: dict[str, Node], cix: FileIndex,
                  depth: int) -> list[Value]:
        """One returned expression's values: a parameter the function never rebinds is the argument bound to it."""
        e = strip_parens(r)
        if bound and e.type == "identifier":
            name = ix.text(e)
            arg = bound.get(name)
            if arg is not None:
                _a, scope, is_param = ix.lookup(name, e)
                if is_param and scope is not None and scope.node.id == func.node.id:
                    return self.of(cix, arg, depth + 1)
        return self.of(ix, r, depth + 1)

    def _annotated_return(self, fn: Func, depth: int) -> list[Value]:
        """What `-> A` (`Optional[A]`, `A | B`) says a function returns when its returns say nothing (an abstract
        method, a wrapper of a library call): instances of the workspace's classes only (an annotation naming a
        library type, `-> torch.Tensor`, is not turned into a value)."""
        ann = fn.func.node.child_by_field_name("return_type")
        if ann is None:
            return []
        found = self._annotated_instances(fn.ix, ann, depth)
        if len(found) > 1:
            self.guessed |= GUESS_CALLERS  # either class, not necessarily the one returned here
        return found

    # ---- attributes --------------------------------------------------------------------------------------
    def attribute(self, ix: FileIndex, objs: list[Value], name: str, depth: int, obj: Node | None = None) -> list[Value]:
        self._asked(ix)
        out: list[list[Value]] = []
        if obj is not None and not objs and strip_parens(obj).type == "identifier":
            q = ix.imports.lookup(ix.text(strip_parens(obj)))
            if q is not None:  # `helpers.step`: a function of an imported workspace module
                out.append(self.symbol(q, name, depth + 1))
        for v in objs:
            if isinstance(v, Inst):
                out.append(self.member(v, name, depth))
            elif isinstance(v, Super):
                mro = self.mro(v.this.ix, v.this.cls) if v.this.site is not None else self.mro(v.ix, v.cls)
                after = [c for i, c in enumerate(mro) if any(c2[1] is v.cls for c2 in mro[:i + 1])][1:]
                for cix, cls in after:
                    m = cls.methods.get(name)
                    if m is not None:
                        out.append([Func(cix, m, v.this)])
                        break
            elif isinstance(v, ClassRef):  # `Cls.m` / `cls.m`: the first of its workspace bases that defines it
                for cix, cls in self.mro(v.ix, v.cls):
                    m = cls.methods.get(name)
                    if m is not None:
                        out.append([Func(cix, m)])
                        break
        return _union(out)

    def member(self, inst: Inst, name: str, depth: int) -> list[Value]:
        """`inst.name`: a method through the MRO (bound), else the values assigned to `self.name`."""
        for cix, cls in self.mro(inst.ix, inst.cls):
            m = cls.methods.get(name)
            if m is not None:
                return [Func(cix, m, inst)]
        assigned: list[list[Value]] = []
        for cix, cls in self.mro(inst.ix, inst.cls):
            for value, method in self.self_assignments(cix, cls, name):
                assigned.append(self._in_method(cix, value, method, inst, depth))
        return _union(assigned)

    def _in_method(self, ix: FileIndex, value: Node, method: FuncInfo, inst: Inst, depth: int) -> list[Value]:
        """The value of an expression of `method` for the instance `inst`: an `__init__` parameter takes the
        arguments of the instance's construction site."""
        v = strip_parens(value)
        if v.type == "identifier" and method.name == "__init__" and inst.site is not None and inst.site_ix is not None:
            name = ix.text(v)
            _a, _s, is_param = ix.lookup(name, v)
            if is_param:
                arg = _argument(inst.site_ix, inst.site, method, name)
                if arg is not None:
                    return self.of(inst.site_ix, arg, depth + 1)
        return self.of(ix, value, depth + 1)

    def self_assignments(self, ix: FileIndex, cls: ClassInfo, name: str) -> list[tuple[Node, FuncInfo]]:
        """Every `self.name = v`, `self.name.append(v)` / `.extend(v)` (v's elements) and `self.name[k] = v` in
        the methods of `cls`, as (v, method) (one table per class, callsites.py)."""
        self._asked(ix)
        ix.touch_mentions(cls, name)
        ix.src.need_word(name)
        return callsites.self_writes(ix, cls, name)

    # ---- containers --------------------------------------------------------------------------------------
    def elements(self, vals: list[Value]) -> list[Value]:
        """What iterating over or indexing the values gives."""
        out: list[list[Value]] = []
        for v in vals:
            if isinstance(v, Seq):
                out.append([e for e in v.elems if not isinstance(e, Seq)])
                out.extend(self.elements([e]) for e in v.elems if isinstance(e, Seq))
            elif isinstance(v, Inst):
                # `self.layers` assigned in pieces (append) shows as the pieces themselves
                out.append([v])
        return _union(out)

    # ---- parameters --------------------------------------------------------------------------------------
    def parameter(self, ix: FileIndex, fn: FuncInfo, name: str, depth: int) -> list[Value]:
        """A parameter: its annotation, else its default, else the arguments at the call sites of its function
        in every workspace file (plain functions; `__init__` through its class's constructions)."""
        self._asked(ix)
        if fn.node.type == "lambda":
            return []  # called only through the values it is passed as (bound by the caller's frame), never by name
        node = _param_node(ix, fn, name)
        if node is not None:
            ann = node.child_by_field_name("type")
            if ann is not None:
                vals: list[Value] = _union(self._annotated(ix, part, depth) for part in annotated_types(ix, ann))
                if vals:
                    if len(vals) > 1:
                        self.guessed |= GUESS_CALLERS  # Union[A, B]: either, not necessarily the one captured
                    return vals
            default = node.child_by_field_name("value")
            if default is not None and node.type in ("default_parameter", "typed_default_parameter"):
                dv = self.of(ix, default, depth + 1)
                if dv:
                    return dv
        return self.from_callers(ix, fn, name)

    def _annotated(self, ix: FileIndex, part: Node, depth: int) -> list[Value]:
        """The values one member of an annotation names: an instance of a workspace class, a library value, or
        a container (`List[Optimizer]`) of instances of workspace classes."""
        elems = container_elements(ix, part)
        if elems is None:
            return [Inst(v.ix, v.cls, None) if isinstance(v, ClassRef) else v for v in self.of(ix, part, depth + 1)]
        inner = _union(self._annotated_instances(ix, e, depth) for e in elems)
        return [Seq(tuple(inner))] if inner else []

    def _annotated_instances(self, ix: FileIndex, ann: Node, depth: int) -> list[Value]:
        """Instances of the workspace classes an annotation names (`A`, `Optional[A]`, `A | B`); a library type
        gives none."""
        return _union([Inst(v.ix, v.cls, None) for v in self.of(ix, part, depth + 1) if isinstance(v, ClassRef)]
                      for part in annotated_types(ix, ann))

    def from_callers(self, ix: FileIndex, fn: FuncInfo, name: str) -> list[Value]:
        """The union of the arguments bound to parameter `name` of `fn` at its call sites in the workspace (for
        `__init__`, its class's constructions), remembered per parameter: each argument is asked from the top
        (depth 0), so values flow through any number of parameter hops. A parameter whose answer reads itself
        through its callers (recursion, mutual hand-offs) gets nothing through that cycle; an answer that read
        another parameter still under way is not remembered (it is complete only once that one is)."""
        key = (id(ix), fn.node.id, name)
        hit = self._params.get(key)
        if hit is not None:
            self.guessed |= hit[1]
            return hit[0]
        pos = self._open.get(key)
        if pos is not None:
            self._low = min(self._low, pos)
            return []
        if self.carried is not None and ix is not self.pinned and self._words is None:
            return self._carried_from_callers(key, ix, fn, name)
        return self._from_callers(key, ix, fn, name)

    def _carried_from_callers(self, key: tuple[int, int, str], ix: FileIndex, fn: FuncInfo, name: str) -> list[Value]:
        """from_callers for a function of another file than the analysed one, carried across keystrokes: asked
        with no remembered answer (each one it uses is computed again inside it, so what it reads is seen), and
        carried when it read nothing of the analysed file, completed, and names only files indexed now."""
        carried = self.carried
        assert carried is not None
        c = carried.answers.get(key)
        if c is not None and c.ix is ix and self._indexed(c.files):
            self._params[key] = (c.found, c.guess)
            self.guessed |= c.guess
            if self.pinned is not None:
                self.pinned.watched.update(c.words)  # what it depends on in the analysed file, as when computed
            return c.found
        if key in carried.bound:
            return self._from_callers(key, ix, fn, name)  # read the analysed file before: asked as it always was
        pinned = self.pinned
        mark = self._pinned_mark()
        watched = frozenset(pinned.watched) if pinned is not None else frozenset()
        saved = self.memos()
        self.set_memos(None)
        self._words = set()
        outer = self.guessed
        self.guessed = 0
        try:
            found = self._from_callers(key, ix, fn, name)
            guess = self.guessed
        finally:
            complete = key in self._params
            words, self._words = self._words, None
            self.set_memos(saved)
            self.guessed = outer
        self.guessed |= guess
        if complete:
            self._params[key] = (found, guess)
            files = files_named(found)
            # free of the analysed file: nothing of it asked or recorded, bar the words its call sites are found by
            if self._pinned_mark() == mark and (pinned is None or (pinned.watched <= watched | words
                                                   and all(f is not pinned for f in files))):
                carried.answers[key] = Carried(ix, found, guess, frozenset(words), tuple(files))
            else:
                carried.bound.add(key)
        return found

    def _indexed(self, files: tuple[FileIndex, ...]) -> bool:
        return self.current is None or all(self.current(f.path) is f for f in files)

    def _from_callers(self, key: tuple[int, int, str], ix: FileIndex, fn: FuncInfo, name: str) -> list[Value]:
        me = self._open[key] = len(self._open)
        outer_cut, outer_low, outer_guess = self._cut, self._low, self.guessed
        self._low, self.guessed = NO_OPEN, 0
        found: list[Value] = []
        guess = 0
        try:
            out: list[list[Value]] = []
            for cix, call in self.call_sites(ix, fn):
                arg = _argument(cix, call, fn, name)
                out.append(self.of(cix, arg, 0) if arg is not None else [])
            found = _union(out)
            guess = self.guessed
            if len(found) > 1:
                guess |= GUESS_CALLERS  # callers pass different objects: not necessarily the one this capture gets
            if found and not all(out):
                guess |= GUESS_PARTIAL  # some callers pass what is not known: the known ones are a may-be
        finally:
            del self._open[key]
            low = self._low
            # a depth bound met inside is met whoever asks (the arguments are asked from the top): the answer
            # stands; only a cycle through an outer parameter under way leaves it incomplete
            self._cut = outer_cut
            self._low = min(outer_low, low) if low < me else outer_low
        self.guessed = outer_guess | guess
        if low >= me:
            self._params[key] = (found, guess)
        return found

    def parameter_kind(self, ix: FileIndex, fn: FuncInfo, name: str) -> Kind | None:
        """The kind of parameter `name` of `fn` from its annotation, default or every call site in the workspace
        (through any number of hops), when each value is a library object and their kinds agree (`generator`
        of `DropPath.__init__` given a `torch.Generator(...)` three constructors up); None otherwise."""
        key = (id(ix), fn.node.id, name)
        if key in self._kinds:
            return self._kinds[key]
        outer = self.guessed
        self.guessed = 0
        vals = self.parameter(ix, fn, name, 0)
        partial = self.guessed & GUESS_PARTIAL
        self.guessed = outer
        found: Kind | None = None
        if vals and not partial and all(isinstance(v, Lib) for v in vals):
            kinds = [v.ix.kind(v.node) for v in vals if isinstance(v, Lib)]
            k0 = kinds[0]
            if k0.cat not in ("unknown", "param", "other") and all(
                    (k.cat, k.device, k.is_bool) == (k0.cat, k0.device, k0.is_bool) for k in kinds):
                one = vals[0] if len(vals) == 1 and isinstance(vals[0], Lib) else None
                # one construction: its node, and its file when that is not this one (a rule reads its arguments)
                found = replace(k0, node=one.node if one is not None else None,
                                home=one.ix if one is not None and one.ix is not ix else None)
        self._kinds[key] = found
        return found

    def call_sites(self, ix: FileIndex, fn: FuncInfo) -> list[tuple[FileIndex, Node]]:
        """Calls of `fn` in the function's file and in the workspace files that import it: `fn(...)` /
        `mod.fn(...)`; for a method, `obj.fn(...)` where `obj` is an instance of its class (or of a subclass that
        inherits it); for `__init__`, the constructions `Cls(...)` of its class."""
        cls = ix.enclosing_class(fn.node) if fn.class_name is not None else None
        if fn.class_name is not None and cls is None:
            return []
        ctor = cls is not None and fn.name == "__init__"
        word = cls.name if ctor and cls is not None else fn.name
        ix.watched.add(word)
        words = (word, fn.name) if cls is None else (word, fn.name, cls.name)
        if self._words is not None:
            self._words.update(words)
        if self.pinned is not None and ix is not self.pinned:
            # the analysed file's edits that spell one of these may add a call site there: not local ones
            self.pinned.watched.update(words)
        files = [ix]
        if self.files_with is not None:
            # a method's other callers: files that use its class by name and spell the method (an instance passed
            # on through files that never name the class is not followed: each file searched is a file parsed)
            found = self.files_with(ix.path, fn.name, called=True) if cls is None else self.files_with(
                ix.path, cls.name, None if ctor else fn.name, called=True)
            files += [o for o in found if o is not ix]
        for f in files:
            self._asked(f)
        out: list[tuple[FileIndex, Node]] = []
        seen = 0
        for f in files:
            for call in callsites.calls_named(f, word):
                seen += 1
                if seen > MAX_CANDIDATES:
                    return out
                if cls is not None or f is not ix:
                    fnode = call.child_by_field_name("function")
                    # a method's receiver is often a local built a few steps before: asked a little deeper
                    vals = self.of(f, fnode, MAX_DEPTH - (4 if cls is not None else 1)) if fnode is not None else []
                    if ctor:
                        if not any(isinstance(v, ClassRef) and v.cls is cls for v in vals):
                            continue
                    elif not any(isinstance(v, Func) and v.func is fn for v in vals):
                        continue  # another function of that name
                out.append((f, call))
                if len(out) >= MAX_SITES:
                    return out
        return out


def _classmethod_of(ix: FileIndex, ident: Node) -> ClassInfo | None:
    """The class whose `@classmethod` takes `cls` where `ident` reads it (the innermost def, its first parameter)."""
    fn = ix.enclosing_function(ident)
    if fn is None or fn.class_name is None or not any(ix.text(d).strip() == "@classmethod" for d in fn.decorators):
        return None
    params = fn.node.child_by_field_name("parameters")
    first = params.named_children[0] if params is not None and params.named_children else None
    if first is None or first.type != "identifier" or ix.text(first) != "cls":
        return None
    return ix.enclosing_class(fn.node)


def _param_node(ix: FileIndex, fn: FuncInfo, name: str) -> Node | None:
    params = fn.node.child_by_field_name("parameters")
    if params is None:
        return None
    for p in params.named_children:
        n = p if p.type == "identifier" else p.child_by_field_name("name")
        if n is None and p.named_child_count:
            n = p.named_children[0]
        if n is not None and n.type == "identifier" and ix.text(n) == name:
            return p
    return None


def _argument(ix: FileIndex, call: Node, fn: FuncInfo, name: str) -> Node | None:
    """The argument of `call` (in `ix`) bound to parameter `name` of `fn` (args.bind)."""
    return bind(ix, call, fn).get(name)


def _returned(ident: Node) -> bool:
    """`ident` is (an element of) the value of a return statement."""
    p = ident.parent
    while p is not None and p.type in ("parenthesized_expression", "expression_list", "tuple"):
        p = p.parent
    return p is not None and p.type == "return_statement"
