"""lazy-init-cublas (DPX502): the first cuBLAS call (matmul, linear) of a process inside a capture: cuBLAS
initialises its workspace, which a capture cannot; warm up on a side stream first."""

from __future__ import annotations

from denpex.source.rules._api import CallSite, Hazard, SourceRule, Walk
from denpex.source.rules._lazy_init import first_use


def _first_use(w: Walk, c: CallSite) -> None:
    first_use(w, c, "cublas", "cublas-first-use")


RULE = SourceRule(
    id="lazy-init-cublas",
    hazards=(Hazard("cublas-first-use"),),
    on_call=(_first_use,),
)
