"""optim-capturable-float-lr (DPX412): a captured `opt.step()` whose optimizer has a Python-float `lr` that a
scheduler changes: the lr a replay uses is frozen at capture; keep it in a 0-dim CUDA tensor. Any optimizer class
(SGD has no capturable flag and captures all the same), not only capturable=True ones; an optimizer of a
capturable class built without capturable=True fails its captured step instead (optim-capturable-false).
Reported at the lr of a capturable=True constructor (the setting chosen for capture), else at the captured step."""

from __future__ import annotations

from denpex.source.engine.facts import has_scheduler
from denpex.source.fixes import edits as F
from denpex.source.resolve.index import kwarg, positional
from denpex.source.rules._api import CallSite, Hazard, SourceRule, Walk
from denpex.source.rules._optimizer import optimizer_step


def _float_lr(w: Walk, c: CallSite) -> None:
    rk = c.receiver_kind
    if c.method != "step" or c.receiver is None or rk is None or rk.cat != "optimizer" or rk.node is None:
        return
    step = optimizer_step(c)
    if step is not None and not step.capturable_true:
        return
    home = rk.home or c.ix
    if home is not c.ix:
        return
    ix, ctor = c.ix, rk.node
    pos = positional(ctor)
    lr = kwarg(ix, ctor, "lr") or (pos[1] if len(pos) > 1 else None)
    if lr is None or ix.kind(lr).cat == "tensor" or "tensor" in ix.text(lr).lower():
        return
    if not has_scheduler(ix, c.receiver):
        return
    new = f'{F.torch_alias(ix)}.tensor({ix.text(lr)}, device="cuda")'
    fx = F.fix("Static buffer: keep the learning rate in a 0-dim CUDA tensor", "unsafe",
               [F.replace_node(ix, lr, new)], in_place=True)
    if step is not None:  # capturable=True beside the float lr in the constructor: the setting to change
        w.report("capturable-float-lr", lr, c.frame, [fx])
        return
    w.report("capturable-float-lr", c.node, c.frame, [fx], message=(
        f"This captured {ix.text(c.receiver)}.step() keeps lr={ix.text(lr)} (line {ix.src.start(lr)[0] + 1}), a "
        "Python float, as it was at capture: the scheduler's later changes never reach the replays (silently "
        "wrong); keep the learning rate in a 0-dim CUDA tensor"))

RULE = SourceRule(
    id="optim-capturable-float-lr",
    hazards=(Hazard("capturable-float-lr"),),
    on_call=(_float_lr,),
)
