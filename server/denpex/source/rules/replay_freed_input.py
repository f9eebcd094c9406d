"""replay-freed-input (DPX301): a captured input deleted (`del x`) before a replay: its memory may be reused
while the graph still reads it."""

from __future__ import annotations

from denpex.source.engine.hits import Hit
from denpex.source.fixes import edits as F
from denpex.source.rules._api import Around, Hazard, RegionScan, SourceRule
from denpex.source.syntax.parse import walk

_HAZARD = "static-input-deleted"


def _deleted(scan: RegionScan) -> None:
    side = scan.replay_side
    if side is None:
        return
    ix = scan.region.ix
    for n in side.followed("dels", side.inputs):
        if (_HAZARD, n.id) in side.seen:
            continue
        targets = [c for c in walk(n) if c.type == "identifier"]
        for tnode in targets:
            if ix.text(tnode) in side.inputs:
                d = F.delete_statement(ix, n) if len(targets) == 1 else None
                fx = F.fix("Keep the captured input alive (drop the del)", "unsafe", [d] if d else None)
                side.seen.add((_HAZARD, n.id))
                scan.sink(Hit(_HAZARD, ix, n, scan.region, (), [fx] if fx else []))


RULE = SourceRule(
    id="replay-freed-input",
    hazards=(Hazard(_HAZARD),),
    around=(Around(100, _deleted),),
)
