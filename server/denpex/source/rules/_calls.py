"""Call shapes several rules test."""

from __future__ import annotations

from tree_sitter import Node

from denpex.source import ops
from denpex.source.ops import CallArgs, Category, OpEntry
from denpex.source.resolve.index import FileIndex, kwarg
from denpex.source.rules._api import CallSite, Frame, Walk
from denpex.source.syntax.parse import strip_parens

LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "log"})
TENSOR_LIKE = ("tensor", "unknown", "param")  # receiver kinds a tensor method may be called on


def on_tensor(c: CallSite) -> bool:
    """The receiver may be a tensor (its kind is a tensor, a parameter or unknown)."""
    rk = c.receiver_kind
    return rk is not None and rk.cat in TENSOR_LIKE


def is_log_call(c: CallSite) -> bool:
    """`logger.info(...)`, `self.log.warning(...)`: a logging method on something named like a logger."""
    return c.method in LOG_METHODS and c.receiver is not None and "log" in c.ix.text(c.receiver).lower()


def any_tensor(w: Walk, nodes: list[Node], frame: Frame) -> bool:
    return any(w.tensorish(a, frame) for a in nodes)


def device_is_cuda(ix: FileIndex, call: Node) -> bool:
    d = kwarg(ix, call, "device")
    return d is not None and "cuda" in ix.text(d)


def host_to_device_move(c: CallSite) -> bool:
    """`t.cuda()` / `t.to("cuda")` / `t.to(device=...)` on a tensor known to live on the host."""
    rk = c.receiver_kind
    if c.method not in ("to", "cuda") or rk is None or not rk.tensor or rk.device not in ("cpu", "pinned"):
        return False
    if c.method == "cuda":
        return True
    ix = c.ix
    args = c.node.child_by_field_name("arguments") or c.node
    return any("cuda" in ix.text(a) or "device" in ix.text(a) for a in args.named_children)


def pinned_non_blocking(c: CallSite) -> bool:
    rk = c.receiver_kind
    nb = kwarg(c.ix, c.node, "non_blocking")
    return rk is not None and rk.device == "pinned" and nb is not None and c.ix.text(nb) == "True"


def is_module_name(w: Walk, node: Node, frame: Frame) -> bool:
    return w.kind(node, frame).cat == "module"


def is_global_container(w: Walk, recv: Node, frame: Frame) -> bool:
    """A container that outlives the capture: `self.xs`, or a list/dict/set bound at module level (read from a
    called function)."""
    recv = strip_parens(recv)
    if recv.type == "attribute":
        if frame.func is not None and frame.func.name == "__init__":
            return False  # `self` under construction: built during the capture, its containers are new ones
        return frame.ix.text(recv).startswith("self.")
    if recv.type != "identifier":
        return False
    name = frame.ix.text(recv)
    assign, scope, is_param = frame.ix.lookup(name, recv)
    if is_param or assign is None or scope is None:
        return False
    if frame.depth == 0:
        return False  # a list built in the region's own scope
    return scope.node.type == "module" and assign.value is not None and strip_parens(assign.value).type in (
        "list", "dictionary", "set")


def imported_root(ix: FileIndex, f: Node) -> bool:
    """`torch.linalg.inv` / `F.dropout`: the called name's root is bound by an import (a function of a module,
    not a method of a value)."""
    root = f
    while root.type == "attribute":
        nxt = root.child_by_field_name("object")
        if nxt is None:
            break
        root = nxt
    return root.type == "identifier" and ix.imports.lookup(ix.text(root)) is not None


def op_spelling(c: CallSite, strict: bool = False) -> str | None:
    """The name PyTorch's op tables know a call by (`source/ops`): `torch.nonzero` for a function of an imported
    module, `Tensor.nonzero` for a method on a value that may be a tensor (`strict`: known to be one), `int` for
    a builtin; None for anything else."""
    if c.method is None:
        return c.qualname
    if imported_root(c.ix, c.func):
        return c.qualname
    rk = c.receiver_kind
    if strict and (rk is None or not rk.tensor):
        return None
    return f"Tensor.{c.method}" if on_tensor(c) else None


def op_args(w: Walk, c: CallSite) -> CallArgs:
    """The call's arguments as the op tables' conditions read them: texts, and which are tensors."""
    ix = c.ix
    args = c.node.child_by_field_name("arguments")
    kw: dict[str, str] = {}
    kw_nodes: dict[str, Node] = {}
    for a in args.named_children if args is not None else []:
        if a.type == "keyword_argument":
            n, v = a.child_by_field_name("name"), a.child_by_field_name("value")
            if n is not None and v is not None:
                kw[ix.text(n)] = ix.text(v)
                kw_nodes[ix.text(n)] = v

    def is_tensor(at: int | str) -> bool:
        node = kw_nodes.get(at) if isinstance(at, str) else (c.args[at] if at < len(c.args) else None)
        return node is not None and w.tensorish(node, c.frame)

    return CallArgs(tuple(ix.text(a) for a in c.args), kw, is_tensor)


def op_entry(w: Walk, c: CallSite, category: Category, strict: bool = False) -> tuple[str, OpEntry] | None:
    """The op-table entry of `category` that holds for this call (its spelling and entry), or None."""
    name = op_spelling(c, strict)
    if name is None:
        return None
    e = ops.tables().lookup(category, name)
    if e is None or (e.tensor_receiver and not (c.receiver_kind is not None and c.receiver_kind.tensor)):
        return None
    return (name, e) if e.holds(op_args(w, c)) else None


def shown(name: str) -> str:
    """A spelling as a message shows it: `torch.bincount`, `.equal()` for a method."""
    return f".{name[len('Tensor.'):]}()" if name.startswith("Tensor.") else name
