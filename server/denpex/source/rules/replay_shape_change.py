"""replay-shape-change (DPX305): a new input of another shape copied into a captured buffer before a replay
(`static_x.copy_(batch)`): the graph replays the captured shape; a DataLoader's last, smaller batch does this."""

from __future__ import annotations

from tree_sitter import Node

from denpex.source.capture.regions import CaptureRegion
from denpex.source.engine.hits import Hit, Sink
from denpex.source.fixes import edits as F
from denpex.source.model import Fix, TextEdit
from denpex.source.resolve.index import FileIndex, Kind, kwarg, positional
from denpex.source.rules._api import Around, Hazard, RegionScan, SourceRule
from denpex.source.syntax.parse import strip_parens

_CHECKED = "copy-checked"  # a copy's check depends on the copy alone: it is made once, for the first capture


def _copies(scan: RegionScan) -> None:
    side = scan.replay_side
    if side is None:
        return
    region = scan.region
    ix = region.ix
    for n in side.after("copies", side.inputs):
        if (_CHECKED, n.id) in side.seen:
            continue
        f = n.child_by_field_name("function")
        if f is None or not ix.text(f).endswith(".copy_"):
            continue
        obj = f.child_by_field_name("object")
        args = positional(n)
        if obj is not None and obj.type == "identifier" and ix.text(obj) in side.inputs and args:
            side.seen.add((_CHECKED, n.id))
            _check_shape(region, n, obj, args[0], scan.sink)


def _check_shape(region: CaptureRegion, call: Node, dst: Node, src: Node, sink: Sink) -> None:
    ix = region.ix
    dk = ix.kind(dst)
    sk = ix.kind(src)
    if dk.shape is not None and sk.shape is not None and len(dk.shape) == len(sk.shape) and dk.shape != sk.shape:
        fx = _pad_fix(region, call, dst, src, dk, sk)
        sink(Hit("replay-shape-mismatch", ix, call, region, (), [fx] if fx else [], severity="error"))
        return
    src = strip_parens(src)
    if src.type == "identifier":
        assign, _s, _p = ix.lookup(ix.text(src), src)
        stmt = assign.stmt if assign is not None else None
        if stmt is not None and stmt.type == "for_statement":
            it = stmt.child_by_field_name("right")
            if it is not None:
                lk = ix.kind(it)
                loader = lk.node if lk.cat == "dataloader" else None
                if loader is not None:
                    dl = kwarg(ix, loader, "drop_last")
                    if dl is None or ix.text(dl) != "True":
                        fx = _drop_last_fix(ix, loader, dl)
                        sink(Hit("dataloader-partial-batch", ix, call, region, (), [fx] if fx else [],
                                 severity="warning"))


def _drop_last_fix(ix: FileIndex, loader: Node, dl: Node | None) -> Fix | None:
    if dl is not None:
        return F.fix("Drop the last, smaller batch (drop_last=True)", "unsafe", [F.replace_node(ix, dl, "True")])
    args = loader.child_by_field_name("arguments")
    if args is None:
        return None
    el, ec = ix.src.end(args)
    return F.fix("Drop the last, smaller batch (drop_last=True)", "unsafe",
                 [TextEdit(el, ec - 1, el, ec - 1, ", drop_last=True")])


def _pad_fix(region: CaptureRegion, call: Node, dst: Node, src: Node, dk: Kind, sk: Kind) -> Fix | None:
    ix = region.ix
    stmt = call.parent
    if stmt is None or stmt.type != "expression_statement" or dk.node is None or dk.shape is None or sk.shape is None:
        return None
    if strip_parens(src).type not in ("identifier", "attribute"):
        return None  # the fix reads the source twice: a call (torch.randn(...)) would run twice
    d, s = ix.text(dst), ix.text(src)
    edits: list[TextEdit] = []
    if sk.shape[0] > dk.shape[0]:
        args = positional(dk.node)
        first = args[0] if args else None
        if first is not None and first.type in ("tuple", "list") and first.named_child_count:
            first = first.named_children[0]
        if first is None or first.type != "integer":
            return None
        edits.append(F.replace_node(ix, first, str(sk.shape[0])))
    indent = ix.src.indent_of(stmt)
    new = f"{d}.zero_()\n{indent}{d}[: {s}.shape[0]].copy_({s})"
    edits.append(F.replace_node(ix, stmt, new))
    return F.fix("Capture at the largest batch size and copy each batch into a zero-padded slice", "unsafe", edits)


RULE = SourceRule(
    id="replay-shape-change",
    hazards=(Hazard("replay-shape-mismatch"), Hazard("dataloader-partial-batch")),
    around=(Around(120, _copies),),
)
