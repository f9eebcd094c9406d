"""cuda-904-capture-unjoined (DPX105): a side stream forked into a capture but never joined back before the
capture ends (CUDA 904, "capture unjoined")."""

from __future__ import annotations

from tree_sitter import Node

from denpex.source.fixes import edits as F
from denpex.source.rules._api import Frame, Hazard, SourceRule, Walk
from denpex.source.rules._side_streams import side_streams


def _with(w: Walk, node: Node, frame: Frame) -> None:
    for s in side_streams(w, node, frame):
        if s.forked and not s.joined:
            w.report("side-stream-no-join", s.item, frame,
                     [F.fix("Join the side stream back into the capturing stream", "safe",
                            [F.insert_after_statement(frame.ix, node, [s.join_line(w.torch)])], in_place=True)])


RULE = SourceRule(
    id="cuda-904-capture-unjoined",
    hazards=(Hazard("side-stream-no-join"),),
    on_node={"with_statement": (_with,)},
)
