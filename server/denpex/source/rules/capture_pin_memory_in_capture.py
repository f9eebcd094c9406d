"""capture-pin-memory-in-capture (DPX800): pinned host memory allocated inside a capture — `t.pin_memory()`, or a
factory with `pin_memory=True` — calls cudaHostAlloc (and the pinned-block cache queries events), which a capture
forbids: CUDA 900, and the capture is invalidated."""

from __future__ import annotations

from denpex.source.index import kwarg
from denpex.source.rules._api import CallSite, Claim, Hazard, SourceRule, Walk
from denpex.source.rules._calls import on_tensor

_FACTORIES = frozenset({"torch.empty", "torch.zeros", "torch.ones", "torch.full", "torch.empty_like",
                        "torch.zeros_like", "torch.ones_like", "torch.full_like", "torch.tensor", "torch.as_tensor",
                        "torch.empty_strided", "torch.randn", "torch.rand"})


def _pin(w: Walk, c: CallSite) -> bool:
    if c.method == "pin_memory" and not c.args and on_tensor(c):
        pass
    elif c.qualname in _FACTORIES:
        flag = kwarg(c.ix, c.node, "pin_memory")
        if flag is None or c.ix.text(flag) != "True":
            return False
    else:
        return False
    # allocating the staging buffer once, before the capture, is the fix; the statement may read names the
    # capture binds, so moving it changes behaviour (unsafe)
    w.report("pin-memory-call", c.node, c.frame, [w.fixes.hoist(c.stmt, c.direct, c.node, safe=False)])
    return True


RULE = SourceRule(
    id="capture-pin-memory-in-capture",
    hazards=(Hazard("pin-memory-call"),),
    claims=(Claim(45, _pin),),
)
