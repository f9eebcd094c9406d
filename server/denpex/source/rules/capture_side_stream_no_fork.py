"""capture-side-stream-no-fork (DPX117): a side stream used inside a capture without first waiting on the
capturing stream: its work is not part of the capture."""

from __future__ import annotations

from tree_sitter import Node

from denpex.source.fixes import edits as F
from denpex.source.rules._api import Frame, Hazard, SourceRule, Walk
from denpex.source.rules._side_streams import side_streams


def _with(w: Walk, node: Node, frame: Frame) -> None:
    for s in side_streams(w, node, frame):
        if s.forked:
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
    on_node={"with_statement": (_with,)},
)
