"""capture-item-sync (DPX101): `.item()`, `float(t)` / `int(t)` / `bool(t)`, `torch.equal`, an f-string of a
tensor inside a capture: a host read of a GPU value, which synchronises (CUDA 900)."""

from __future__ import annotations

from tree_sitter import Node

from denpex.source import ops
from denpex.source.engine.hits import stmt_of
from denpex.source.fixes import edits as F
from denpex.source.model import TextEdit
from denpex.source.ops import OpEntry, summaries
from denpex.source.rules._api import CallSite, Claim, Frame, Hazard, SourceRule, Walk
from denpex.source.rules._calls import imported_root, on_tensor, op_args, op_entry, shown

# host reads other detectors of this or other rules own: .item() (its own fix), .tolist()/.numpy() (a copy,
# capture-host-copy), and the sizes of dynamic-shape ops (capture-dynamic-shape-op)
_OWNED_ELSEWHERE = frozenset({"Tensor.item", "Tensor.tolist", "Tensor.numpy"})


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
    """`int(t)`, `float(t)`, `bool(t)`, `complex(t)`: the builtins the op tables list as reaching
    aten::_local_scalar_dense for a tensor argument."""
    if c.qualname not in _BUILTINS or len(c.args) != 1 or op_entry(w, c, "host_sync") is None:
        return False
    ix = c.ix
    w.report("host-scalar-conversion", c.node, c.frame, [
        F.fix(f"Static buffer: keep the value on the device as a 0-dim tensor (drop {c.qualname}())", "unsafe",
              [F.replace_node(ix, c.node, ix.text(c.args[0]))], in_place=True),
    ])
    return True


def _comparison(w: Walk, c: CallSite) -> bool:
    """Ops that return a Python value read on the host (aten::equal / allclose, data_dependent_output), reach
    one (is_nonzero), or check their result on the host (torch.linalg without _ex): the op tables' host syncs,
    methods only on a value known to be a tensor."""
    found = op_entry(w, c, "host_sync", strict=True)
    if found is None or found[0] in _OWNED_ELSEWHERE or (c.method is None and c.qualname in _BUILTINS):
        return False
    name, entry = found
    if ops.tables().lookup("dynamic_shape", name) is not None:
        return False  # capture-dynamic-shape-op's
    message = None if name in _NAMED else (
        f"`{shown(name)}` reads a GPU value on the host inside a CUDA-graph capture"
        f"{_why(entry)}, which synchronises and fails (CUDA 900)")
    w.report("host-scalar-conversion", c.node, c.frame, message=message)
    return True


_BUILTINS = frozenset({"int", "float", "bool", "complex"})
# what the rule's message named before the op tables: their findings keep its wording
_NAMED = frozenset({"torch.equal", "torch.allclose", "torch.is_nonzero", "Tensor.is_nonzero"})


def _why(entry: OpEntry) -> str:
    if entry.via == "docstring":
        return " (its documentation says it synchronises with the CPU)"
    if entry.via == "measured":
        return " (its capture failed on an H200: bench/results_op_tables_h200.json)"
    return f" (aten::{entry.aten[0].split('.', 1)[0]})" if entry.aten else ""


def _torch_function(w: Walk, c: CallSite) -> bool:
    """A call into torch's own Python code (torch.nn.utils, torch.distributions, torch.nn.functional, ...) that
    reads a GPU value on the host for the arguments given, by the summaries generated from torch's source
    (`source/ops/summaries.py`): `clip_grad_norm_(ps, 1.0, error_if_nonfinite=True)`, `Normal(mu, sd)` (its
    argument validation). A read that depends on an argument this call leaves open is a warning."""
    q = c.qualname
    if q is None or not q.startswith("torch.") or (c.method is not None and not imported_root(c.ix, c.func)):
        return False
    s = summaries.summary(q) or summaries.summary(f"{q}.__init__")
    if s is None:
        return False
    args = op_args(w, c)
    judged = [j for j in s.judge([a or "" for a in args.positional], args.keywords)
              if j.hazard.kind in ("host_sync", "dynamic_shape", "explicit_sync")]
    if not judged:
        return False
    j = judged[0]
    h = j.hazard
    where = f"{h.at}: `{h.what}`" + (f", through {' -> '.join(h.via)}" if h.via else "")
    cond = "" if j.sure else f" (if {' and '.join(f'`{x}`' for x in j.left)})"
    w.report("host-scalar-conversion", c.node, c.frame, severity=None if j.sure else "warning", message=(
        f"`{q}` reads a GPU value on the host ({where}) inside a CUDA-graph capture, which synchronises and "
        f"fails (CUDA 900){cond}"))
    return True


def _fstring(w: Walk, node: Node, frame: Frame) -> None:
    for c in node.named_children:
        if c.type == "interpolation":
            e = c.child_by_field_name("expression")
            if e is not None and w.tensorish(e, frame):
                w.report("tensor-format", c, frame, [w.fixes.guard(stmt_of(node, frame.ix.src), frame)])


RULE = SourceRule(
    id="capture-item-sync",
    hazards=(Hazard("item-call"), Hazard("host-scalar-conversion"), Hazard("tensor-format")),
    claims=(Claim(10, _item), Claim(20, _conversion), Claim(30, _comparison), Claim(200, _torch_function)),
    on_node={"string": (_fstring,)},
)
