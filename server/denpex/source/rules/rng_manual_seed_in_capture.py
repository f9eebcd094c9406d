"""rng-manual-seed-in-capture (DPX401): seeding (`torch.manual_seed`, `gen.manual_seed`, `set_rng_state`)
inside a capture."""

from __future__ import annotations

from denpex.source.rules._api import CallSite, Claim, Hazard, SourceRule, Walk

SEED_FUNCS = frozenset({"torch.manual_seed", "torch.cuda.manual_seed", "torch.cuda.manual_seed_all", "torch.seed",
                        "torch.cuda.seed", "torch.cuda.seed_all", "torch.set_rng_state", "torch.cuda.set_rng_state",
                        "torch.cuda.set_rng_state_all", "torch.random.set_rng_state"})


def _seed(w: Walk, c: CallSite) -> bool:
    rk = c.receiver_kind
    if not (c.qualname in SEED_FUNCS or (c.method == "manual_seed" and rk is not None and rk.cat == "generator")):
        return False
    w.report("rng-seed-call", c.node, c.frame, [w.fixes.move_before_capture(c.stmt, c.direct)])
    return True


RULE = SourceRule(
    id="rng-manual-seed-in-capture",
    hazards=(Hazard("rng-seed-call"),),
    claims=(Claim(130, _seed),),
)
