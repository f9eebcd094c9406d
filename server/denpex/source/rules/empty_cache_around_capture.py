"""empty-cache-around-capture (DPX306, info): `torch.cuda.empty_cache()` inside a capture or between a capture
and its replays — legal, but it cannot free the graph's private pool."""

from __future__ import annotations

from denpex.source.engine.hits import Hit
from denpex.source.rules._api import Around, CallSite, Claim, Hazard, RegionScan, SourceRule, Walk

_HAZARD = "empty-cache"


def _inside(w: Walk, c: CallSite) -> bool:
    if c.qualname != "torch.cuda.empty_cache":
        return False
    w.report(_HAZARD, c.node, c.frame)
    return True


def _after(scan: RegionScan) -> None:
    side = scan.replay_side
    if side is None:
        return
    ix = scan.region.ix
    for n in side.followed("empty_cache", [""]):
        f = n.child_by_field_name("function")
        if f is None or ix.qualname(f) != "torch.cuda.empty_cache" or (_HAZARD, n.id) in side.seen:
            continue
        side.seen.add((_HAZARD, n.id))
        scan.sink(Hit(_HAZARD, ix, n, scan.region))


RULE = SourceRule(
    id="empty-cache-around-capture",
    hazards=(Hazard(_HAZARD, eager_fallback=False),),
    claims=(Claim(150, _inside),),
    around=(Around(110, _after),),
)
