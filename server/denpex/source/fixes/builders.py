"""The fix builders rules share, for one capture region: guard, move after the replay, move before the capture,
build once before the capture, side-stream warm-up, and the eager fallback.

Every one of them edits the capture's own file (the statement moved, the capture's neighbours) and is offered
only for a statement of the region itself (`direct`); a fix that edits only the offending code says so with
`in_place=True` (fixes.fix), which lets it land in the file of a called function too.
"""

from __future__ import annotations

from tree_sitter import Node

from denpex.source.capture.regions import CaptureRegion
from denpex.source.capture.replays import graph_replays
from denpex.source.engine.facts import bound_names, fresh_name_in
from denpex.source.fixes import edits as F
from denpex.source.fixes.eager import eager_fallback, read_between
from denpex.source.model import Fix, TextEdit
from denpex.source.resolve.callgraph import Resolver
from denpex.source.rules._api import Frame
from denpex.source.syntax.parse import walk

STATEMENT_KINDS = ("graph", "capture_begin", "wrapper")  # regions made of statements a fix can move
_LITERAL_NAMES = ("device", "dtype", "torch", "float32", "float16", "int64", "int32", "bfloat16", "long", "float",
                  "requires_grad")


class RegionFixBuilder:
    """The shared fix builders of one capture region; the graph's replays and the eager fallback are computed
    once, when a finding first asks for them."""

    def __init__(self, region: CaptureRegion, resolver: Resolver, torch: str) -> None:
        self.region = region
        self.resolver = resolver
        self.torch = torch
        self._replays: list[Node] | None = None
        self._replays_done = False
        self._fallback: Fix | None = None
        self._fallback_done = False

    def replays(self) -> list[Node] | None:
        """The region's `g.replay()` statements (see `graph_replays`)."""
        if not self._replays_done:
            self._replays_done = True
            self._replays = graph_replays(self.region, self.resolver)
        return self._replays

    def eager_fallback(self) -> Fix | None:
        if not self._fallback_done:
            self._fallback_done = True
            self._fallback = eager_fallback(self.region, self.replays())
        return self._fallback

    def guard(self, stmt: Node, frame: Frame) -> Fix | None:
        """Skip the statement while capturing (it edits only that statement: in place)."""
        if stmt.type != "expression_statement":
            return None
        inner = stmt.named_children[0] if stmt.named_child_count else None
        if inner is None or inner.type == "assignment":
            return None
        edit = F.guard_statement(frame.ix, stmt)
        return F.fix("Skip it while capturing (guard with is_current_stream_capturing())", "safe",
                     [edit] if edit is not None else None, in_place=True)

    def after_each_replay(self, stmts: list[Node]) -> list[TextEdit] | None:
        """Delete `stmts` (direct statements of the region) and insert them after every replay of its graph;
        None when the replays are not all known (see `graph_replays`)."""
        replays = self.replays()
        if not replays:
            return None
        ix = self.region.ix
        edits: list[TextEdit] = []
        for st in stmts:
            d = F.delete_statement(ix, st)
            if d is None:
                return None
            edits.append(d)
        for r in replays:
            texts: list[str] = []
            for st in stmts:
                body = F.statement_lines(ix, st, ix.src.indent_of(r))
                if body is None:
                    return None
                texts.append(body.rstrip("\n"))
            edits.append(F.insert_after_statement(ix, r, texts, indent=""))
        return edits

    def move_after_replay(self, stmt: Node, direct: bool) -> Fix | None:
        if not direct or self.region.kind not in STATEMENT_KINDS:
            return None
        ix = self.region.ix
        # names it binds must not be read later in the region
        bound = bound_names(ix, stmt)
        later = [s for s in self.region.stmts if s.start_byte > stmt.start_byte]
        if bound and any(ix.text(n) in bound for s in later for n in walk(s) if n.type == "identifier"):
            return None
        # ... nor between the capture and the first replay
        replays = self.replays()
        if bound and replays and read_between(ix, bound, ix.scope_of(self.region.anchor).node, self.region.end_byte,
                                              replays[0].start_byte):
            return None
        edits = self.after_each_replay([stmt])
        return F.fix("Move it after the replay (read the static output outside the capture)", "unsafe", edits)

    def move_before_capture(self, stmt: Node, direct: bool) -> Fix | None:
        if not direct or self.region.kind not in STATEMENT_KINDS:
            return None
        edits = F.move_statement_before(self.region.ix, stmt, self.region.anchor)
        return F.fix("Move it before the capture", "unsafe", edits)

    def hoist(self, stmt: Node, direct: bool, call: Node, safe: bool = True) -> Fix | None:
        """Build a tensor once, before the capture (safe when its arguments are literals)."""
        if not direct or self.region.kind not in STATEMENT_KINDS:
            return None
        ix = self.region.ix
        literal = all(n.type != "identifier" or ix.text(n) in (*_LITERAL_NAMES, self.torch)
                      for n in walk(call.child_by_field_name("arguments") or call))
        edits = F.move_statement_before(ix, stmt, self.region.anchor)
        return F.fix("Build the tensor once, before the capture", "safe" if (safe and literal) else "unsafe", edits)

    def warm_up(self) -> Fix | None:
        """Run the captured statements three times on a side stream before the capture."""
        r = self.region
        ix = r.ix
        if r.kind not in ("graph", "wrapper") or not r.stmts:
            return None
        body_lines: list[str] = []
        for st in r.stmts:
            text = F.statement_lines(ix, st, "        ")
            if text is None:
                return None
            body_lines.extend(text.rstrip("\n").split("\n"))
        t = self.torch
        s = fresh_name_in(ix, "warmup_stream")
        lines = [
            f"{s} = {t}.cuda.Stream()",
            f"{s}.wait_stream({t}.cuda.current_stream())",
            f"with {t}.cuda.stream({s}):",
            "    for _ in range(3):",
            *[ln[len("    "):] if ln.startswith("    ") else ln for ln in body_lines],
            f"{t}.cuda.current_stream().wait_stream({s})",
        ]
        # body lines already carry 8 spaces; insert_before_statement adds the anchor's indent
        lines = [ln if i < 4 or ln == lines[-1] else "    " + ln for i, ln in enumerate(lines)]
        return F.fix("Warm up on a side stream before the capture", "unsafe", [F.insert_before_statement(ix, r.anchor, lines)])
