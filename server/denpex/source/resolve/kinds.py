"""Kind inference for the file index: what an expression is ("is this a CUDA tensor?", a module, a stream, an
optimizer), read from its construction, torch's call names, operators, subscripts and a file function's returns.
Split from index.py (FileIndex.kind delegates here); the index is passed in, never imported at run time."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from tree_sitter import Node

from denpex.source.resolve.args import _kwarg, bind
from denpex.source.syntax.parse import own_nodes, strip_parens, tokens, walk

if TYPE_CHECKING:
    from denpex.source.resolve.index import FileIndex, FuncInfo

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


# a tensor's methods that return a Python int
SCALAR_METHODS = frozenset({"size", "dim", "numel", "stride", "element_size", "data_ptr", "get_device", "nelement",
                            "ndimension"})

# kinds one question may ask: a call's kind reads its callee's returns with the arguments bound, and those read
# their own callees', a tree no memo can share (each level's bindings differ); in TransformerEngine's GEMM
# wrappers, once reached, one scan spent minutes here. Past the budget the answer is unknown (no finding).
KIND_BUDGET = 2_000
_left: list[int | None] = [None]  # kinds left to the question under way (None: no question under way)


def kind(ix: FileIndex, node: Node, depth: int = 0, params: ParamKinds | None = None) -> Kind:
    """What `node` is. `params` gives the kind of a parameter of the function that holds the name where a
    caller's binding is known (the walker's frames): `keep = scores > t` is a tensor mask when the caller
    passed a tensor for `scores`, through any locals, operators and subscripts in between."""
    left = _left[0]
    if left is None:  # a new question: its own budget
        _left[0] = KIND_BUDGET
        try:
            return _kind(ix, node, depth, params)
        finally:
            _left[0] = None
    if left <= 0:
        return UNKNOWN  # the question's budget is spent
    _left[0] = left - 1
    return _kind(ix, node, depth, params)


def _kind(ix: FileIndex, node: Node, depth: int, params: ParamKinds | None) -> Kind:
    if depth > 8:
        return UNKNOWN
    node = strip_parens(node)
    t = node.type
    if t == "identifier":
        name = ix.text(node)
        assign, _scope, is_param = ix.lookup(name, node)
        if is_param:
            if params is not None:
                pk = params(name, node)
                if pk is not None:
                    return pk
            return PARAM
        if assign is not None and assign.value is None and assign.unpacked is not None:
            return _element_kind(ix, assign.unpacked, depth, params)
        if assign is None or assign.value is None:
            return UNKNOWN
        if assign.stmt.type == "augmented_assignment":
            return UNKNOWN
        return kind(ix, assign.value, depth + 1, params)
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
        return kind(ix, arg, depth + 1, params) if arg is not None else UNKNOWN
    if t == "not_operator":
        return Kind("bool")
    if t == "binary_operator":
        lk = kind(ix, node.child_by_field_name("left") or node, depth + 1, params)
        rk = kind(ix, node.child_by_field_name("right") or node, depth + 1, params)
        op = node.child_by_field_name("operator")
        if lk.tensor or rk.tensor:
            dev = "cuda" if "cuda" in (lk.device, rk.device) else (lk.device or rk.device)
            return Kind("tensor", dev)
        if lk.cat == "scalar" and rk.cat == "scalar":
            return Kind("scalar")
        if op is not None and ix.text(op) == "@":
            return Kind("tensor")
        return UNKNOWN
    if t == "comparison_operator":
        if any(c.type in ("is", "is not", "in", "not in") for c in node.children):
            return Kind("bool")  # identity and membership give a Python bool, even between tensors
        for c in node.named_children:
            k = kind(ix, c, depth + 1, params)
            if k.tensor:
                return Kind("tensor", k.device, is_bool=True)
        return Kind("bool")
    if t == "boolean_operator":
        return Kind("bool")
    if t == "conditional_expression":
        return kind(ix, node.named_children[0], depth + 1, params) if node.named_child_count else UNKNOWN
    if t == "subscript":
        v = node.child_by_field_name("value")
        if v is not None:
            k = kind(ix, v, depth + 1, params)
            if k.tensor:
                return Kind("tensor", k.device)
        return UNKNOWN
    if t == "attribute":
        obj = node.child_by_field_name("object")
        attr = node.child_by_field_name("attribute")
        if obj is not None and attr is not None:
            a = ix.text(attr)
            if obj.type == "identifier" and ix.text(obj) == "self":
                cls = ix.enclosing_class(node)
                if cls is not None:
                    entry = ix.class_self_attr(cls, a)
                    if entry is not None:
                        return kind(ix, entry[0], depth + 1, params)
                return UNKNOWN
            ok = kind(ix, obj, depth + 1, params)
            if ok.tensor and a in ("T", "mT", "data", "grad", "real", "imag"):
                return Kind("tensor", ok.device)
            if ok.tensor and a in ("shape", "device", "dtype"):
                return Kind("other")
        return UNKNOWN
    if t == "call":
        return _call_kind(ix, node, depth, params)
    return UNKNOWN

def _element_kind(ix: FileIndex, whole: Node, depth: int, params: ParamKinds | None) -> Kind:
    """An element of `whole` unpacked or iterated: a tensor for a tensor's rows and for the tuples of torch's
    own ops (`values, idx = x.max(-1)`, `a, b = t.chunk(2)`). A module's or a user function's result may be
    a tuple of anything (`logits, n_tokens = model(x)`): unknown."""
    whole = strip_parens(whole)
    if whole.type == "call":
        func = whole.child_by_field_name("function")
        if func is None:
            return UNKNOWN
        q = ix.qualname(func)
        torch_op = q is not None and q.startswith("torch.") and not q.startswith("torch.nn.")
        recv = func.child_by_field_name("object") if func.type == "attribute" else None
        own = _file_function(ix, func, q)
        if own is not None:
            # `start, end = self.span_logits(h, mask)`: this file's function, whose returns are all tuples of tensors
            return _returned_elements_kind(ix, own, whole, depth, params)
        if not torch_op and not (recv is not None and kind(ix, recv, depth + 1, params).tensor):
            return UNKNOWN
    k = kind(ix, whole, depth + 1, params)
    return Kind("tensor", k.device, is_bool=k.is_bool) if k.tensor else UNKNOWN

# a function's own return statements, per index and tree epoch: every call of it asks again (with other
# arguments), and walking its body each time was most of a TransformerEngine scan
_RETURNS: WeakKeyDictionary[FileIndex, tuple[int, dict[int, list[Node]]]] = WeakKeyDictionary()


def _own_returns(ix: FileIndex, fn: FuncInfo) -> list[Node]:
    got = _RETURNS.get(ix)
    if got is None or got[0] != ix.src.epoch:
        got = _RETURNS[ix] = (ix.src.epoch, {})
    found = got[1].get(fn.node.id)
    if found is None and fn.body is not None:
        found = got[1][fn.node.id] = [n for n in own_nodes(fn.body) if n.type == "return_statement"]
    return found or []


def _callee_params(ix: FileIndex, fn: FuncInfo, call: Node, depth: int, params: ParamKinds | None) -> ParamKinds:
    """The kinds of `fn`'s parameters inside its body, from the arguments `call` binds to them (known kinds only)."""
    bound = bind(ix, call, fn)

    def callee_params(name: str, node: Node) -> Kind | None:
        holder = ix.enclosing_function(node)
        arg = bound.get(name) if holder is not None and holder.node.id == fn.node.id else None
        if arg is None:
            return None
        k = kind(ix, arg, depth + 1, params)
        return None if k.cat in ("unknown", "param") else k

    return callee_params


