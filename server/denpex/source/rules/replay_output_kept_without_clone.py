"""replay-output-kept-without-clone (DPX302): a captured output aliased (`prev = out`) after a replay: the next
replay overwrites what the alias shows."""

from __future__ import annotations

from denpex.source.engine.hits import Hit
from denpex.source.fixes import edits as F
from denpex.source.rules._api import Around, Hazard, RegionScan, SourceRule

_HAZARD = "static-output-aliased"


def _aliased(scan: RegionScan) -> None:
    side = scan.replay_side
    if side is None:
        return
    ix = scan.region.ix
    for n in side.followed("alias", side.outputs_q):
        if (_HAZARD, n.id) in side.seen:
            continue
        rr = n.child_by_field_name("right")
        if rr is not None and side.first_replay < n.start_byte:
            fx = F.fix("Clone the static output before the next replay", "unsafe",
                       [F.replace_node(ix, rr, f"{ix.text(rr)}.clone()")])
            side.seen.add((_HAZARD, n.id))
            scan.sink(Hit(_HAZARD, ix, n, scan.region, (), [fx] if fx else []))


RULE = SourceRule(
    id="replay-output-kept-without-clone",
    hazards=(Hazard(_HAZARD),),
    around=(Around(90, _aliased),),
)
