"""optim-capturable-device (DPX411): capturable restored after `load_state_dict`, but `state["step"]` left on the
CPU: the captured step asserts that params and state steps are on supported devices."""

from __future__ import annotations

from denpex.source.rules._api import CallSite, Hazard, SourceRule, Walk
from denpex.source.rules._optimizer import report_loaded_state


def _step_on_cpu(w: Walk, c: CallSite) -> None:
    report_loaded_state(w, c, "optimizer-state-step-on-cpu")


RULE = SourceRule(
    id="optim-capturable-device",
    hazards=(Hazard("optimizer-state-step-on-cpu"),),
    on_call=(_step_on_cpu,),
)
