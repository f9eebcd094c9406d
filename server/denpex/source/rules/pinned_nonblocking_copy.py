"""pinned-nonblocking-copy (DPX307, info): `t.to("cuda", non_blocking=True)` of a pinned host tensor inside a
capture — legal: the copy is captured and re-reads the pinned buffer on every replay."""

from __future__ import annotations

from denpex.source.rules._api import CallSite, Claim, Hazard, SourceRule, Walk
from denpex.source.rules._calls import host_to_device_move, pinned_non_blocking


def _pinned_copy(w: Walk, c: CallSite) -> bool:
    if not host_to_device_move(c) or not pinned_non_blocking(c):
        return False
    w.report("pinned-nonblocking-copy", c.node, c.frame)
    return True


RULE = SourceRule(
    id="pinned-nonblocking-copy",
    hazards=(Hazard("pinned-nonblocking-copy", eager_fallback=False),),
    claims=(Claim(120, _pinned_copy),),
)
