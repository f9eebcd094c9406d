"""Per-file index: functions, classes, scopes and a light kind inference ("is this a CUDA tensor?").

The index is rebuilt on every parse (its starting nodes are found from keyword tokens, see `file_nodes`);
scopes are built lazily, only for the functions that capture regions reach.
"""

from __future__ import annotations

import itertools
import re
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from tree_sitter import Node

from denpex.source.resolve.names import ImportMap, build_imports, dotted_of, qualname
from denpex.source.syntax.parse import ParsedSource, own_nodes, strip_parens, tokens

_V = TypeVar("_V")

_FUNCTION = frozenset({"function_definition"})
_CLASS = frozenset({"class_definition"})
_SCOPE_OWNERS = frozenset({"function_definition", "module"})


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


TENSOR_FACTORIES = frozenset(
    ["randn", "rand", "randint", "randperm", "zeros", "ones", "empty", "full", "tensor", "as_tensor", "arange", "linspace", "logspace", "eye", "cat", "concat", "stack", "where", "from_numpy", "normal", "bernoulli", "multinomial", "masked_fill", "index_select", "gather", "matmul", "mm", "bmm", "addmm", "einsum", "sin", "cos", "exp", "log", "sqrt", "abs", "sum", "mean", "max", "min", "softmax", "sigmoid", "tanh", "relu", "clamp", "flatten", "reshape", "zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like", "randint_like", "nonzero_static", "lerp", "addcmul", "addcdiv", "linear"]
)
SHAPE_FACTORIES = frozenset(["randn", "rand", "zeros", "ones", "empty"])
TENSOR_METHODS = frozenset(
    ["sum", "mean", "max", "min", "abs", "norm", "any", "all", "float", "half", "double", "int", "long", "bool", "clone", "detach", "contiguous", "view", "reshape", "flatten", "squeeze", "unsqueeze", "exp", "log", "sqrt", "pow", "softmax", "sigmoid", "relu", "tanh", "argmax", "argmin", "std", "var", "prod", "cumsum", "t", "transpose", "permute", "expand", "repeat", "gt", "lt", "ge", "le", "eq", "ne", "isnan", "isinf", "isfinite", "logical_and", "logical_or", "logical_not", "masked_fill", "where", "add", "sub", "mul", "div", "neg", "matmul", "mm", "bmm", "square", "clamp", "round"]
)
BOOL_METHODS = frozenset(["gt", "lt", "ge", "le", "eq", "ne", "isnan", "isinf", "isfinite", "logical_and", "logical_or", "logical_not", "any", "all", "bool"])
CUBLAS_MODULES = frozenset(
    ["Linear", "Bilinear", "LazyLinear", "MultiheadAttention", "Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer", "TransformerDecoderLayer", "LSTM", "GRU", "RNN"]
)
CUDNN_MODULES = frozenset(
    ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "LazyConv1d", "LazyConv2d", "LazyConv3d", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LSTM", "GRU", "RNN"]
)


@dataclass(frozen=True)
class Kind:
    cat: str  # tensor scalar module stream event generator graph optimizer scaler dataloader scheduler
    #           compiled str bool none other unknown param
    device: str | None = None  # cuda cpu pinned
    is_bool: bool = False
    lib: frozenset[str] = frozenset()
    shape: tuple[int, ...] | None = None
    node: Node | None = field(default=None, compare=False)  # the constructing call, when useful
    user_class: str | None = None
    home: FileIndex | None = field(default=None, compare=False)  # the file of `node` when it is another file

    @property
    def tensor(self) -> bool:
        return self.cat == "tensor"


UNKNOWN = Kind("unknown")
PARAM = Kind("param")
# the kind of a parameter (its name, the identifier read) where a caller's binding is known; None: not known
ParamKinds = Callable[[str, Node], "Kind | None"]


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


