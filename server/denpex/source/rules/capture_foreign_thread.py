"""capture-foreign-thread (DPX119): a global-mode capture while another thread works on the GPU (a DataLoader's
pin-memory thread): that thread's CUDA calls invalidate the capture."""

from __future__ import annotations

from denpex.source.engine.facts import value_text
from denpex.source.engine.hits import Hit
from denpex.source.fixes import edits as F
from denpex.source.model import TextEdit
from denpex.source.resolve.index import kwarg
from denpex.source.rules._api import Around, Hazard, RegionScan, SourceRule


def _global_mode(scan: RegionScan) -> None:
    region = scan.region
    ix = region.ix
    if region.kind not in ("graph", "wrapper") or not ix.has(b"pin_memory=True") or not (
            ix.has(b"Thread(") or ix.has(b"threading")):
        return
    mode = kwarg(ix, region.site, "capture_error_mode")
    if mode is not None and not ("global" in ix.text(mode) or (
            mode.type == "identifier" and "thread_local" not in ix.text(mode) and "global" in value_text(ix, mode))):
        return
    if mode is not None:
        edit = F.replace_node(ix, mode, '"thread_local"')
    else:
        args = region.site.child_by_field_name("arguments")
        if args is None:
            return
        el, ec = ix.src.end(args)
        edit = TextEdit(el, ec - 1, el, ec - 1, ', capture_error_mode="thread_local"')
    fx = F.fix('Capture with capture_error_mode="thread_local"', "safe", [edit])
    scan.sink(Hit("pinning-thread-global-capture", ix, region.site, region, (), [fx] if fx else []))


RULE = SourceRule(
    id="capture-foreign-thread",
    hazards=(Hazard("pinning-thread-global-capture"),),
    around=(Around(30, _global_mode),),
)
