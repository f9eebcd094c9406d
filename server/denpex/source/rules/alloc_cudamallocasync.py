"""alloc-cudamallocasync (DPX501): the cudaMallocAsync allocator backend with torch.compile's CUDA graphs."""

from __future__ import annotations

from denpex.source.engine.hits import Hit
from denpex.source.rules._api import Around, Hazard, RegionScan, SourceRule
from denpex.source.syntax.parse import run_query


def _backend(scan: RegionScan) -> None:
    region = scan.region
    ix = region.ix
    if region.kind != "compile" or not ix.has(b"cudaMallocAsync"):
        return
    found = ix.scope_tables.get(("cudaMallocAsync", ix.src.root.id))
    if found is None:  # the first string naming the backend, looked for once per file
        ix.src.need_word("cudaMallocAsync", whole=False)
        first = next((n for n in run_query("(string) @s", ix.src.root).get("s", [])
                      if "cudaMallocAsync" in ix.text(n) and "backend" in ix.text(n)), None)
        found = ix.scope_tables[("cudaMallocAsync", ix.src.root.id)] = {"": [first] if first is not None else []}
    for n in found[""]:
        scan.sink(Hit("cudamallocasync-with-cudagraphs", ix, n, region))


RULE = SourceRule(
    id="alloc-cudamallocasync",
    hazards=(Hazard("cudamallocasync-with-cudagraphs"),),
    around=(Around(20, _backend),),
)
