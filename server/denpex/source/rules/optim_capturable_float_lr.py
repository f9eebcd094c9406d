"""optim-capturable-float-lr (DPX412): a capturable optimizer with a Python-float `lr` and a scheduler: the lr a
replay uses is frozen at capture; keep it in a 0-dim CUDA tensor."""

from __future__ import annotations

from denpex.source.engine.facts import has_scheduler
from denpex.source.fixes import edits as F
from denpex.source.resolve.index import kwarg
from denpex.source.rules._api import CallSite, Hazard, SourceRule, Walk
from denpex.source.rules._optimizer import optimizer_step


def _float_lr(w: Walk, c: CallSite) -> None:
    step = optimizer_step(c)
    if step is None or not step.capturable_true or c.receiver is None or step.home is not c.ix:
        return
    ix = c.ix
    lr = kwarg(ix, step.ctor, "lr")
    if lr is not None and ix.kind(lr).cat == "scalar" and has_scheduler(ix, c.receiver):
        new = f'{F.torch_alias(ix)}.tensor({ix.text(lr)}, device="cuda")'
        w.report("capturable-float-lr", lr, c.frame,
                 [F.fix("Static buffer: keep the learning rate in a 0-dim CUDA tensor", "unsafe",
                        [F.replace_node(ix, lr, new)], in_place=True)])


RULE = SourceRule(
    id="optim-capturable-float-lr",
    hazards=(Hazard("capturable-float-lr"),),
    on_call=(_float_lr,),
)
