"""capture-print-tensor (DPX111): printing or logging a tensor inside a capture formats its values on the host
(a sync)."""

from __future__ import annotations

from denpex.source.engine.facts import logging_level_low
from denpex.source.model import Severity
from denpex.source.rules._api import CallSite, Claim, Hazard, SourceRule, Walk
from denpex.source.rules._calls import any_tensor, is_log_call


def _print(w: Walk, c: CallSite) -> bool:
    if c.qualname != "print" or not any_tensor(w, c.args, c.frame):
        return False
    w.report("print-tensor", c.node, c.frame, [w.fixes.guard(c.stmt, c.frame)])
    return True


def _log(w: Walk, c: CallSite) -> bool:
    if not is_log_call(c) or not any_tensor(w, c.args[1:], c.frame):
        return False
    # a record below the logger's level is never formatted: an error only when the file lowers the level
    sev: Severity = "error" if logging_level_low(c.ix.src.text) else "warning"
    w.report("log-tensor", c.node, c.frame, [w.fixes.guard(c.stmt, c.frame)], severity=sev,
             message=None if sev == "error" else "Logging a tensor inside a CUDA-graph capture formats it (a host "
             "sync) as soon as the level lets the record through")
    return True


RULE = SourceRule(
    id="capture-print-tensor",
    hazards=(Hazard("print-tensor"), Hazard("log-tensor")),
    claims=(Claim(50, _print), Claim(60, _log)),
)
