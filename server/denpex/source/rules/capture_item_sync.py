"""capture-item-sync (DPX101): `.item()`, `float(t)` / `int(t)` / `bool(t)`, `torch.equal`, an f-string of a
tensor inside a capture: a host read of a GPU value, which synchronises (CUDA 900)."""

from __future__ import annotations

from tree_sitter import Node

from denpex.source.engine.hits import stmt_of
from denpex.source.fixes import edits as F
from denpex.source.model import TextEdit
from denpex.source.rules._api import CallSite, Claim, Frame, Hazard, SourceRule, Walk
from denpex.source.rules._calls import on_tensor

_CONVERSIONS = ("float", "int", "bool", "complex")
_COMPARISONS = ("torch.equal", "torch.allclose", "torch.is_nonzero")


def _item(w: Walk, c: CallSite) -> bool:
    if c.method != "item" or c.args or not (c.receiver_kind is None or on_tensor(c)):
        return False
    ix = c.ix
    drop = F.fix("Static buffer: keep the value on the device as a 0-dim tensor (drop .item())", "unsafe",
                 [TextEdit(*ix.src.end(c.receiver), *ix.src.end(c.node), "")],
                 in_place=True) if c.receiver is not None else None
    w.report("item-call", c.node, c.frame, [drop, w.fixes.move_after_replay(c.stmt, c.direct)])
    return True


def _conversion(w: Walk, c: CallSite) -> bool:
    if c.qualname not in _CONVERSIONS or len(c.args) != 1 or not w.tensorish(c.args[0], c.frame):
        return False
    ix = c.ix
    w.report("host-scalar-conversion", c.node, c.frame, [
        F.fix(f"Static buffer: keep the value on the device as a 0-dim tensor (drop {c.qualname}())", "unsafe",
              [F.replace_node(ix, c.node, ix.text(c.args[0]))], in_place=True),
    ])
    return True


def _comparison(w: Walk, c: CallSite) -> bool:
    rk = c.receiver_kind
    if c.qualname in _COMPARISONS or (c.method == "is_nonzero" and rk is not None and rk.tensor):
        w.report("host-scalar-conversion", c.node, c.frame)
        return True
    return False


def _fstring(w: Walk, node: Node, frame: Frame) -> None:
    for c in node.named_children:
        if c.type == "interpolation":
            e = c.child_by_field_name("expression")
            if e is not None and w.tensorish(e, frame):
                w.report("tensor-format", c, frame, [w.fixes.guard(stmt_of(node, frame.ix.src), frame)])


RULE = SourceRule(
    id="capture-item-sync",
    hazards=(Hazard("item-call"), Hazard("host-scalar-conversion"), Hazard("tensor-format")),
    claims=(Claim(10, _item), Claim(20, _conversion), Claim(30, _comparison)),
    on_node={"string": (_fstring,)},
)
