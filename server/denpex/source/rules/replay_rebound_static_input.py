"""replay-rebound-static-input (DPX300): after a capture, a captured input is rebound (`x = new`) instead of
copied into (`x.copy_(new)`) before a replay: the graph still reads the old storage. Also the runner shape of
vLLM / SGLang / TGI: a static buffer held on the instance (`self.static_x`) rebound in a method that replays."""

from __future__ import annotations

from denpex.source.capture.members import member_rebinding
from denpex.source.engine.hits import Hit
from denpex.source.fixes import edits as F
from denpex.source.rules._api import Around, Hazard, RegionScan, SourceRule

_HAZARD = "static-input-rebound"


def _rebound(scan: RegionScan) -> None:
    side = scan.replay_side
    if side is None:
        return
    ix = scan.region.ix
    cats: dict[str, str] = {}
    for n in side.followed("rebind", side.inputs_q):
        if (_HAZARD, n.id) in side.seen:
            continue
        left = n.child_by_field_name("left")
        right = n.child_by_field_name("right")
        stmt = n.parent if n.parent is not None and n.parent.type == "expression_statement" else None
        if left is None or right is None or stmt is None:
            continue
        name = ix.text(left)
        cat = cats.get(name)
        if cat is None:
            cat = cats[name] = side.kind_cat(side.inputs[name])
        if cat in ("tensor", "unknown") and side.kind_cat(left) != "scalar":
            fx = F.fix(f"Static buffer: {name}.copy_(...) into the captured tensor instead of rebinding {name}",
                       "unsafe", [F.replace_node(ix, n, f"{name}.copy_({ix.text(right)})")])
            side.seen.add((_HAZARD, n.id))
            scan.sink(Hit(_HAZARD, ix, n, scan.region, (), [fx] if fx else []))


def _members(scan: RegionScan) -> None:
    member_rebinding(scan.region, scan.sink)


RULE = SourceRule(
    id="replay-rebound-static-input",
    hazards=(Hazard(_HAZARD),),
    around=(Around(80, _rebound), Around(200, _members)),
)
