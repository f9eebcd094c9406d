"""rng-state-api-in-capture (DPX402): reading the RNG state (`torch.cuda.get_rng_state()`) inside a capture."""

from __future__ import annotations

from denpex.source.rules._api import CallSite, Claim, Hazard, SourceRule, Walk

GET_STATE_FUNCS = frozenset({"torch.get_rng_state", "torch.cuda.get_rng_state", "torch.cuda.get_rng_state_all",
                             "torch.random.get_rng_state"})


def _get_state(w: Walk, c: CallSite) -> bool:
    if c.qualname not in GET_STATE_FUNCS:
        return False
    w.report("rng-state-get", c.node, c.frame, [w.fixes.move_before_capture(c.stmt, c.direct)])
    return True


RULE = SourceRule(
    id="rng-state-api-in-capture",
    hazards=(Hazard("rng-state-get", eager_fallback=False),),
    claims=(Claim(140, _get_state),),
)