def _return_kind(ix: FileIndex, fn: FuncInfo, call: Node, depth: int, params: ParamKinds | None) -> Kind:
    """What a call of this file's function `fn` returns: the kind its return statements agree on, with its
    parameters taken from the call's arguments (`z = standardize(err, mean, std)` is a tensor when `err`
    is one). Returns that disagree, or one not known, give unknown."""
    body = fn.body
    if body is None or depth > 6:
        return UNKNOWN
    callee_params = _callee_params(ix, fn, call, depth, params)

    kinds: list[Kind] = []
    for n in _own_returns(ix, fn):
        if not n.named_child_count:
            return UNKNOWN
        kinds.append(kind(ix, n.named_children[0], depth + 1, callee_params))
    if not kinds or any(k.cat != kinds[0].cat for k in kinds) or kinds[0].cat not in ("tensor", "scalar"):
        return UNKNOWN
    return Kind(kinds[0].cat, kinds[0].device, is_bool=all(k.is_bool for k in kinds))

def _file_function(ix: FileIndex, func: Node, q: str | None) -> FuncInfo | None:
    """The function of this file a callee names: a module function (not shadowed by a local), or `self.m` for a
    method `m` of the enclosing class or of a base class defined in this file (an override elsewhere is assumed
    to return the same kind)."""
    if func.type == "identifier":
        if q is None or "." in q or q not in ix.module_funcs:
            return None
        assign, _scope, is_param = ix.lookup(q, func)
        return ix.module_funcs[q] if assign is None and not is_param else None
    obj = func.child_by_field_name("object")
    attr = func.child_by_field_name("attribute")
    if func.type != "attribute" or obj is None or attr is None or ix.text(obj) != "self":
        return None
    cls = ix.enclosing_class(func)
    seen: set[str] = set()
    while cls is not None and cls.name not in seen:
        seen.add(cls.name)
        m = cls.methods.get(ix.text(attr))
        if m is not None:
            return m
        cls = next((ix.classes[b] for b in cls.bases if b in ix.classes), None)
    return None


