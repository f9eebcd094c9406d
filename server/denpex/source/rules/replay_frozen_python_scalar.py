"""replay-frozen-python-scalar (DPX303): a Python scalar read by the capture and changed afterwards: the graph
baked its value at capture; replays never see the change."""

from __future__ import annotations

from tree_sitter import Node

from denpex.source.capture.regions import CaptureRegion
from denpex.source.engine.around import union
from denpex.source.engine.hits import Hit
from denpex.source.fixes import edits as F
from denpex.source.model import Fix
from denpex.source.rules._api import Around, Hazard, RegionScan, SourceRule

_HAZARD = "python-scalar-baked"


def _baked(scan: RegionScan) -> None:
    side = scan.replay_side
    if side is None:
        return
    region = scan.region
    for name, node in side.inputs.items():
        if name not in side.inputs_q or side.kind_cat(node) != "scalar":
            continue
        later = union([side.followed("rebind", [name]), side.followed("aug", [name])])
        if later and (_HAZARD, later[0].id) not in side.seen:
            side.seen.add((_HAZARD, later[0].id))
            fx = _scalar_fix(region, name, later)
            scan.sink(Hit(_HAZARD, region.ix, later[0], region, (), [fx] if fx else []))


def _scalar_fix(region: CaptureRegion, name: str, later: list[Node]) -> Fix | None:
    ix = region.ix
    assign, _scope, _p = ix.lookup(name, region.anchor)
    if assign is None or assign.value is None or assign.stmt.type != "assignment" or (
        assign.start_byte >= region.anchor.start_byte or any(n.id == assign.stmt.id for n in later)
    ):
        return None
    t = F.torch_alias(ix)
    edits = [F.replace_node(ix, assign.value, f'{t}.full((), {ix.text(assign.value)}, device="cuda")')]
    for n in later:
        right = n.child_by_field_name("right")
        if right is None:
            return None
        if n.type == "assignment":
            edits.append(F.replace_node(ix, n, f"{name}.fill_({ix.text(right)})"))
        else:
            op = next((c for c in n.children if not c.is_named), None)
            meth = {"+=": "add_", "-=": "sub_", "*=": "mul_", "/=": "div_"}.get(ix.text(op) if op is not None else "")
            if meth is None:
                return None
            edits.append(F.replace_node(ix, n, f"{name}.{meth}({ix.text(right)})"))
    return F.fix("Static buffer: keep the scalar in a 0-dim device tensor and update it in place (fill_())", "unsafe",
                 edits)


RULE = SourceRule(
    id="replay-frozen-python-scalar",
    hazards=(Hazard(_HAZARD),),
    around=(Around(130, _baked),),
)
