"""capture-gradscaler-step (DPX118): `scaler.step(opt)` / `scaler.update()` inside a capture: both read the
found-inf flag on the host."""

from __future__ import annotations

from tree_sitter import Node

from denpex.source.engine.facts import next_stmt, prev_stmt
from denpex.source.fixes import edits as F
from denpex.source.model import Fix
from denpex.source.rules._api import CallSite, Claim, Hazard, SourceRule, Walk


def _scaler(w: Walk, c: CallSite) -> bool:
    rk = c.receiver_kind
    if c.method not in ("step", "update") or rk is None or rk.cat != "scaler":
        return False
    w.report("gradscaler-step", c.node, c.frame, [_after_replay_fix(w, c.stmt, c.direct)])
    return True


def _after_replay_fix(w: Walk, stmt: Node, direct: bool) -> Fix | None:
    """Run `scaler.step(opt)` (with the `scaler.update()` after it) eagerly after each replay."""
    region = w.region
    if not direct or region.kind not in ("graph", "wrapper"):
        return None
    ix = region.ix
    ids = {s.id for s in region.stmts}
    group = [stmt]
    nxt = next_stmt(stmt)
    if nxt is not None and nxt.id in ids and ".update(" in ix.text(nxt) and ".step(" in ix.text(stmt):
        group.append(nxt)
    prev = prev_stmt(stmt)
    if ".update(" in ix.text(stmt) and prev is not None and prev.id in ids and ".step(" in ix.text(prev):
        return None  # the step's fix moves both
    if len(group) == len(region.stmts):
        return None
    edits = w.fixes.after_each_replay(group)
    return F.fix("Run scaler.step()/update() eagerly after each replay", "unsafe", edits)


RULE = SourceRule(
    id="capture-gradscaler-step",
    hazards=(Hazard("gradscaler-step"),),
    claims=(Claim(170, _scaler),),
)
