"""Per-file index: functions, classes, scopes, and a light kind inference ("is this a CUDA tensor?", kinds.py).

The index is rebuilt on every parse (its starting nodes are found from keyword tokens, see `file_nodes`);
scopes are built lazily, only for the functions that capture regions reach.
"""

from __future__ import annotations

import itertools
import re
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar
from weakref import WeakSet

from tree_sitter import Node

from denpex.source.resolve import kinds as _kinds
from denpex.source.resolve.args import kwarg as kwarg
from denpex.source.resolve.args import positional as positional
from denpex.source.resolve.kinds import PARAM as PARAM
from denpex.source.resolve.kinds import UNKNOWN as UNKNOWN
from denpex.source.resolve.kinds import Kind as Kind
from denpex.source.resolve.kinds import ParamKinds as ParamKinds
from denpex.source.resolve.names import ImportMap, build_imports, dotted_of, qualname
from denpex.source.syntax.parse import ParsedSource, strip_parens, tokens

_V = TypeVar("_V")

_FUNCTION = frozenset({"function_definition"})
_CLASS = frozenset({"class_definition"})
_SCOPE_OWNERS = frozenset({"function_definition", "lambda", "module"})
_FUNCTION_SCOPES = frozenset({"function_definition", "lambda"})  # scopes with parameters


