"""compile-skip-cudagraphs (DPX701): an in-place method (`buf.add_(1)`) on a parameter of a function compiled
with CUDA graphs: Inductor skips cudagraphs for that graph ('skipping cudagraphs due to mutated inputs'; an error
with TORCHINDUCTOR_CUDAGRAPH_OR_ERROR=1)."""

from __future__ import annotations

from tree_sitter import Node

from denpex.source.engine.hits import Hit
from denpex.source.resolve.callgraph import resolve_region_callable
from denpex.source.resolve.index import FileIndex
from denpex.source.rules._api import Around, Hazard, RegionScan, SourceRule
from denpex.source.syntax.mentions import def_of, in_nested_definition
from denpex.source.syntax.parse import run_query_range

_NOT_MUTATING = frozenset({"requires_grad_", "share_memory_", "retain_grad_"})
_METHOD_CALLS = "(call function: (attribute object: (identifier) @obj attribute: (identifier) @m)) @call"


def _mutated_inputs(scan: RegionScan) -> None:
    region = scan.region
    if region.kind != "compile":
        return
    ix = region.ix
    funcs: list[tuple[FileIndex, Node]] = [(ix, fn) for fn in region.functions]
    for expr in region.callables:  # a function, or a module whose forward is compiled (in any workspace file)
        for t in resolve_region_callable(scan.resolver, ix, expr):
            funcs.append((t.ix, t.func.node))
    seen: set[tuple[int, int]] = set()
    for fix, fn in funcs:
        if (id(fix), fn.id) in seen:
            continue
        seen.add((id(fix), fn.id))
        _in_function(scan, fix, fn)


def _in_function(scan: RegionScan, ix: FileIndex, fn: Node) -> None:
    body = fn.child_by_field_name("body")
    if body is None:
        return
    ix.touched.append((fn.start_byte, fn.end_byte))
    for call in run_query_range(_METHOD_CALLS, body, body.start_byte, body.end_byte).get("call", []):
        f = call.child_by_field_name("function")
        if f is None or in_nested_definition(call, fn) or def_of(call) != fn:
            continue
        obj = f.child_by_field_name("object")
        m = f.child_by_field_name("attribute")
        if obj is None or m is None or obj.type != "identifier":
            continue
        meth = ix.text(m)
        if not (meth.endswith("_") and not meth.endswith("__") and not meth.startswith("_")) or meth in _NOT_MUTATING:
            continue
        _a, _s, is_param = ix.lookup(ix.text(obj), call)
        if not is_param or ix.text(obj) in ("self", "cls"):
            continue
        scan.sink(Hit("compile-mutated-input", ix, call, scan.region, (), [], None,
                      f"{ix.text(obj)}.{meth}(...) mutates an input of a function compiled with CUDA graphs: "
                      "Inductor skips cudagraphs for this graph ('skipping cudagraphs due to mutated inputs'; a "
                      "RuntimeError with TORCHINDUCTOR_CUDAGRAPH_OR_ERROR=1); return a new tensor or make it a "
                      "module buffer"))


RULE = SourceRule(
    id="compile-skip-cudagraphs",
    hazards=(Hazard("compile-mutated-input"),),
    around=(Around(50, _mutated_inputs),),
)
