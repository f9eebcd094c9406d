"""capture-side-stream-no-fork (DPX117): a side stream used inside a capture without first waiting on the
capturing stream: its work is not part of the capture.

A fork is `s.wait_stream(...)` or `s.wait_event(e)` (an event recorded on the capturing stream) before the
`with torch.cuda.stream(s):`, in its block or earlier in the same capture's walk (a prefetch that forked the
stream, then a wait path that enters it again: Megatron-LM's tensor-parallel all-gather)."""

from __future__ import annotations

from tree_sitter import Node

from denpex.source.engine.facts import siblings
from denpex.source.fixes import edits as F
from denpex.source.rules._api import CallSite, Frame, Hazard, SourceRule, Walk
from denpex.source.rules._side_streams import side_streams

FORKED_STREAMS = "capture-side-stream-no-fork"  # its key in the walker's state (by rule id): the streams forked so far


def _fork(w: Walk, c: CallSite) -> None:
    """Remember the streams this capture forked so far, by their text (a frozenset written anew each time: the
    walker's state is logged per write for incremental re-walks)."""
    if c.method in ("wait_stream", "wait_event") and c.receiver is not None:
        name = "".join(c.frame.ix.text(c.receiver).split())
        seen = w.state.get(FORKED_STREAMS)
        known = seen if isinstance(seen, frozenset) else frozenset()
        if name not in known:
            w.state[FORKED_STREAMS] = known | {name}


def _with(w: Walk, node: Node, frame: Frame) -> None:
    seen = w.state.get(FORKED_STREAMS)
    earlier = seen if isinstance(seen, frozenset) else frozenset()
    for s in side_streams(w, node, frame):
        name = "".join(s.name.split())
        if s.forked or name in earlier or any(f"{name}.wait_event(" in "".join(frame.ix.text(b).split())
                                              for b in siblings(node, after=False)):
            continue
        edits = [F.insert_before_statement(frame.ix, node, [s.fork_line(w.torch)])]
        if not s.joined:
            edits.append(F.insert_after_statement(frame.ix, node, [s.join_line(w.torch)]))
        w.report("side-stream-no-fork", s.item, frame,
                 [F.fix("Fork the side stream from the capturing stream (and join it back)", "safe", edits,
                        in_place=True)])


RULE = SourceRule(
    id="capture-side-stream-no-fork",
    hazards=(Hazard("side-stream-no-fork"),),
    on_call=(_fork,),
    on_node={"with_statement": (_with,)},
)
