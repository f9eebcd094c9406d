"""optim-capturable-device (DPX411): capturable restored after `load_state_dict`, but `state["step"]` left on the
CPU: the captured step asserts that params and state steps are on supported devices."""

from __future__ import annotations

from denpex.source.hits import Hit
from denpex.source.rules._api import CallSite, Hazard, SourceRule, Walk
from denpex.source.rules._optimizer import loaded_state_of, optimizer_step


def _step_on_cpu(w: Walk, c: CallSite) -> None:
    step = optimizer_step(c)
    found = loaded_state_of(w.state, w.region, c, step) if step is not None else None
    if found is not None and found.hazard == "optimizer-state-step-on-cpu":
        w.sink(Hit(found.hazard, c.ix, found.load, w.region, (), [found.fix] if found.fix else [], found.severity,
                   found.message))


RULE = SourceRule(
    id="optim-capturable-device",
    hazards=(Hazard("optimizer-state-step-on-cpu"),),
    on_call=(_step_on_cpu,),
)