def _returned_elements_kind(ix: FileIndex, fn: FuncInfo, call: Node, depth: int, params: ParamKinds | None) -> Kind:
    """An element unpacked from a call of this file's `fn`: a tensor when every return statement returns a tuple
    whose elements are all tensors (with the parameters taken from the call's arguments, as `_return_kind`)."""
    rets = _own_returns(ix, fn)
    if not rets or depth > 6:
        return UNKNOWN
    callee_params = _callee_params(ix, fn, call, depth, params)

    devices: set[str | None] = set()
    for n in rets:
        value = strip_parens(n.named_children[0]) if n.named_child_count else None
        if value is None or value.type not in ("tuple", "expression_list") or not value.named_child_count:
            return UNKNOWN
        for e in value.named_children:
            k = kind(ix, e, depth + 1, callee_params)
            if not k.tensor:
                return UNKNOWN
            devices.add(k.device)
    return Kind("tensor", devices.pop() if len(devices) == 1 else None)


def _call_kind(ix: FileIndex, node: Node, depth: int, params: ParamKinds | None = None) -> Kind:
    func = node.child_by_field_name("function")
    args = node.child_by_field_name("arguments")
    if func is None:
        return UNKNOWN
    q = ix.qualname(func)
    if q is not None:
        last = q.rsplit(".", 1)[-1]
        if q.startswith("torch.") or q == "torch":
            return _torch_call_kind(ix, q, last, node, args, depth, params)
        if q in ix.classes or (q.split(".")[-1] in ix.classes and "." not in q):
            return Kind("module", "cuda", user_class=q)
        if q.endswith("DataLoader"):
            return Kind("dataloader", node=node)
        if func.type == "identifier" and "." not in q and q in ix.module_funcs:
            assign, _scope, is_param = ix.lookup(q, func)
            if assign is None and not is_param:  # the module's function, not a local of that name
                return _return_kind(ix, ix.module_funcs[q], node, depth, params)
        if func.type == "identifier":
            k = kind(ix, func, depth + 1, params)
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
        m = ix.text(attr)
        if obj.type == "identifier" and ix.text(obj) == "self" and kind(ix, func, depth + 1, params).cat == "module":
            return Kind("tensor", "cuda")  # `ix.fc(x)`: calling a module held on the instance
        own = _file_function(ix, func, q)
        if own is not None:
            k = _return_kind(ix, own, node, depth, params)  # `self.project(h)`: a method of the class
            if k.cat != "unknown":
                return k
        if obj.type == "identifier" and q is not None and not q.startswith("torch."):
            name = ix.text(obj)
            assign, _scope, is_param = ix.lookup(name, obj)
            if assign is None and not is_param and ix.imports.lookup(name) is not None:
                # `math.sqrt(n)`, `np.log(v)`: a function of an imported module, not a tensor method
                if q.startswith("numpy."):
                    return Kind("other")  # a host array: its .sum() / .max() are no tensor methods (vLLM's np.full)
                return Kind("scalar") if q.startswith("math.") else UNKNOWN
        rk = kind(ix, obj, depth + 1, params)
        if rk.cat == "module" and m in ("cuda", "to", "train", "eval", "half", "float", "bfloat16", "requires_grad_"):
            return rk
        if rk.cat == "module":
            return UNKNOWN
        if rk.tensor:
            if m in ("item",):
                return Kind("scalar")
            if m in ("tolist", "numpy"):
                return Kind("other")
            if m in SCALAR_METHODS:
                return Kind("scalar")
            if m.startswith(("is_", "has_", "_is_", "_has_")) and m != "is_nonzero":
                # is_contiguous(), is_floating_point(), has_names(), a tensor subclass's _has_names(): a Python bool
                return Kind("bool")
            if m == "cpu":
                return Kind("tensor", "cpu")
            if m == "pin_memory":
                return Kind("tensor", "pinned")
            if m == "cuda":
                return Kind("tensor", "cuda")
            if m == "to" and args is not None and _mentions_cuda(ix, args):
                return Kind("tensor", "cuda")
            return Kind("tensor", rk.device, is_bool=m in BOOL_METHODS)
        if rk.cat in ("unknown", "param") and m in TENSOR_METHODS:
            return Kind("tensor", None, is_bool=m in BOOL_METHODS)
        if rk.cat == "graph" and m == "pool":
            return Kind("other")
    return UNKNOWN

