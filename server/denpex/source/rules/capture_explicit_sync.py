"""capture-explicit-sync (DPX114): `torch.cuda.synchronize()`, `stream.synchronize()`, `event.query()` inside a
capture: a sync on a capturing stream is illegal (CUDA 900)."""

from __future__ import annotations

from denpex.source.rules._api import CallSite, Claim, Hazard, SourceRule, Walk


def _sync(w: Walk, c: CallSite) -> bool:
    rk, recv = c.receiver_kind, c.receiver
    if not (c.qualname == "torch.cuda.synchronize" or (c.method in ("synchronize", "query") and (
        (rk is not None and rk.cat in ("stream", "event")) or (
            recv is not None and recv.type == "call" and "stream" in c.ix.text(recv))
    ))):
        return False
    w.report("cuda-synchronize", c.node, c.frame,
             [w.fixes.guard(c.stmt, c.frame), w.fixes.move_after_replay(c.stmt, c.direct)])
    return True


RULE = SourceRule(
    id="capture-explicit-sync",
    hazards=(Hazard("cuda-synchronize"),),
    claims=(Claim(70, _sync),),
)
