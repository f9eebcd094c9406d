"""lazy-init-cudnn (DPX503): the first cuDNN call (a convolution) of a process inside a capture: cuDNN
initialises its handle, which a capture cannot; warm up on a side stream first."""

from __future__ import annotations

from denpex.source.rules._api import CallSite, Hazard, SourceRule, Walk
from denpex.source.rules._lazy_init import first_use


def _first_use(w: Walk, c: CallSite) -> None:
    first_use(w, c, "cudnn", "cudnn-first-use")


RULE = SourceRule(
    id="lazy-init-cudnn",
    hazards=(Hazard("cudnn-first-use"),),
    on_call=(_first_use,),
)