def _torch_call_kind(ix: FileIndex, q: str, last: str, node: Node, args: Node | None, depth: int,
                     params: ParamKinds | None = None) -> Kind:
    if q in ("torch.cuda.Stream", "torch.cuda.current_stream", "torch.cuda.default_stream", "torch.Stream"):
        return Kind("stream", node=node)
    if q in ("torch.cuda.Event", "torch.Event"):
        return Kind("event", node=node)
    dev: str | None
    if q in ("torch.Generator", "torch.cuda.Generator"):
        dev = "cuda" if args is not None and _mentions_cuda(ix, args) else "cpu"
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
                k = kind(ix, a, depth + 1, params)
                lib |= k.lib
        return Kind("module", None, lib=frozenset(lib), node=node)
    if q.startswith("torch.nn.functional."):
        dev = _first_tensor_device(ix, args, depth, params)
        return Kind("tensor", dev)
    if last in TENSOR_FACTORIES or q.startswith("torch.special.") or q.startswith("torch.linalg."):
        dev = None
        if args is not None:
            device_arg = _kwarg(ix, args, "device")
            if device_arg is not None:
                dev = "cuda" if _mentions_cuda(ix, device_arg) else "cpu"
                if device_arg.type == "attribute" and ix.text(device_arg).endswith(".device"):
                    obj = device_arg.child_by_field_name("object")
                    dev = kind(ix, obj, depth + 1, params).device if obj is not None else None
            pin = _kwarg(ix, args, "pin_memory")
            if pin is not None and ix.text(pin) == "True":
                dev = "pinned"
            if dev is None:
                if last.endswith("_like") or last in ("cat", "stack", "where", "matmul", "mm", "bmm"):
                    dev = _first_tensor_device(ix, args, depth, params)
                elif last in ("tensor", "as_tensor", "from_numpy") or last in SHAPE_FACTORIES or last in (
                    "full", "arange", "randint", "linspace", "eye", "randperm"
                ):
                    dev = "cpu"
                else:
                    dev = _first_tensor_device(ix, args, depth, params)
        shape = _literal_shape(ix, args) if last in SHAPE_FACTORIES and args is not None else None
        return Kind("tensor", dev, shape=shape, node=node)
    return UNKNOWN

