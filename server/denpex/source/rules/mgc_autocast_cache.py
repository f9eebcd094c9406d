"""mgc-autocast-cache (DPX703): `make_graphed_callables` under `torch.autocast` with its cache enabled: the cached
casts of the capture are reused after it."""

from __future__ import annotations

from denpex.source.engine.facts import truthy
from denpex.source.engine.hits import Hit
from denpex.source.fixes import edits as F
from denpex.source.model import TextEdit
from denpex.source.resolve.index import kwarg
from denpex.source.rules._api import Around, Hazard, RegionScan, SourceRule


def _autocast(scan: RegionScan) -> None:
    region = scan.region
    if region.kind != "graphed_callables":
        return
    ix = region.ix
    p = region.site.parent
    while p is not None:
        if p.type == "with_statement":
            clause = next((c for c in p.children if c.type == "with_clause"), None)
            for item in clause.named_children if clause is not None else []:
                v = item.child_by_field_name("value")
                if v is None or v.type != "call":
                    continue
                f = v.child_by_field_name("function")
                q = ix.qualname(f) if f is not None else None
                if q is None or not q.endswith("autocast"):
                    continue
                ce = kwarg(ix, v, "cache_enabled")
                if ce is not None and not truthy(ix, ce):
                    continue
                if ce is not None:
                    edit = F.replace_node(ix, ce, "False")
                else:
                    args = v.child_by_field_name("arguments")
                    if args is None:
                        continue
                    el, ec = ix.src.end(args)
                    sep = ", " if args.named_child_count else ""
                    edit = TextEdit(el, ec - 1, el, ec - 1, f"{sep}cache_enabled=False")
                fx = F.fix("Disable the autocast cache (cache_enabled=False)", "safe", [edit])
                scan.sink(Hit("graphed-callables-autocast-cache", ix, v, region, (), [fx] if fx else []))
        if p.type in ("function_definition", "module"):
            break
        p = p.parent


RULE = SourceRule(
    id="mgc-autocast-cache",
    hazards=(Hazard("graphed-callables-autocast-cache"),),
    around=(Around(10, _autocast),),
)
