"""The captured `opt.step()` of a capturable optimizer class, and what `load_state_dict` does to it (shared by
the optim-capturable-* rules)."""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from denpex.source.capture.regions import CaptureRegion, _string_value
from denpex.source.engine.facts import capturable_optimizer, dead_code, fresh_name_in, truthy
from denpex.source.engine.hits import Hit, stmt_of
from denpex.source.fixes import edits as F
from denpex.source.model import Fix, Severity
from denpex.source.resolve.index import FileIndex, kwarg
from denpex.source.rules._api import CallSite, Walk
from denpex.source.syntax.mentions import identifiers
from denpex.source.syntax.parse import run_query

_SUBSCRIPT_ASSIGNS = "(assignment left: (subscript subscript: (string) @key)) @assign"


@dataclass(frozen=True)
class Step:
    ctor: Node  # the optimizer's construction call
    capturable: Node | None  # its capturable= argument
    capturable_true: bool
    home: FileIndex  # the file of the construction (a factory's file, or the step's own)


def optimizer_step(c: CallSite) -> Step | None:
    """`opt.step()` where `opt` was built by a capturable optimizer class (Adam, AdamW, ...), here or by a factory
    in another file."""
    rk = c.receiver_kind
    if c.method != "step" or c.receiver is None or rk is None or rk.cat != "optimizer":
        return None
    home = rk.home or c.ix
    if not capturable_optimizer(home, rk) or rk.node is None:
        return None
    cap = kwarg(home, rk.node, "capturable")
    return Step(rk.node, cap, cap is not None and truthy(home, cap), home)


@dataclass(frozen=True)
class LoadedState:
    hazard: str  # optimizer-capturable-reset-by-load | optimizer-state-step-on-cpu
    load: Node
    fix: Fix | None
    severity: Severity | None
    message: str


def loaded_state(region: CaptureRegion, ctor: Node) -> LoadedState | None:
    """An optimizer built with capturable=True, then `opt.load_state_dict(...)` before the capture that steps it:
    loading a checkpoint of a non-capturable optimizer sets param_groups' capturable back to False (DPX410) and
    leaves state["step"] on the CPU (DPX411, once the flag alone is restored)."""
    ix = region.ix
    parent = ctor.parent
    if parent is None or parent.type != "assignment" or parent.child_by_field_name("right") != ctor:
        return None
    left = parent.child_by_field_name("left")
    if left is None or left.type != "identifier":
        return None
    name = ix.text(left)
    scope = ix.scope_of(ctor).node
    body = scope if scope.type == "module" else scope.child_by_field_name("body")
    if body is None:
        return None
    if scope.type != "module":
        ix.touched.append((scope.start_byte, scope.end_byte))
    same = ix.scope_of(region.anchor).node.id == scope.id
    limit = region.anchor.start_byte if same else body.end_byte
    load: Node | None = None
    for n in identifiers(ix, name, ctor.end_byte, limit):
        p = n.parent
        if p is None or p.type != "attribute" or p.child_by_field_name("object") != n:
            continue
        attr = p.child_by_field_name("attribute")
        call = p.parent
        if attr is None or ix.text(attr) != "load_state_dict" or call is None or call.type != "call":
            continue
        if ix.scope_of(n).node.id == scope.id and not dead_code(ix, call):
            load = call
    if load is None:
        return None
    for n in identifiers(ix, name, load.end_byte, limit):  # handed to code we cannot see after the load
        p = n.parent
        call = p.parent if p is not None and p.type == "argument_list" else None
        if call is not None and call.type == "call" and ix.scope_of(n).node.id == scope.id:
            f = call.child_by_field_name("function")
            q = ix.qualname(f) if f is not None else None
            if q is not None and q.split(".", 1)[0] not in ("torch", "print", "copy"):
                fn = f if f is not None and f.type == "identifier" else None
                if fn is not None:
                    ix.src.need_def(ix.text(fn))
                if fn is None or not any(fi.name == ix.text(fn) and fi.class_name is None for fi in ix.functions):
                    return None
    flag, steps = _restores(ix, load, limit)
    if flag and steps:
        return None
    known = _saved_by_noncapturable(ix)
    sev: Severity | None = None if known else "warning"
    stmt = stmt_of(load, ix.src)
    torch = F.torch_alias(ix)
    lines: list[str] = []
    if not flag:
        g = fresh_name_in(ix, "opt_group")
        lines += [f"for {g} in {name}.param_groups:", f'    {g}["capturable"] = True']
    if not steps:
        st = fresh_name_in(ix, "opt_state")
        lines += [f"for {st} in {name}.state.values():",
                  f'    {st}["step"] = {st}["step"].to(device="cuda", dtype={torch}.float32)']
    fx = F.fix("Restore capturable after load_state_dict" if not flag else "Move state['step'] to the GPU after load_state_dict",
               "unsafe", [F.insert_after_statement(ix, stmt, lines)]) if stmt.parent is not None and stmt.parent.type in ("module", "block") else None
    origin = "" if known else " (when the checkpoint was saved by an optimizer with capturable=False)"
    if not flag:
        msg = ("load_state_dict() takes the saved param_groups: loading a non-capturable checkpoint sets capturable "
               f"back to False{origin}, and the captured {name}.step() raises; set group['capturable'] = True again and "
               "move state['step'] to the GPU")
        return LoadedState("optimizer-capturable-reset-by-load", load, fx, sev, msg)
    msg = ("capturable is restored after load_state_dict(), but state['step'] stays where the checkpoint put "
           f"it, on the CPU{origin}: the first step asserts 'params and state_steps must be on supported "
           "devices'; move every state['step'] to the GPU as float32")
    return LoadedState("optimizer-state-step-on-cpu", load, fx, sev, msg)


