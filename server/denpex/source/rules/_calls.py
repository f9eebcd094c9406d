"""Call shapes several rules test."""

from __future__ import annotations

from tree_sitter import Node

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