def _first_tensor_device(ix: FileIndex, args: Node | None, depth: int, params: ParamKinds | None = None) -> str | None:
    if args is None:
        return None
    for a in args.named_children:
        if a.type == "keyword_argument":
            continue
        k = kind(ix, a, depth + 1, params)
        if k.tensor:
            return k.device
    return None


def _mentions_cuda(ix: FileIndex, node: Node) -> bool:
    text = ix.text(node)
    if "cuda" in text:
        return True
    # a name bound to "cuda" / torch.device("cuda"), or to a command-line option whose default is "cuda"
    for n in [node, *node.named_children]:
        n = strip_parens(n)
        if n.type == "keyword_argument":
            v = n.child_by_field_name("value")
            if v is None:
                continue
            n = strip_parens(v)
        if n.type == "attribute" and _cuda_option(ix, n):
            return True
        if n.type == "identifier":
            assign, _s, _p = ix.lookup(ix.text(n), n)
            if assign is not None and assign.value is not None and (
                    "cuda" in ix.text(assign.value) or any(_cuda_option(ix, a) for a in walk(assign.value)
                                                           if a.type == "attribute")):
                return True
    return False


_NAMESPACE_PARAMS = frozenset({"args", "cfg", "config", "opts", "opt", "hparams", "flags"})


def _cuda_option(ix: FileIndex, attr: Node) -> bool:
    """`args.device` where the file declares `add_argument("--device", default="cuda")`: the value the program
    runs with unless told otherwise."""
    a = attr.child_by_field_name("attribute")
    obj = attr.child_by_field_name("object")
    if a is None or obj is None or obj.type != "identifier" or ix.text(a) not in _cuda_options(ix):
        return False
    # the object is the parsed namespace: `args = parser.parse_args()` / `get_args()`, or an `args` parameter
    assign, _s, is_param = ix.lookup(ix.text(obj), obj)
    if is_param:
        return ix.text(obj) in _NAMESPACE_PARAMS
    v = strip_parens(assign.value) if assign is not None and assign.value is not None else None
    f = v.child_by_field_name("function") if v is not None and v.type == "call" else None
    return f is not None and "args" in ix.text(f).rsplit(".", 1)[-1]


def _cuda_options(ix: FileIndex) -> dict[str, list[Node]]:
    """The argparse destinations of the file whose default mentions cuda (once per file)."""
    key = ("cuda_options", 0)
    found = ix.scope_tables.get(key)
    if found is not None:
        return found
    found = ix.scope_tables[key] = {}
    if not ix.has(b"add_argument"):
        return found
    for tok in tokens(ix.src, "add_argument", "identifier"):
        call = tok.parent.parent if tok.parent is not None and tok.parent.type == "attribute" else None
        if call is None or call.type != "call":
            continue
        args = call.child_by_field_name("arguments")
        default = _kwarg(ix, args, "default") if args is not None else None
        if default is None or "cuda" not in ix.text(default):
            continue
        dest = _kwarg(ix, args, "dest") if args is not None else None
        flags = [a for a in (args.named_children if args is not None else []) if a.type == "string"]
        spelled = dest if dest is not None else (flags[-1] if flags else None)
        if spelled is None:
            continue
        name = ix.text(spelled).strip("'\"").lstrip("-").replace("-", "_")
        found.setdefault(name, []).append(call)
    return found


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
