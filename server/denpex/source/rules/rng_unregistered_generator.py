"""rng-unregistered-generator (DPX400): a custom CUDA generator passed to a random op inside a capture without
`g.register_generator_state(gen)`: its offset is frozen into the graph."""

from __future__ import annotations

from tree_sitter import Node

from denpex.source.fixes import edits as F
from denpex.source.model import Fix
from denpex.source.resolve.index import FileIndex, kwarg
from denpex.source.rules._api import CallSite, Hazard, SourceRule, Walk


def _generator(w: Walk, c: CallSite) -> None:
    gen = kwarg(c.ix, c.node, "generator")
    if gen is None:
        return
    gk = w.kind(gen, c.frame)
    if gk.cat == "generator" and gk.device == "cuda" and not _registered(c.ix, gen):
        w.report("unregistered-generator", gen, c.frame, [_register_fix(w, c.ix, gen)])


def _registered(ix: FileIndex, gen: Node) -> bool:
    return f"register_generator_state({ix.text(gen)})" in ix.spaceless_text


def _register_fix(w: Walk, ix: FileIndex, gen: Node) -> Fix | None:
    r = w.region
    if r.graph_name is None or r.kind not in ("graph", "capture_begin") or ix is not r.ix:
        return None
    line = f"{r.graph_name}.register_generator_state({ix.text(gen)})"
    return F.fix("Register the generator with the graph before capture", "safe",
                 [F.insert_before_statement(ix, r.anchor, [line])])


RULE = SourceRule(
    id="rng-unregistered-generator",
    hazards=(Hazard("unregistered-generator"),),
    on_call=(_generator,),
)
