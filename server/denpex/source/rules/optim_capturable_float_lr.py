"""optim-capturable-float-lr (DPX412): a captured `opt.step()` whose optimizer has a Python-float `lr` that a
scheduler changes: the lr a replay uses is frozen at capture; keep it in a 0-dim CUDA tensor. Any optimizer class
(SGD has no capturable flag and captures all the same), not only capturable=True ones; an optimizer of a
capturable class built without capturable=True fails its captured step instead (optim-capturable-false).
Reported at the lr of a capturable=True constructor (the setting chosen for capture), else at the captured step."""

from __future__ import annotations

import re

from tree_sitter import Node

from denpex.source.engine.facts import has_scheduler
from denpex.source.fixes import edits as F
from denpex.source.resolve import callsites
from denpex.source.resolve.index import FileIndex, kwarg, positional
from denpex.source.resolve.value_types import Lib
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
        _built_elsewhere(w, c, c.ix.text(c.receiver), home, rk.node)
        return
    ix, ctor = c.ix, rk.node
    lr = _float_lr_arg(ix, ctor)
    if lr is None:
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

def _float_lr_arg(ix: FileIndex, ctor: Node) -> Node | None:
    """The optimizer constructor's lr argument, when it is a Python number rather than a tensor."""
    pos = positional(ctor)
    lr = kwarg(ix, ctor, "lr") or (pos[1] if len(pos) > 1 else None)
    if lr is None or ix.kind(lr).cat == "tensor" or "tensor" in ix.text(lr).lower():
        return None
    return lr


def _built_elsewhere(w: Walk, c: CallSite, recv: str, home: FileIndex, ctor: Node) -> None:
    """The optimizer built with a float lr in another file (a factory) and stepped here, beside a scheduler that
    steps here too (`self.sched.step()` next to the captured `self.opt.step()`): most likely its own scheduler,
    so a warning; no fix (the constructor is in another file)."""
    lr = _float_lr_arg(home, ctor)
    if lr is None or not _scheduler_steps_here(w, c, recv) or _recaptured_on_lr_change(w):
        return
    w.report("capturable-float-lr", c.node, c.frame, [], severity="warning", message=(
        f"This captured {recv}.step() keeps lr={home.text(lr)} ({home.path}:{home.src.start(lr)[0] + 1}), a Python "
        "float, as it was at capture, while a scheduler steps in this file: if it is this optimizer's, its later "
        "changes never reach the replays (silently wrong); keep the learning rate in a 0-dim CUDA tensor"))


def _recaptured_on_lr_change(w: Walk) -> bool:
    """The function that holds the capture is called again under a condition on the lr (`if lr !=
    self.captured_lr: self.capture()`): each new lr gets its own graph."""
    r = w.region
    fn = r.ix.enclosing_function(r.anchor)
    if fn is None:
        return False
    for call in callsites.calls_named(r.ix, fn.name):
        p = call.parent
        while p is not None and p.type not in ("function_definition", "module"):
            if p.type in ("if_statement", "elif_clause"):
                cond = p.child_by_field_name("condition")
                if cond is not None and re.search(r"(?<!\w)lr(?!\w)", r.ix.text(cond)):
                    return True
            p = p.parent
    return False


def _scheduler_steps_here(w: Walk, c: CallSite, recv: str) -> bool:
    """Another object's `.step()` in the step's file is a learning-rate scheduler's (by its construction)."""
    ix = c.ix
    for call in callsites.calls_named(ix, "step"):
        f = call.child_by_field_name("function")
        obj = f.child_by_field_name("object") if f is not None and f.type == "attribute" else None
        if obj is None or ix.text(obj) == recv:
            continue
        libs = [v for v in w.resolver.values_of(ix, obj, c.frame.env) if isinstance(v, Lib)]
        # every construction it may come from is torch's scheduler (a factory's branches: StepLR or MultiStepLR)
        if libs and all(v.qualname.startswith("torch.optim.lr_scheduler.") for v in libs):
            return True
    return False


RULE = SourceRule(
    id="optim-capturable-float-lr",
    hazards=(Hazard("capturable-float-lr"),),
    on_call=(_float_lr,),
)
