"""replay-python-side-effects (DPX304): Python work inside a capture runs once, at capture; replays run only the
recorded kernels — `print`, logging, timers, appending to a container that outlives the capture, counters."""

from __future__ import annotations

from tree_sitter import Node

from denpex.source.engine.hits import stmt_of
from denpex.source.rules._api import CallSite, Claim, Frame, Hazard, SourceRule, Walk
from denpex.source.rules._calls import any_tensor, is_global_container, is_log_call

TIMERS = frozenset({"time.time", "time.perf_counter", "time.monotonic", "time.process_time", "time.time_ns",
                    "time.perf_counter_ns"})
_HAZARD = "python-side-effect"


def _library_diagnostic(w: Walk) -> bool:
    """Under library mode (a preset's or a glob's functions that the library's users capture) a print or a log
    call is the library's own diagnostic: running once at capture changes nothing in the user's graph, and the
    user who chose to capture can neither see it as theirs nor change it."""
    ep = w.region.entry
    return ep is not None and ep.users


def _print(w: Walk, c: CallSite) -> bool:
    if c.qualname != "print" or any_tensor(w, c.args, c.frame):
        return False  # printing a tensor is capture-print-tensor's
    if _library_diagnostic(w):
        return True
    w.report(_HAZARD, c.node, c.frame, [w.fixes.move_after_replay(c.stmt, c.direct)],
             message="`print` inside a CUDA-graph capture runs once, at capture; replays never print")
    return True


_DEBUG_LEVEL = frozenset({"debug"})


def _log(w: Walk, c: CallSite) -> bool:
    if not is_log_call(c) or any_tensor(w, c.args[1:], c.frame):
        return False
    if _library_diagnostic(w) or c.method in _DEBUG_LEVEL:
        # a debug record is a developer's trace of what the code decided, and at capture it says what the graph
        # recorded; one per replay is no loss (TransformerEngine's get_attention_backend: 110 of its 124)
        return True
    w.report(_HAZARD, c.node, c.frame, message="Logging inside a CUDA-graph capture runs once, at capture; replays "
             "log nothing")
    return True


def _timer(w: Walk, c: CallSite) -> bool:
    if c.qualname not in TIMERS:
        return False
    w.report(_HAZARD, c.node, c.frame, [w.fixes.move_after_replay(c.stmt, c.direct)],
             message="A timer inside a CUDA-graph capture reads the clock once, at capture; replays do not run Python")
    return True


def _append(w: Walk, c: CallSite) -> bool:
    if c.method != "append" or c.receiver is None or not is_global_container(w, c.receiver, c.frame):
        return False
    w.report(_HAZARD, c.node, c.frame, message="Appending to a Python container inside a capture runs once, at "
             "capture; replays append nothing")
    return True


def _counter(w: Walk, node: Node, frame: Frame) -> None:
    """`self.n += 1`, or `n += 1` on a global or a module-level scalar."""
    left = node.child_by_field_name("left")
    if left is None:
        return
    ix = frame.ix
    k = w.kind(left, frame) if left.type == "identifier" else None
    if k is not None and k.tensor:
        return
    is_side = False
    if left.type == "attribute" and ix.text(left).startswith("self."):
        right = node.child_by_field_name("right")
        is_side = right is not None and right.type in ("integer", "float")
    elif left.type == "identifier":
        name = ix.text(left)
        fn = ix.enclosing_function(node)
        if fn is not None:
            is_side = name in ix.scope(fn.node).globals
        else:
            is_side = k is not None and k.cat == "scalar"
    if is_side:
        st = stmt_of(node, ix.src)
        w.report(_HAZARD, node, frame, [w.fixes.move_after_replay(st, w.direct(st, frame))],
                 message="A Python counter updated inside a capture changes once, at capture; replays do not run "
                 "Python")


RULE = SourceRule(
    id="replay-python-side-effects",
    hazards=(Hazard(_HAZARD),),
    claims=(Claim(51, _print), Claim(61, _log), Claim(180, _timer), Claim(190, _append)),
    on_node={"augmented_assignment": (_counter,)},
)
