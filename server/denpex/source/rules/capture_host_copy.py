"""capture-host-copy (DPX115): copies between host and device inside a capture — `.cpu()` / `.tolist()` /
`.numpy()`, `torch.tensor(..., device="cuda")` (or `device=x.device`) from host data, `t.cuda()` of a host
tensor, and a Python scalar written into a CUDA tensor by index (`buf[i] = 3.0`)."""

from __future__ import annotations

from tree_sitter import Node

from denpex.source.fixes import edits as F
from denpex.source.resolve.index import kwarg
from denpex.source.rules._api import CallSite, Claim, Frame, Hazard, SourceRule, Walk
from denpex.source.rules._calls import (
    device_is_cuda,
    host_to_device_move,
    is_module_name,
    on_tensor,
    pinned_non_blocking,
)
from denpex.source.syntax.parse import strip_parens


def _to_cpu_device(c: CallSite) -> bool:
    """`t.to("cpu")`, `t.to(device="cpu")`, `t.to(torch.device("cpu"))`."""
    if c.method != "to":
        return False
    dev = kwarg(c.ix, c.node, "device")
    target = dev if dev is not None else (c.args[0] if c.args else None)
    if target is None:
        return False
    text = c.ix.text(target).replace(" ", "")
    return text in ('"cpu"', "'cpu'", 'torch.device("cpu")', "torch.device('cpu')")


def _to_host(w: Walk, c: CallSite) -> bool:
    if not (c.method in ("cpu", "tolist", "numpy") or _to_cpu_device(c)) or not on_tensor(c):
        return False
    rk = c.receiver_kind
    assert rk is not None
    if rk.tensor and rk.device in ("cpu", "pinned"):
        return False  # a host tensor's .tolist() / .numpy() / .cpu() reads host memory: nothing crosses
    if c.method in ("cpu", "to") and rk.cat != "tensor" and c.receiver is not None and (
            c.receiver.type == "identifier") and is_module_name(w, c.receiver, c.frame):
        return False  # `model.cpu()`: a module, not a tensor
    # a receiver not known to be a tensor (an unbound parameter, a value of unknown kind) may be a host tensor
    # or a numpy array, whose .tolist() copies nothing: at most a warning
    w.report("device-to-host-copy", c.node, c.frame, [w.fixes.move_after_replay(c.stmt, c.direct)],
             severity=None if rk.tensor else "warning")
    return True


def _on_gpu(w: Walk, c: CallSite) -> bool:
    """The `device=` of a call names the GPU: a "cuda" text, a tensor's `.device` (`x.device`, `self.device`:
    inside a capture a tensor not known to live on the host is on the GPU), or a name bound to one of those."""
    if device_is_cuda(c.ix, c.node):
        return True
    d = kwarg(c.ix, c.node, "device")
    for _ in range(3):
        if d is None:
            return False
        d = strip_parens(d)
        if d.type == "attribute":
            attr, obj = d.child_by_field_name("attribute"), d.child_by_field_name("object")
            if attr is None or obj is None or c.ix.text(attr) != "device":
                return False
            k = w.kind(obj, c.frame)
            return k.cat in ("tensor", "param", "unknown", "module") and k.device not in ("cpu", "pinned")
        if d.type != "identifier":
            return False
        b = c.frame.env.get(c.ix.text(d))
        if b is not None:
            if b.ix is not c.ix:
                return "cuda" in b.ix.text(b.node)
            d = b.node
            continue
        assign, _scope, is_param = c.ix.lookup(c.ix.text(d), d)
        if is_param or assign is None or assign.value is None:
            return False
        if "cuda" in c.ix.text(assign.value):
            return True
        d = assign.value
    return False


def _tensor_from_host(w: Walk, c: CallSite) -> bool:
    if c.qualname not in ("torch.tensor", "torch.as_tensor") or not _on_gpu(w, c):
        return False
    w.report("pageable-host-to-device", c.node, c.frame, [w.fixes.hoist(c.stmt, c.direct, c.node)])
    return True


def _move_to_device(w: Walk, c: CallSite) -> bool:
    if not host_to_device_move(c) or pinned_non_blocking(c):
        return False
    w.report("pageable-host-to-device", c.node, c.frame, [w.fixes.hoist(c.stmt, c.direct, c.node, safe=False)])
    return True


def _scalar_setitem(w: Walk, node: Node, frame: Frame) -> None:
    left = node.child_by_field_name("left")
    right = node.child_by_field_name("right")
    if left is None or right is None or left.type != "subscript":
        return
    value = left.child_by_field_name("value")
    idx = left.child_by_field_name("subscript")
    if value is None or idx is None:
        return
    vk = w.kind(value, frame)
    rk = w.kind(right, frame)
    if not (vk.tensor and vk.device == "cuda") or rk.cat != "scalar":
        return
    ix = frame.ix
    ik = w.kind(idx, frame)
    stmt = node.parent if node.parent is not None and node.parent.type == "expression_statement" else None
    new: str
    if ik.tensor and ik.is_bool:
        new = f"{ix.text(value)}.masked_fill_({ix.text(idx)}, {ix.text(right)})"
    elif ik.tensor:
        new = f"{ix.text(value)}.index_fill_(0, {ix.text(idx)}, {ix.text(right)})"
    else:
        new = f"{ix.text(left)}.fill_({ix.text(right)})"
    fx = F.fix("Write the scalar with an in-place device kernel", "safe", [F.replace_node(ix, node, new)],
               in_place=True) if stmt is not None else None
    w.report("scalar-setitem", node, frame, [fx])


RULE = SourceRule(
    id="capture-host-copy",
    hazards=(Hazard("device-to-host-copy"), Hazard("pageable-host-to-device"), Hazard("scalar-setitem")),
    claims=(Claim(40, _to_host), Claim(110, _tensor_from_host), Claim(121, _move_to_device)),
    on_node={"assignment": (_scalar_setitem,)},
)
