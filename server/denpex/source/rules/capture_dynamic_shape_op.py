"""capture-dynamic-shape-op (DPX113): ops whose output size depends on the data — `nonzero`, `unique`,
`masked_select`, boolean-mask indexing — must read that size on the host, which a capture cannot do."""

from __future__ import annotations

from tree_sitter import Node

from denpex.source.fixes import edits as F
from denpex.source.model import Fix
from denpex.source.ops import OpEntry
from denpex.source.resolve.index import FileIndex, kwarg, positional
from denpex.source.rules._api import CallSite, Claim, Frame, Hazard, SourceRule, Walk
from denpex.source.rules._calls import op_entry, shown
from denpex.source.syntax.parse import strip_parens


def _hazard(entry: OpEntry) -> str:
    """The hazard of a dynamic-shape op, by the aten op it reaches: nonzero's family (argwhere, 1-argument
    torch.where), unique's, and the rest (masked_select, bincount, repeat_interleave, one_hot, lstsq, ...)."""
    ops_ = " ".join(entry.aten)
    if "nonzero" in ops_ or "argwhere" in ops_:
        return "nonzero-call"
    if "unique" in ops_:
        return "unique-call"
    return "masked-select"


def _dynamic(w: Walk, c: CallSite) -> bool:
    """An op PyTorch tags `dynamic_output_shape` (or whose spelling reaches one), for the arguments given."""
    found = op_entry(w, c, "dynamic_shape")
    if found is None:
        return False
    name, entry = found
    hazard = _hazard(entry)
    fixes = [_nonzero_static_fix(c.ix, c.node, c.qualname, c.receiver)] if name in _NONZERO else None
    aten = entry.aten[0].split(".", 1)[0] if entry.aten else name
    message = None if name in _NAMED else (
        f"`{shown(name)}` computes its output size from the data (aten::{aten}, "
        f"dynamic_output_shape): inside a CUDA-graph capture that needs a host sync and fails")
    w.report(hazard, c.node, c.frame, fixes, message=message)
    return True


# the spellings the rule's message names; others get a message of their own
_NONZERO = frozenset({"torch.nonzero", "torch.argwhere", "Tensor.nonzero", "Tensor.argwhere"})
_NAMED = _NONZERO | {"torch.unique", "torch.unique_consecutive", "Tensor.unique", "Tensor.unique_consecutive",
                     "torch.masked_select", "Tensor.masked_select"}


def _mask_index(w: Walk, node: Node, frame: Frame) -> None:
    parent = frame.ix.src.nav.parent(node)
    if parent is not None and parent.type == "assignment" and parent.child_by_field_name("left") == node:
        return  # a store through a mask keeps the shape
    idx = node.child_by_field_name("subscript")
    value = node.child_by_field_name("value")
    if idx is None or value is None:
        return
    k = w.kind(idx, frame)
    if k.tensor and k.is_bool:
        ix = frame.ix
        t = w.torch
        new = f"{t}.where({ix.text(idx)}, {ix.text(value)}, {t}.zeros_like({ix.text(value)}))"
        w.report("bool-mask-index", node, frame,
                 [F.fix("Mask on the device with torch.where (keeps the shape)", "unsafe",
                        [F.replace_node(frame.ix, node, new)], in_place=True)])


def _nonzero_static_fix(ix: FileIndex, call: Node, q: str | None, recv: Node | None) -> Fix | None:
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
        return F.fix("Use torch.nonzero_static with a fixed size (pads with -1)", "unsafe",
                     [F.replace_node(ix, call, new)], in_place=True)
    if recv is not None and not positional(call) and kwarg(ix, call, "as_tuple") is None:
        r = ix.text(recv)
        r_p = r if strip_parens(recv).type in ("identifier", "attribute", "call") else f"({r})"
        new = f"{r_p}.nonzero_static(size={r_p}.numel(), fill_value=-1)"
        return F.fix("Use nonzero_static with a fixed size (pads with -1)", "unsafe", [F.replace_node(ix, call, new)],
                     in_place=True)
    return None


RULE = SourceRule(
    id="capture-dynamic-shape-op",
    hazards=(Hazard("nonzero-call"), Hazard("bool-mask-index"), Hazard("unique-call"), Hazard("masked-select")),
    claims=(Claim(80, _dynamic),),
    on_node={"subscript": (_mask_index,)},
)
