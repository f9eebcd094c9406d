"""capture-dynamic-shape-op (DPX113): ops whose output size depends on the data — `nonzero`, `unique`,
`masked_select`, boolean-mask indexing — must read that size on the host, which a capture cannot do."""

from __future__ import annotations

from tree_sitter import Node

from denpex.source.fixes import edits as F
from denpex.source.model import Fix
from denpex.source.resolve.index import FileIndex, kwarg, positional
from denpex.source.rules._api import CallSite, Claim, Frame, Hazard, SourceRule, Walk
from denpex.source.rules._calls import on_tensor
from denpex.source.syntax.parse import strip_parens


def _nonzero(w: Walk, c: CallSite) -> bool:
    if not (c.qualname in ("torch.nonzero", "torch.argwhere") or (c.method in ("nonzero", "argwhere") and on_tensor(c))):
        return False
    w.report("nonzero-call", c.node, c.frame, [_nonzero_static_fix(c.ix, c.node, c.qualname, c.receiver)])
    return True


def _unique(w: Walk, c: CallSite) -> bool:
    rk = c.receiver_kind
    if not (c.qualname in ("torch.unique", "torch.unique_consecutive") or (
            c.method in ("unique", "unique_consecutive") and rk is not None and rk.tensor)):
        return False
    w.report("unique-call", c.node, c.frame)
    return True


def _masked_select(w: Walk, c: CallSite) -> bool:
    if not (c.qualname == "torch.masked_select" or (c.method == "masked_select" and on_tensor(c))):
        return False
    w.report("masked-select", c.node, c.frame)
    return True


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
    claims=(Claim(80, _nonzero), Claim(90, _unique), Claim(100, _masked_select)),
    on_node={"subscript": (_mask_index,)},
)