def _restores(ix: FileIndex, load: Node, limit: int) -> tuple[bool, bool]:
    """(flag restored, steps moved) after the `load_state_dict` call `load`: `x["capturable"] = ...` and
    `x["step"] = ...` assignments (live, after the call in its scope and before byte `limit`, or anywhere in
    another function: a helper is given the benefit of the doubt), or `capturable=True` passed to a call."""
    flag = steps = False
    scope = ix.scope_of(load).node
    for quoted in ('"capturable"', "'capturable'", '"step"', "'step'"):
        ix.src.need_word(quoted, whole=False)
    caps = run_query(_SUBSCRIPT_ASSIGNS, ix.src.root)
    for assign, key in zip(caps.get("assign", []), caps.get("key", []), strict=False):
        which = _string_value(ix, key)
        if which not in ("capturable", "step"):
            continue
        owner = ix.scope_of(assign).node
        if owner.id == scope.id:
            if not (load.end_byte <= assign.start_byte < limit) or dead_code(ix, assign):
                continue
        else:
            ix.touched.append((owner.start_byte, owner.end_byte))
        if which == "capturable":
            flag = True
        else:
            steps = True
    if not flag:
        for call in run_query("(call) @call", ix.src.root).get("call", []):
            if load.end_byte <= call.start_byte < limit and ix.scope_of(call).node.id == scope.id:
                cap = kwarg(ix, call, "capturable")
                if cap is not None and truthy(ix, cap) and not dead_code(ix, call):
                    flag = True
                    break
    return flag, steps


def _saved_by_noncapturable(ix: FileIndex) -> bool:
    """The file saves the state of an optimizer built without capturable=True (`old.state_dict()`)."""
    ix.src.need_word("state_dict")
    for call in run_query("(call) @call", ix.src.root).get("call", []):
        f = call.child_by_field_name("function")
        if f is None or f.type != "attribute" or ix.text(f.child_by_field_name("attribute") or f) != "state_dict":
            continue
        obj = f.child_by_field_name("object")
        k = ix.kind(obj) if obj is not None else None
        if k is not None and k.cat == "optimizer" and capturable_optimizer(ix, k) and k.node is not None:
            cap = kwarg(ix, k.node, "capturable")
            if cap is None or not truthy(ix, cap):
                return True
    return False


def report_loaded_state(w: Walk, c: CallSite, hazard: str) -> None:
    """Report `hazard` when `loaded_state` of this captured step finds it (the two optim-capturable rules each
    report their own outcome of that one analysis)."""
    step = optimizer_step(c)
    found = loaded_state_of(w.state, w.region, c, step) if step is not None else None
    if found is not None and found.hazard == hazard:
        w.sink(Hit(found.hazard, c.ix, found.load, w.region, (), [found.fix] if found.fix else [], found.severity,
                   found.message))


def loaded_state_of(state: dict[object, object], region: CaptureRegion, c: CallSite, step: Step) -> LoadedState | None:
    """`loaded_state` of a captured step of a capturable optimizer in the capture's own file, computed once per
    region and constructor (two rules read it)."""
    if not step.capturable_true or c.ix is not region.ix or step.home is not c.ix or not c.ix.has(b"load_state_dict"):
        return None
    key = f"optimizer-loaded-state:{step.ctor.id}"
    if key not in state:
        state[key] = loaded_state(region, step.ctor)
    found = state[key]
    return found if isinstance(found, LoadedState) else None