class FileIndex:
    def __init__(self, path: str, src: ParsedSource) -> None:
        self.path = path
        self.src = src
        self.caps: dict[str, list[Node]] = file_nodes(src)
        self.imports: ImportMap = build_imports(src, self.caps)
        self.functions: list[FuncInfo] = []
        self.by_node: dict[int, FuncInfo] = {}
        self.epoch = src.epoch  # the tree this index was built from (a lazily parsed file's tree can grow)
        self.module_funcs: dict[str, FuncInfo] = _Defined(src) if src.lazy is not None else {}
        self.classes: dict[str, ClassInfo] = _Defined(src) if src.lazy is not None else {}
        self._scopes: dict[int, Scope] = {}
        # byte ranges whose contents the last analysis consulted (for incremental reuse of findings)
        self.touched: list[tuple[int, int]] = []
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
        self._self_attrs_done = False
        self._has: dict[bytes, bool] = {}
        self.word_offsets: dict[str, list[int]] = {}  # whole-word occurrences of a name (hazards._identifiers)
        self.word_index: dict[bytes, list[int]] | None = None  # every ASCII word's occurrences, when built
        # per-scope tables the detectors build once per file (pure syntax, no scopes built), by (table, owner id)
        self.scope_tables: dict[tuple[str, int], dict[str, list[Node]]] = {}
        self._spaceless: str | None = None

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

    def enclosing_class(self, node: Node) -> ClassInfo | None:
        p = self.src.nav.enclosing(node, _CLASS)
        if p is None:
            return None
        n = p.child_by_field_name("name")
        return self.classes.get(self.text(n)) if n is not None else None

    def class_self_attrs(self, cls: ClassInfo) -> dict[str, tuple[Node, FuncInfo]]:
        self.touched.append((cls.node.start_byte, cls.node.end_byte))
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
            if owner.type == "function_definition":  # every use is a dependency of the analysis using it
                self.touched.append((owner.start_byte, owner.end_byte))
            return cached
        scope = Scope(owner)
        if owner.type == "function_definition":
            self.touched.append((owner.start_byte, owner.end_byte))
            info = self.by_node.get(owner.id)
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
        """The assignment of `name` visible at `at`: (assign, scope, is_param)."""
        scope: Scope | None = self.scope_of(at)
        first = True
        while scope is not None:
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

    # ---- kinds -------------------------------------------------------------------------------------------
    def kind(self, node: Node, depth: int = 0, params: ParamKinds | None = None) -> Kind:
        """What `node` is. `params` gives the kind of a parameter of the function that holds the name where a
        caller's binding is known (the walker's frames): `keep = scores > t` is a tensor mask when the caller
        passed a tensor for `scores`, through any locals, operators and subscripts in between."""
        if depth > 8:
            return UNKNOWN
        node = strip_parens(node)
        t = node.type
        if t == "identifier":
            name = self.text(node)
            assign, _scope, is_param = self.lookup(name, node)
            if is_param:
                if params is not None:
                    pk = params(name, node)
                    if pk is not None:
                        return pk
                return PARAM
            if assign is not None and assign.value is None and assign.unpacked is not None:
                return self._element_kind(assign.unpacked, depth, params)
            if assign is None or assign.value is None:
                return UNKNOWN
            if assign.stmt.type == "augmented_assignment":
                return UNKNOWN
            return self.kind(assign.value, depth + 1, params)
        if t in ("integer", "float"):
            return Kind("scalar")
        if t in ("string", "concatenated_string"):
            return Kind("str")
        if t in ("true", "false"):
            return Kind("bool")
        if t == "none":
            return Kind("none")
        if t in ("list", "tuple", "dictionary", "set", "list_comprehension", "dictionary_comprehension"):
            return Kind("other")
        if t == "unary_operator":
            arg = node.child_by_field_name("argument")
            return self.kind(arg, depth + 1, params) if arg is not None else UNKNOWN
        if t == "not_operator":
            return Kind("bool")
        if t == "binary_operator":
            lk = self.kind(node.child_by_field_name("left") or node, depth + 1, params)
            rk = self.kind(node.child_by_field_name("right") or node, depth + 1, params)
            op = node.child_by_field_name("operator")
            if lk.tensor or rk.tensor:
                dev = "cuda" if "cuda" in (lk.device, rk.device) else (lk.device or rk.device)
                return Kind("tensor", dev)
            if lk.cat == "scalar" and rk.cat == "scalar":
                return Kind("scalar")
            if op is not None and self.text(op) == "@":
                return Kind("tensor")
            return UNKNOWN
        if t == "comparison_operator":
            if any(c.type in ("is", "is not", "in", "not in") for c in node.children):
                return Kind("bool")  # identity and membership give a Python bool, even between tensors
            for c in node.named_children:
                k = self.kind(c, depth + 1, params)
                if k.tensor:
                    return Kind("tensor", k.device, is_bool=True)
            return Kind("bool")
        if t == "boolean_operator":
            return Kind("bool")
        if t == "conditional_expression":
            return self.kind(node.named_children[0], depth + 1, params) if node.named_child_count else UNKNOWN
        if t == "subscript":
            v = node.child_by_field_name("value")
            if v is not None:
                k = self.kind(v, depth + 1, params)
                if k.tensor:
                    return Kind("tensor", k.device)
            return UNKNOWN
        if t == "attribute":
            obj = node.child_by_field_name("object")
            attr = node.child_by_field_name("attribute")
            if obj is not None and attr is not None:
                a = self.text(attr)
                if obj.type == "identifier" and self.text(obj) == "self":
                    cls = self.enclosing_class(node)
                    if cls is not None:
                        entry = self.class_self_attrs(cls).get(a)
                        if entry is not None:
                            return self.kind(entry[0], depth + 1, params)
                    return UNKNOWN
                ok = self.kind(obj, depth + 1, params)
                if ok.tensor and a in ("T", "mT", "data", "grad", "real", "imag"):
                    return Kind("tensor", ok.device)
                if ok.tensor and a in ("shape", "device", "dtype"):
                    return Kind("other")
            return UNKNOWN
        if t == "call":
            return self._call_kind(node, depth, params)
        return UNKNOWN

    def _element_kind(self, whole: Node, depth: int, params: ParamKinds | None) -> Kind:
        """An element of `whole` unpacked or iterated: a tensor for a tensor's rows and for the tuples of torch's
        own ops (`values, idx = x.max(-1)`, `a, b = t.chunk(2)`). A module's or a user function's result may be
        a tuple of anything (`logits, n_tokens = model(x)`): unknown."""
        whole = strip_parens(whole)
        if whole.type == "call":
            func = whole.child_by_field_name("function")
            if func is None:
                return UNKNOWN
            q = self.qualname(func)
            torch_op = q is not None and q.startswith("torch.") and not q.startswith("torch.nn.")
            recv = func.child_by_field_name("object") if func.type == "attribute" else None
            if not torch_op and not (recv is not None and self.kind(recv, depth + 1, params).tensor):
                return UNKNOWN
        k = self.kind(whole, depth + 1, params)
        return Kind("tensor", k.device, is_bool=k.is_bool) if k.tensor else UNKNOWN

    def _return_kind(self, fn: FuncInfo, call: Node, depth: int, params: ParamKinds | None) -> Kind:
        """What a call of this file's function `fn` returns: the kind its return statements agree on, with its
        parameters taken from the call's arguments (`z = standardize(err, mean, std)` is a tensor when `err`
        is one). Returns that disagree, or one not known, give unknown."""
        body = fn.body
        if body is None or depth > 6:
            return UNKNOWN
        bound = _call_arguments(self, call, fn.params)

        def callee_params(name: str, node: Node) -> Kind | None:
            holder = self.enclosing_function(node)
            arg = bound.get(name) if holder is not None and holder.node.id == fn.node.id else None
            if arg is None:
                return None
            k = self.kind(arg, depth + 1, params)
            return None if k.cat in ("unknown", "param") else k

        kinds: list[Kind] = []
        for n in own_nodes(body):
            if n.type == "return_statement":
                if not n.named_child_count:
                    return UNKNOWN
                kinds.append(self.kind(n.named_children[0], depth + 1, callee_params))
        if not kinds or any(k.cat != kinds[0].cat for k in kinds) or kinds[0].cat not in ("tensor", "scalar"):
            return UNKNOWN
        return Kind(kinds[0].cat, kinds[0].device, is_bool=all(k.is_bool for k in kinds))

    def _call_kind(self, node: Node, depth: int, params: ParamKinds | None = None) -> Kind:
        func = node.child_by_field_name("function")
        args = node.child_by_field_name("arguments")
        if func is None:
            return UNKNOWN
        q = self.qualname(func)
        if q is not None:
            last = q.rsplit(".", 1)[-1]
            if q.startswith("torch.") or q == "torch":
                return self._torch_call_kind(q, last, node, args, depth, params)
            if q in self.classes or (q.split(".")[-1] in self.classes and "." not in q):
                return Kind("module", "cuda", user_class=q)
            if q.endswith("DataLoader"):
                return Kind("dataloader", node=node)
            if func.type == "identifier" and "." not in q and q in self.module_funcs:
                assign, _scope, is_param = self.lookup(q, func)
                if assign is None and not is_param:  # the module's function, not a local of that name
                    return self._return_kind(self.module_funcs[q], node, depth, params)
            if func.type == "identifier":
                k = self.kind(func, depth + 1, params)
                if k.cat == "module":
                    return Kind("tensor", "cuda")
                if k.cat == "compiled":
                    return Kind("tensor", "cuda")
                return UNKNOWN
        if func.type == "attribute":
            obj = func.child_by_field_name("object")
            attr = func.child_by_field_name("attribute")
            if obj is None or attr is None:
                return UNKNOWN
            m = self.text(attr)
            if obj.type == "identifier" and self.text(obj) == "self" and self.kind(func, depth + 1, params).cat == "module":
                return Kind("tensor", "cuda")  # `self.fc(x)`: calling a module held on the instance
            rk = self.kind(obj, depth + 1, params)
            if rk.cat == "module" and m in ("cuda", "to", "train", "eval", "half", "float", "bfloat16", "requires_grad_"):
                return rk
            if rk.cat == "module":
                return UNKNOWN
            if rk.tensor:
                if m in ("item",):
                    return Kind("scalar")
                if m in ("tolist", "numpy"):
                    return Kind("other")
                if m in ("size", "dim", "numel", "stride", "element_size", "data_ptr", "get_device", "nelement",
                         "ndimension"):
                    return Kind("scalar")
                if m.startswith("is_") and m != "is_nonzero":  # is_contiguous(), is_floating_point(): a Python bool
                    return Kind("bool")
                if m == "cpu":
                    return Kind("tensor", "cpu")
                if m == "pin_memory":
                    return Kind("tensor", "pinned")
                if m == "cuda":
                    return Kind("tensor", "cuda")
                if m == "to" and args is not None and _mentions_cuda(self, args):
                    return Kind("tensor", "cuda")
                return Kind("tensor", rk.device, is_bool=m in BOOL_METHODS)
            if rk.cat in ("unknown", "param") and m in TENSOR_METHODS:
                return Kind("tensor", None, is_bool=m in BOOL_METHODS)
            if rk.cat == "graph" and m == "pool":
                return Kind("other")
        return UNKNOWN

    def _torch_call_kind(self, q: str, last: str, node: Node, args: Node | None, depth: int,
                         params: ParamKinds | None = None) -> Kind:
        if q in ("torch.cuda.Stream", "torch.cuda.current_stream", "torch.cuda.default_stream", "torch.Stream"):
            return Kind("stream", node=node)
        if q in ("torch.cuda.Event", "torch.Event"):
            return Kind("event", node=node)
        dev: str | None
        if q in ("torch.Generator", "torch.cuda.Generator"):
            dev = "cuda" if args is not None and _mentions_cuda(self, args) else "cpu"
            return Kind("generator", dev, node=node)
        if q == "torch.cuda.CUDAGraph":
            return Kind("graph", node=node)
        if q.startswith("torch.optim.lr_scheduler."):
            return Kind("scheduler", node=node)
        if q.startswith("torch.optim.") and last[:1].isupper():
            return Kind("optimizer", node=node)
        if q in ("torch.amp.GradScaler",):
            return Kind("scaler", node=node)
        if q.startswith("torch.utils.data") and last == "DataLoader":
            return Kind("dataloader", node=node)
        if q == "torch.compile":
            return Kind("compiled", node=node)
        if q.startswith("torch.nn.") and last[:1].isupper() and ".functional" not in q:
            lib: set[str] = set()
            if last in CUBLAS_MODULES:
                lib.add("cublas")
            if last in CUDNN_MODULES:
                lib.add("cudnn")
            if last == "Sequential" and args is not None:
                for a in args.named_children:
                    k = self.kind(a, depth + 1, params)
                    lib |= k.lib
            return Kind("module", None, lib=frozenset(lib), node=node)
        if q.startswith("torch.nn.functional."):
            dev = self._first_tensor_device(args, depth, params)
            return Kind("tensor", dev)
        if last in TENSOR_FACTORIES or q.startswith("torch.special.") or q.startswith("torch.linalg."):
            dev = None
            if args is not None:
                device_arg = _kwarg(self, args, "device")
                if device_arg is not None:
                    dev = "cuda" if _mentions_cuda(self, device_arg) else "cpu"
                    if device_arg.type == "attribute" and self.text(device_arg).endswith(".device"):
                        obj = device_arg.child_by_field_name("object")
                        dev = self.kind(obj, depth + 1, params).device if obj is not None else None
                pin = _kwarg(self, args, "pin_memory")
                if pin is not None and self.text(pin) == "True":
                    dev = "pinned"
                if dev is None:
                    if last.endswith("_like") or last in ("cat", "stack", "where", "matmul", "mm", "bmm"):
                        dev = self._first_tensor_device(args, depth, params)
                    elif last in ("tensor", "as_tensor", "from_numpy") or last in SHAPE_FACTORIES or last in (
                        "full", "arange", "randint", "linspace", "eye", "randperm"
                    ):
                        dev = "cpu"
                    else:
                        dev = self._first_tensor_device(args, depth, params)
            shape = _literal_shape(self, args) if last in SHAPE_FACTORIES and args is not None else None
            return Kind("tensor", dev, shape=shape, node=node)
        return UNKNOWN

    def _first_tensor_device(self, args: Node | None, depth: int, params: ParamKinds | None = None) -> str | None:
        if args is None:
            return None
        for a in args.named_children:
            if a.type == "keyword_argument":
                continue
            k = self.kind(a, depth + 1, params)
            if k.tensor:
                return k.device
        return None


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