class _Defined(dict[str, _V]):
    """A name -> definition table of a lazily parsed file: every lookup asks for that name's definitions, so
    a definition the tree does not hold yet is parsed and the analysis re-run (see chunks.py)."""

    __slots__ = ("_need",)

    def __init__(self, src: ParsedSource) -> None:
        super().__init__()
        self._need = src.need_def

    def get(self, key: str, default: Any = None) -> Any:
        self._need(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            self._need(key)
        return super().__contains__(key)

    def __getitem__(self, key: str) -> _V:
        self._need(key)
        return super().__getitem__(key)


# statements whose blocks run in the scope around them: a def inside one at module level is a module function
_SAME_SCOPE = frozenset({"if_statement", "elif_clause", "else_clause", "try_statement", "except_clause",
                         "finally_clause", "with_statement", "block", "decorated_definition"})


def _module_level(node: Node) -> bool:
    """`node` (a statement holding a def's block) runs at module level: only conditional, try and with blocks
    lie between it and the module."""
    n: Node | None = node
    while n is not None and n.type in _SAME_SCOPE:
        n = n.parent
    return n is not None and n.type == "module"


def block_of(stmt: Node) -> Node:
    """The innermost block (or the module) that holds a statement."""
    n: Node | None = stmt.parent
    while n is not None and n.type not in ("block", "module"):
        n = n.parent
    return n if n is not None else stmt


def _child_is(parent: Node | None, field_name: str, node: Node) -> bool:
    if parent is None:
        return False
    c = parent.child_by_field_name(field_name)
    return c is not None and c.id == node.id


def file_nodes(src: ParsedSource) -> dict[str, list[Node]]:
    """The nodes the index and the region finder start from, by name (each list in document order):
    fn, cls, imp, from, with, dec (decorators), begin (`x.capture_begin(...)` calls), call (calls of
    `make_graphed_callables` / `compile`, plain or as a method), cfg_left (the attribute of an
    `... .cudagraphs = True` assignment).

    Found from their keyword or name tokens (a text search plus a tree lookup each) rather than a walk over
    every node of the file: the same nodes a query for those patterns returns, at a fraction of the cost."""
    out: dict[str, list[Node]] = {k: [] for k in ("fn", "cls", "imp", "from", "with", "dec", "begin", "call",
                                                  "cfg_left")}
    for kw, parent_type, name in (("def", "function_definition", "fn"), ("class", "class_definition", "cls"),
                                  ("with", "with_statement", "with"), ("@", "decorator", "dec")):
        lst = out[name]
        for tok in tokens(src, kw):
            p = tok.parent
            if p is not None and p.type == parent_type:
                lst.append(p)
    for tok in tokens(src, "import"):
        p = tok.parent
        if p is not None:
            if p.type == "import_statement":
                out["imp"].append(p)
            elif p.type == "import_from_statement":
                out["from"].append(p)
    calls: list[Node] = []
    for word in GRAPHED_CALLABLE_WORDS:
        calls.extend(calls_named(src, word))
    out["call"] = sorted(calls, key=lambda n: n.start_byte)
    for tok in tokens(src, "capture_begin", "identifier"):
        p = tok.parent
        if p is not None and p.type == "attribute" and _child_is(p, "attribute", tok) and _child_is(p.parent, "function", p):
            assert p.parent is not None
            if p.parent.type == "call":
                out["begin"].append(p.parent)
    for tok in tokens(src, "cudagraphs", "identifier"):
        p = tok.parent
        if p is not None and p.type == "attribute" and _child_is(p, "attribute", tok):
            a = p.parent
            if a is not None and a.type == "assignment" and _child_is(a, "left", p):
                right = a.child_by_field_name("right")
                if right is not None and right.type == "true":
                    out["cfg_left"].append(p)
    for name in ("fn", "cls", "with", "dec"):
        lst = out[name]
        if any(lst[i].start_byte < lst[i - 1].start_byte for i in range(1, len(lst))):
            lst.sort(key=lambda n: n.start_byte)
    return out


# the last names of the calls that can open a capture of their argument: graphed-callable APIs and torch.compile
GRAPHED_CALLABLE_WORDS = ("make_graphed_callables", "compile", "CudaGraphModule", "CUDAGraphed")


def calls_named(src: ParsedSource, word: str) -> list[Node]:
    """Calls of `word` or of `<expr>.word`, found from the name's tokens."""
    out: list[Node] = []
    for tok in tokens(src, word, "identifier"):
        p = tok.parent
        if p is not None and p.type == "call" and _child_is(p, "function", tok):
            out.append(p)
        elif p is not None and p.type == "attribute" and _child_is(p, "attribute", tok) and _child_is(p.parent, "function", p):
            assert p.parent is not None
            if p.parent.type == "call":
                out.append(p.parent)
    return out


@dataclass
class FuncInfo:
    name: str
    node: Node  # function_definition
    class_name: str | None
    decorators: list[Node]
    src: ParsedSource = field(repr=False, compare=False)
    _params: list[str] | None = field(default=None, repr=False, compare=False)

    @property
    def params(self) -> list[str]:
        """Parameter names (computed on first use: most functions of a file are never called from a capture)."""
        if self._params is None:
            self._params = _params(self.src, self.node)
        return self._params

    @property
    def body(self) -> Node | None:
        return self.node.child_by_field_name("body")


@dataclass
class ClassInfo:
    name: str
    node: Node
    bases: list[str]
    methods: dict[str, FuncInfo] = field(default_factory=dict)
    self_attrs: dict[str, tuple[Node, FuncInfo]] = field(default_factory=dict)


@dataclass
class Assign:
    start_byte: int
    value: Node | None  # None for parameters, loop targets, with-as targets
    stmt: Node
    # a target unpacked from a value that is not a literal tuple (`scores, labels = probs.max(-1)`) or a loop
    # target (`for row in t:`): that value; an element of a tensor (or of the tuple a tensor op returns) is one
    unpacked: Node | None = None


@dataclass
class Scope:
    node: Node  # function_definition or module
    assigns: dict[str, list[Assign]] = field(default_factory=dict)
    params: set[str] = field(default_factory=set)
    globals: set[str] = field(default_factory=set)
    parent: Scope | None = None
    _starts: dict[str, list[int]] = field(default_factory=dict, repr=False, compare=False)

    def assigned_before(self, name: str, at: int) -> int:
        """How many assignments of `name` start before byte `at` (assigns are in document order)."""
        starts = self._starts.get(name)
        if starts is None:
            starts = self._starts[name] = [a.start_byte for a in self.assigns.get(name, ())]
            if any(a > b for a, b in itertools.pairwise(starts)):  # not expected: the scope walk is in order
                starts.sort()
                self.assigns[name].sort(key=lambda a: a.start_byte)
        return bisect_left(starts, at)


def _params(src: ParsedSource, fn: Node) -> list[str]:
    out: list[str] = []
    params = fn.child_by_field_name("parameters")
    if params is None:
        return out
    for p in params.named_children:
        if p.type == "identifier":
            out.append(src.node_text(p))
        else:
            name = p.child_by_field_name("name")
            if name is None and p.named_child_count:
                name = p.named_children[0]
            if name is not None and name.type == "identifier":
                out.append(src.node_text(name))
    return out


class Reads(list[_V]):
    """What an analysis read of one file (FileIndex.touched, attr_deps), kept only while `on`: only the file a
    Document analyses has its reads used (engine/analyse.py turns them on for it), and every other file's lists grew
    by each analysis that passed through it, for as long as the server ran (Megatron-LM: 327k ranges after the first
    analysis of moe_utils.py, and 890 more per keystroke)."""

    on = False

    def append(self, item: _V, /) -> None:
        if self.on:
            super().append(item)

    def extend(self, items: Iterable[_V], /) -> None:
        if self.on:
            super().extend(items)


class FileIndex:
    def __init__(self, path: str, src: ParsedSource) -> None:
        self.path = path
        self.src = src
        self.caps: dict[str, list[Node]] = file_nodes(src)
        self.imports: ImportMap = build_imports(src, self.caps, path)
        self.functions: list[FuncInfo] = []
        self.by_node: dict[int, FuncInfo] = {}
        self._lambdas: dict[int, FuncInfo] = {}  # lambda node id -> its function (lambda_info; not in by_node)
        self._nested: dict[int, dict[str, list[FuncInfo]]] = {}  # function node id -> its own defs (local_defs)
        self.epoch = src.epoch  # the tree this index was built from (a lazily parsed file's tree can grow)
        self.module_funcs: dict[str, FuncInfo] = _Defined(src) if src.lazy is not None else {}
        self.classes: dict[str, ClassInfo] = _Defined(src) if src.lazy is not None else {}
        self._scopes: dict[int, Scope] = {}
        self._lookups: dict[tuple[str, int], _Looked] = {}  # (name, node id) -> lookup's answer and its reads
        # byte ranges whose contents the last analysis consulted (for incremental reuse of findings)
        self.touched: Reads[tuple[int, int]] = Reads()
        # (a, b, word): an answer read what the statements of [a, b) write to `word`: `self.name`'s writes in a class
        # (word `name`), or the bindings of a function's local `name` that a lookup saw (word `=name`). An edit inside
        # [a, b) changes it only in a statement that may write that (kept.Pending.written). Where a reuse does not
        # look at these (engine/units.py does), they count as the whole range (`touched_classes`)
        self.attr_deps: Reads[tuple[int, int, str]] = Reads()
        # names whose every mention in the file the last analysis consulted (a module-level graph's replays):
        # an edit anywhere that spells one of them is not local
        self.watched: set[str] = set()
        caps = self.caps
        for cls in caps.get("cls", []):
            name_node = cls.child_by_field_name("name")
            if name_node is None:
                continue
            bases: list[str] = []
            sup = cls.child_by_field_name("superclasses")
            if sup is not None:
                for b in sup.named_children:
                    if b.type == "subscript":  # a generic base, `AttentionImpl[Metadata]`: the class itself
                        b = b.child_by_field_name("value") or b
                    d = dotted_of(src, b)
                    if d:
                        bases.append(self.imports.resolve_dotted(d))
            self.classes.setdefault(src.node_text(name_node), ClassInfo(src.node_text(name_node), cls, bases))
        # module-level defs inside if/try/with blocks, by name, in document order (values.py picks the one of the
        # branch a read sits in: `if HAVE_TE: def f(): ... g()` calls that branch's `g`)
        self.branch_funcs: dict[str, list[FuncInfo]] = {}
        for fn in caps.get("fn", []):
            name_node = fn.child_by_field_name("name")
            if name_node is None:
                continue
            parent = fn.parent
            decorators: list[Node] = []
            if parent is not None and parent.type == "decorated_definition":
                decorators = [d for d in parent.named_children if d.type == "decorator"]
                parent = parent.parent
            class_name = None
            container = parent.parent if parent is not None and parent.type == "block" else parent
            if container is not None and container.type == "class_definition":
                cn = container.child_by_field_name("name")
                class_name = src.node_text(cn) if cn is not None else None
            info = FuncInfo(src.node_text(name_node), fn, class_name, decorators, src)
            self.functions.append(info)
            self.by_node[fn.id] = info
            if class_name is not None:
                cls_info = self.classes.get(class_name)
                if cls_info is not None:
                    cls_info.methods.setdefault(info.name, info)
            elif container is not None and container.type == "module":
                self.module_funcs[info.name] = info
            elif container is not None and _module_level(container):
                self.branch_funcs.setdefault(info.name, []).append(info)
        for name, infos in self.branch_funcs.items():
            # `if HAVE_TE: def f(...) else: def f(...)`, `try: ... except ImportError: def f(...)`: the first
            # branch's, where no plain module-level def binds the name (dict's own membership: no lazy parse)
            if not dict.__contains__(self.module_funcs, name):
                self.module_funcs[name] = infos[0]
        self._self_attrs_done = False
        self._has: dict[bytes, bool] = {}
        self.word_offsets: dict[str, list[int]] = {}  # whole-word occurrences of a name (hazards._identifiers)
        self.word_index: dict[bytes, list[int]] | None = None  # every ASCII word's occurrences, when built
        # per-scope tables the detectors build once per file (pure syntax, no scopes built), by (table, owner id)
        self.scope_tables: dict[tuple[str, int], dict[str, list[Node]]] = {}
        self._spaceless: str | None = None

    def module_func(self, name: str, at: Node | None = None) -> FuncInfo | None:
        """The module function `name`; read at `at` from inside one of the branches that define it (`if HAVE_TE:` /
        `else:`), that branch's def."""
        info = self.module_funcs.get(name)
        branch = self.branch_funcs.get(name)
        if at is not None and branch is not None and len(branch) > 1 and info is branch[0]:
            for f in branch:
                block = block_of(f.node)
                if block.start_byte <= at.start_byte < block.end_byte:
                    return f
        return info

    def has(self, word: bytes) -> bool:
        """`word in` the file's bytes, remembered (detectors ask the same questions for every region)."""
        found = self._has.get(word)
        if found is None:
            found = self._has[word] = word in self.src.data
        return found

    @property
    def spaceless_text(self) -> str:
        """The file's text without spaces, computed once."""
        if self._spaceless is None:
            self._spaceless = self.src.text.replace(" ", "")
        return self._spaceless

    # ---- names -------------------------------------------------------------------------------------------
    def qualname(self, node: Node) -> str | None:
        return qualname(self.src, self.imports, node)

    def text(self, node: Node) -> str:
        return self.src.node_text(node)

    def enclosing_function(self, node: Node) -> FuncInfo | None:
        p = self.src.nav.enclosing(node, _FUNCTION)
        return self.by_node.get(p.id) if p is not None else None

    def local_defs(self, name: str, at: Node) -> list[FuncInfo]:
        """The defs of `name` in the functions around `at`, innermost first: at a function's top level or in its
        if/try/with blocks (`if arch == "mixer": def make(): ...` / `else: def make(): ...`). A def in a block that
        holds `at` is the one; otherwise every def of the nearest function that has one (either may run)."""
        nav = self.src.nav
        p = nav.enclosing(at, _FUNCTION)
        while p is not None:
            found = self._nested_defs(p).get(name)
            if found:
                own = [f for f in found if block_of(f.node).start_byte <= at.start_byte < block_of(f.node).end_byte]
                return own[-1:] if own else list(found)
            p = nav.enclosing(p, _FUNCTION)
        return []

    def _nested_defs(self, fn: Node) -> dict[str, list[FuncInfo]]:
        """The defs of a function's own body (its if/try/with blocks included), by name in document order; read
        once per function (every unresolved name inside it asks)."""
        got = self._nested.get(fn.id)
        if got is None:
            got = self._nested[fn.id] = {}
            body = fn.child_by_field_name("body")
            stack = list(reversed(body.named_children)) if body is not None else []
            while stack:
                c = stack.pop()
                fnode = c.child_by_field_name("definition") if c.type == "decorated_definition" else c
                if fnode is not None and fnode.type == "function_definition":
                    info = self.by_node.get(fnode.id)
                    if info is not None:
                        got.setdefault(info.name, []).append(info)
                elif c.type in _SAME_SCOPE:
                    stack.extend(reversed(c.named_children))
        return got

    def lambda_info(self, node: Node) -> FuncInfo:
        """A lambda expression as a function (its body is one expression): what a caller runs when the lambda is
        passed in as a callable (`_graph_time(lambda: fn(x))` -> `work()`). Made on first use, then kept."""
        info = self._lambdas.get(node.id)
        if info is None:
            info = self._lambdas[node.id] = FuncInfo("<lambda>", node, None, [], self.src)
        return info

    def enclosing_class(self, node: Node) -> ClassInfo | None:
        p = self.src.nav.enclosing(node, _CLASS)
        if p is None:
            return None
        n = p.child_by_field_name("name")
        return self.classes.get(self.text(n)) if n is not None else None

    def touch_mentions(self, cls: ClassInfo, name: str) -> None:
        """Record what an answer about `self.name` in `cls` depends on: the class header, and the statements of its
        methods that spell `name` (`attr_deps`). An edit elsewhere in the class writes no `self.name` without
        spelling the name (watched), and the methods themselves change only with edits Document keeps nothing
        across."""
        self.touched.append(class_header(cls))
        self.watched.add(name)
        self.attr_deps.append((cls.node.start_byte, cls.node.end_byte, name))

    def record(self, on: bool) -> None:
        """Keep what analyses read of this file from now on (or stop, dropping what was kept)."""
        for reads in (self.touched, self.attr_deps):
            reads.clear()
            reads.on = on

    def touched_classes(self, start: int = 0) -> list[tuple[int, int]]:
        """`attr_deps`' entries from `start` on as the ranges of their classes."""
        return [(a, b) for a, b, _name in self.attr_deps[start:]]

    def class_self_attr(self, cls: ClassInfo, name: str) -> tuple[Node, FuncInfo] | None:
        """The first `self.name = v` of the class's methods, as (v, method)."""
        self.touch_mentions(cls, name)
        return self._class_self_attrs(cls).get(name)

    def _class_self_attrs(self, cls: ClassInfo) -> dict[str, tuple[Node, FuncInfo]]:
        if not cls.self_attrs:
            for m in cls.methods.values():
                body = m.body
                if body is None:
                    continue
                for n in scope_binding_nodes(body, self.src.data):
                    if n.type == "assignment":
                        left = n.child_by_field_name("left")
                        right = n.child_by_field_name("right")
                        if left is not None and right is not None and left.type == "attribute":
                            d = dotted_of(self.src, left)
                            if d and d.startswith("self.") and d.count(".") == 1:
                                cls.self_attrs.setdefault(d[5:], (right, m))
        return cls.self_attrs

    # ---- scopes ------------------------------------------------------------------------------------------
    def scope_of(self, node: Node) -> Scope:
        """The scope (function or module) whose body contains `node`."""
        p = self.src.nav.enclosing(node, _SCOPE_OWNERS)
        return self.scope(p if p is not None else self.src.root)

    def scope(self, owner: Node) -> Scope:
        cached = self._scopes.get(owner.id)
        if cached is not None:
            if owner.type in _FUNCTION_SCOPES:  # every use is a dependency of the analysis using it
                self.touched.append((owner.start_byte, owner.end_byte))
            return cached
        scope = Scope(owner)
        if owner.type in _FUNCTION_SCOPES:
            self.touched.append((owner.start_byte, owner.end_byte))
            info = self.by_node.get(owner.id) if owner.type == "function_definition" else self.lambda_info(owner)
            if info is not None:
                scope.params = set(info.params)
            scope.parent = self.scope_of(owner)
            body = owner.child_by_field_name("body")
        else:
            body = owner
        if body is not None:
            for n in scope_binding_nodes(body, self.src.data):
                t = n.type
                if t == "assignment":
                    left = n.child_by_field_name("left")
                    right = n.child_by_field_name("right")
                    if left is not None:
                        self._bind_targets(scope, left, right, n)
                elif t == "augmented_assignment":
                    left = n.child_by_field_name("left")
                    if left is not None and left.type == "identifier":
                        scope.assigns.setdefault(self.text(left), []).append(Assign(n.start_byte, n, n))
                elif t in ("for_statement", "for_in_clause"):
                    left = n.child_by_field_name("left")
                    if left is not None:
                        self._bind_targets(scope, left, None, n, n.child_by_field_name("right"))
                elif t == "as_pattern_target" or t == "with_item":
                    pass
                elif t == "global_statement" or t == "nonlocal_statement":
                    for c in n.named_children:
                        if c.type == "identifier":
                            scope.globals.add(self.text(c))
        self._scopes[owner.id] = scope
        return scope

    def _bind_targets(self, scope: Scope, left: Node, right: Node | None, stmt: Node,
                      unpacked: Node | None = None) -> None:
        left = strip_parens(left)
        if left.type == "identifier":
            scope.assigns.setdefault(self.text(left), []).append(Assign(stmt.start_byte, right, stmt, unpacked))
        elif left.type in ("pattern_list", "tuple_pattern", "list_pattern", "tuple", "list"):
            elems = [c for c in left.named_children]
            rvals: list[Node] | None = None
            if right is not None:
                r = strip_parens(right)
                if r.type in ("tuple", "expression_list", "list") and r.named_child_count == len(elems):
                    rvals = list(r.named_children)
            for i, e in enumerate(elems):
                if rvals:
                    self._bind_targets(scope, e, rvals[i], stmt)
                else:
                    self._bind_targets(scope, e, None, stmt, unpacked if right is None else right)

    def lookup(self, name: str, at: Node) -> tuple[Assign | None, Scope | None, bool]:
        """The assignment of `name` visible at `at`: (assign, scope, is_param).

        What the answer read is recorded narrowly, not as the whole functions whose scopes it passed (scope()'s
        touch): the statement holding `at`, the bindings of `name` in each function scope passed (`=name` in
        attr_deps), and the statement or parameter list found. A capture walk that read one expression of a
        function (a value assigned there) then does not depend on edits of the function's other statements.

        Answers are remembered with what they read, and a remembered answer records its reads again: the same
        names are looked up at the same nodes many times per analysis (kinds, rules), and an analysis that
        records its reads gets the same ones from a remembered answer as from a new one."""
        key = (name, at.id)
        hit = self._lookups.get(key)
        if hit is None:
            hit = self._lookup_reads(name, at)
            if self.src.epoch == self.epoch and _LOOKUPS.remember(self):  # (a grown lazy tree: nodes are new)
                self._lookups[key] = hit
        found, reads, deps = hit
        if self.touched.on:
            for r in reads:
                _append_once(self.touched, r)
        if self.attr_deps.on:
            for d in deps:
                _append_once(self.attr_deps, d)
        return found

    def _lookup_reads(self, name: str, at: Node) -> _Looked:
        touched, attr_deps = self.touched, self.attr_deps
        saved = touched.on, attr_deps.on
        touched.on = attr_deps.on = False  # what scope() records of the functions passed is not this answer's
        try:
            scope: Scope | None = self.scope_of(at)
        finally:
            touched.on, attr_deps.on = saved
        deps: list[tuple[int, int, str]] = []
        found = self._lookup(name, at, scope, deps)
        if scope is None or scope.node.type not in _FUNCTION_SCOPES:
            return found, (), tuple(deps)  # a module-level name: no function read (edits are in functions)
        stmt = self.src.nav.statement_of(at)
        reads = [(stmt.start_byte, stmt.end_byte)]
        if found[1] is not None:
            owner = found[1].node
            if found[0] is not None:
                reads.append((found[0].stmt.start_byte, found[0].stmt.end_byte))
            elif found[2] and owner.type == "function_definition":
                params = owner.child_by_field_name("parameters")
                if params is not None:
                    reads.append((params.start_byte, params.end_byte))
        return found, tuple(reads), tuple(deps)

    def _lookup(self, name: str, at: Node, scope: Scope | None, deps: list[tuple[int, int, str]],
                ) -> tuple[Assign | None, Scope | None, bool]:
        first = True
        while scope is not None:
            if scope.node.type in _FUNCTION_SCOPES:
                deps.append((scope.node.start_byte, scope.node.end_byte, "=" + name))
            if name in scope.params and name not in scope.assigns:
                return None, scope, True
            assigns = scope.assigns.get(name)
            if assigns:
                if first:
                    i = scope.assigned_before(name, at.start_byte)
                    return (assigns[i - 1] if i else assigns[0]), scope, False
                if len(assigns) == 1:
                    return assigns[-1], scope, False
                i = scope.assigned_before(name, at.start_byte)
                return (assigns[i - 1] if i else assigns[-1]), scope, False
            if name in scope.params:
                return None, scope, True
            scope = scope.parent
            first = False
        return None, None, False

    # ---- kinds (kinds.py) ---------------------------------------------------------------------------------
    def kind(self, node: Node, depth: int = 0, params: ParamKinds | None = None) -> Kind:
        """What `node` is (kinds.kind)."""
        return _kinds.kind(self, node, depth, params)


_Looked = tuple[tuple["Assign | None", "Scope | None", bool], tuple[tuple[int, int], ...], tuple[tuple[int, int, str], ...]]


class _Remembered:
    """Bounds the remembered lookups of all indexes together (a whole-tree scan keeps every file's index): past
    `MAX` answers, every index forgets its own and remembering starts again."""

    MAX = 20_000

    def __init__(self) -> None:
        self.count = 0
        self.holders: WeakSet[FileIndex] = WeakSet()

    def remember(self, ix: FileIndex) -> bool:
        if self.count >= self.MAX:
            for held in list(self.holders):
                held._lookups.clear()
            self.holders.clear()
            self.count = 0
        self.count += 1
        self.holders.add(ix)
        return True


_LOOKUPS = _Remembered()


def _append_once(reads: list[_V], item: _V) -> None:
    """Record `item` as read, once when read again at once (the lists are carried across every edit)."""
    if not reads or reads[-1] != item:
        reads.append(item)


_SCOPE_TYPES = frozenset({"assignment", "augmented_assignment", "for_statement", "for_in_clause", "global_statement",
                          "nonlocal_statement"})
_SCOPE_SKIP = frozenset({"function_definition", "class_definition", "lambda", "decorated_definition", "string", "comment",
                         "integer", "float", "identifier"})
# every node of _SCOPE_TYPES spells one of these (an annotation-only assignment `x: int` has its colon)
_MAY_BIND = re.compile(rb"=|for|global|nonlocal|:")


def scope_binding_nodes(body: Node, data: bytes) -> list[Node]:
    """The binding nodes of a scope's body (assignments, augmented assignments, for loops and comprehension
    clauses, global/nonlocal) in document order, not descending into nested functions, classes or lambdas,
    nor into subtrees whose text cannot hold a binding."""
    out: list[Node] = []
    stack = [body]
    search = _MAY_BIND.search
    while stack:
        n = stack.pop()
        if n.type in _SCOPE_TYPES:
            out.append(n)
        for c in reversed(n.named_children):
            if c.type in _SCOPE_SKIP or search(data, c.start_byte, c.end_byte) is None:
                continue
            stack.append(c)
    return out


def class_header(cls: ClassInfo) -> tuple[int, int]:
    """The bytes of a class statement before its body (name, bases, keywords)."""
    body = cls.node.child_by_field_name("body")
    return (cls.node.start_byte, body.start_byte if body is not None else cls.node.end_byte)


def reaching_bindings(scope: Scope, name: str, assign: Assign, read: Node, limit: int) -> list[Assign]:
    """The bindings of `name` in `scope` that may reach `read`, `assign` (the nearest one before it) first: going
    back from it, each binding inside a branch the read is not in (an if/elif/else arm, a loop or try body) is
    joined by the ones before it, up to one whose block holds the read too (the branch-merged union), at most
    `limit` + 1 of them."""
    assigns = scope.assigns.get(name, [])
    try:
        i = next(k for k, a in enumerate(assigns) if a is assign)
    except StopIteration:
        return [assign]
    if assign.stmt.start_byte > read.start_byte:
        return [assign]  # read before any binding (a loop's back edge): the one lookup chose
    out: list[Assign] = []
    for a in reversed(assigns[:i + 1]):
        if a.stmt.start_byte <= read.start_byte < a.stmt.end_byte:
            continue  # the statement the read sits in (`x = f(x)`): its own binding comes after the read
        out.append(a)
        if holds(block_of(a.stmt), read) or len(out) > limit:
            break
    return out or [assign]


def holds(outer: Node, inner: Node) -> bool:
    """`inner` starts inside `outer`."""
    return outer.start_byte <= inner.start_byte < outer.end_byte


def decorator_target(ix: FileIndex, decorator: Node) -> str | None:
    """The qualified name a decorator names or calls (`@lru_cache(maxsize=8)`: functools.lru_cache), or None."""
    e = decorator.named_children[0] if decorator.named_children else None
    if e is not None and e.type == "call":
        e = e.child_by_field_name("function")
    return ix.qualname(e) if e is not None else None
