"""optim-capturable-false (DPX410): a captured `opt.step()` of an optimizer built without `capturable=True`, or
whose `load_state_dict` set capturable back to False."""

from __future__ import annotations

from denpex.source.fixes import edits as F
from denpex.source.model import TextEdit
from denpex.source.rules._api import CallSite, Claim, Hazard, SourceRule, Walk
from denpex.source.rules._optimizer import optimizer_step, report_loaded_state


def _step(w: Walk, c: CallSite) -> bool:
    """Takes every captured step of a capturable optimizer class; reports the ones built without the flag."""
    step = optimizer_step(c)
    if step is None:
        return False
    if step.capturable_true:
        return True
    if step.home is not c.ix:  # built by a factory in another file: the fix would edit that file
        line = step.home.src.start(step.ctor)[0] + 1
        w.report("optimizer-not-capturable", c.node, c.frame, message=(
            f"This optimizer is built without capturable=True at {step.home.path}:{line}; its step() inside a "
            "CUDA-graph capture raises (pass capturable=True there)"))
        return True
    ix, ctor, cap = c.ix, step.ctor, step.capturable
    edit: TextEdit
    if cap is not None:
        edit = F.replace_node(ix, cap, "True")
    else:
        args = ctor.child_by_field_name("arguments")
        if args is None:
            return True
        el, ec = ix.src.end(args)
        inner = [a for a in args.named_children if a.type != "comment"]
        sep = ", " if inner else ""
        if inner and ix.text(args).rstrip()[:-1].rstrip().endswith(","):
            sep = " "
        edit = TextEdit(el, ec - 1, el, ec - 1, f"{sep}capturable=True")
    w.report("optimizer-not-capturable", c.node, c.frame,
             [F.fix("Create the optimizer with capturable=True", "safe", [edit], in_place=True)])
    return True


def _reset_by_load(w: Walk, c: CallSite) -> None:
    report_loaded_state(w, c, "optimizer-capturable-reset-by-load")


RULE = SourceRule(
    id="optim-capturable-false",
    hazards=(Hazard("optimizer-not-capturable"), Hazard("optimizer-capturable-reset-by-load")),
    claims=(Claim(160, _step),),
    on_call=(_reset_by_load,),
)