def _call_arguments(ix: FileIndex, call: Node, names: list[str]) -> dict[str, Node]:
    """The call's argument expression for each parameter name it binds (positionally, then by keyword); a
    call with `*args` / `**kwargs` binds only what is spelled before them."""
    args = call.child_by_field_name("arguments")
    out: dict[str, Node] = {}
    if args is None:
        return out
    pos = 0
    for a in args.named_children:
        if a.type in ("list_splat", "dictionary_splat"):
            break
        if a.type == "keyword_argument":
            k, v = a.child_by_field_name("name"), a.child_by_field_name("value")
            if k is not None and v is not None:
                out[ix.text(k)] = v
        elif a.type != "comment":
            if pos < len(names):
                out[names[pos]] = a
            pos += 1
    return out


def _kwarg(ix: FileIndex, args: Node, name: str) -> Node | None:
    for a in args.named_children:
        if a.type == "keyword_argument":
            n = a.child_by_field_name("name")
            if n is not None and ix.text(n) == name:
                return a.child_by_field_name("value")
    return None


def kwarg(ix: FileIndex, call: Node, name: str) -> Node | None:
    args = call.child_by_field_name("arguments")
    return _kwarg(ix, args, name) if args is not None else None


def positional(call: Node) -> list[Node]:
    args = call.child_by_field_name("arguments")
    if args is None:
        return []
    return [a for a in args.named_children if a.type not in ("keyword_argument", "comment", "list_splat", "dictionary_splat")]


def _mentions_cuda(ix: FileIndex, node: Node) -> bool:
    text = ix.text(node)
    if "cuda" in text:
        return True
    # a name bound to "cuda" / torch.device("cuda")
    for n in [node, *node.named_children]:
        n = strip_parens(n)
        if n.type == "identifier":
            assign, _s, _p = ix.lookup(ix.text(n), n)
            if assign is not None and assign.value is not None and "cuda" in ix.text(assign.value):
                return True
        if n.type == "keyword_argument":
            v = n.child_by_field_name("value")
            if v is not None and v.type == "identifier":
                assign, _s, _p = ix.lookup(ix.text(v), v)
                if assign is not None and assign.value is not None and "cuda" in ix.text(assign.value):
                    return True
    return False


def _literal_shape(ix: FileIndex, args: Node) -> tuple[int, ...] | None:
    pos = [a for a in args.named_children if a.type != "keyword_argument"]
    if len(pos) == 1 and pos[0].type in ("tuple", "list"):
        pos = list(pos[0].named_children)
    dims: list[int] = []
    for a in pos:
        if a.type != "integer":
            return None
        try:
            dims.append(int(ix.text(a).replace("_", ""), 0))
        except ValueError:
            return None
    return tuple(dims) if dims else None
