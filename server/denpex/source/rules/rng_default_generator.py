"""rng-default-generator (DPX403, info): random ops on the default CUDA generator inside a capture are legal
(PyTorch registers it); reported once per capture, at the first one."""

from __future__ import annotations

from denpex.source.resolve.index import kwarg
from denpex.source.rules._api import CallSite, Hazard, SourceRule, Walk
from denpex.source.rules._calls import op_entry

_ID = "rng-default-generator"


def _default_rng(w: Walk, c: CallSite) -> None:
    """A call PyTorch tags `nondeterministic_seeded` (or whose spelling reaches one, F.dropout), for the arguments
    given: `F.dropout(x, training=False)` and `scaled_dot_product_attention` without dropout_p draw nothing."""
    if op_entry(w, c, "random") is None:
        return
    if w.state.get(_ID) or w.region.kind in ("graphed_callables", "entry") or kwarg(c.ix, c.node, "generator") is not None:
        return
    w.state[_ID] = True
    w.report("default-generator-rng", c.node, c.frame)


RULE = SourceRule(
    id=_ID,
    hazards=(Hazard("default-generator-rng", eager_fallback=False),),
    on_call=(_default_rng,),
)
