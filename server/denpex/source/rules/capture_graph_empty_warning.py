"""capture-graph-empty-warning (DPX120), source side: a capture opened under `with torch.cuda.device(N):` whose
tensors live on another device. The capture stream belongs to device N; the kernels of tensors on device M run
on M's current stream, eagerly, and the graph ends empty ('The CUDA Graph is empty'): replays do nothing."""

from __future__ import annotations

import re

from tree_sitter import Node

from denpex.source.engine.hits import Hit
from denpex.source.resolve.index import FileIndex, kwarg, positional
from denpex.source.rules._api import Around, Hazard, RegionScan, SourceRule
from denpex.source.syntax.parse import strip_parens, walk

_HAZARD = "capture-on-other-device"
_CUDA_N = re.compile(r"""^["']cuda:(\d+)["']$""")
_WITH_OR_SCOPE = frozenset({"with_statement", "function_definition", "module"})


def _device_index(ix: FileIndex, node: Node | None, depth: int = 0) -> int | None:
    """The CUDA device index an expression names: `1`, `"cuda:1"`, `torch.device("cuda", 1)`,
    `torch.device("cuda:1")`, or a name bound once to one of those; None when it names none for sure."""
    if node is None or depth > 3:
        return None
    node = strip_parens(node)
    text = ix.text(node).replace(" ", "")
    if node.type == "integer":
        return int(text) if text.isdigit() else None
    m = _CUDA_N.match(text)
    if m:
        return int(m.group(1))
    if node.type == "call":
        f = node.child_by_field_name("function")
        if f is not None and (ix.qualname(f) or "") == "torch.device":
            pos = positional(node)
            if len(pos) == 2 and ix.text(pos[0]).strip("'\"") == "cuda":
                return _device_index(ix, pos[1], depth + 1)
            if len(pos) == 1:
                return _device_index(ix, pos[0], depth + 1)
        return None
    if node.type == "identifier":
        assign, _scope, is_param = ix.lookup(ix.text(node), node)
        if is_param or assign is None or assign.value is None:
            return None
        return _device_index(ix, assign.value, depth + 1)
    return None


def _made_on(ix: FileIndex, node: Node, depth: int = 0) -> int | None:
    """The device index a tensor or module was explicitly put on where it was bound: `device="cuda:0"` in its
    construction, `.cuda(0)`, `.to("cuda:0")` / `.to(device=...)`, following names bound once."""
    if depth > 4:
        return None
    node = strip_parens(node)
    if node.type == "identifier":
        assign, _scope, is_param = ix.lookup(ix.text(node), node)
        if is_param or assign is None or assign.value is None:
            return None
        return _made_on(ix, assign.value, depth + 1)
    if node.type != "call":
        return None
    f = node.child_by_field_name("function")
    if f is not None and f.type == "attribute":
        attr = f.child_by_field_name("attribute")
        name = ix.text(attr) if attr is not None else ""
        if name in ("cuda", "to"):
            pos = positional(node)
            dev = kwarg(ix, node, "device") or (pos[0] if pos else None)
            idx = _device_index(ix, dev)
            if idx is not None:
                return idx
        obj = f.child_by_field_name("object")
        if name in ("cuda", "to", "half", "float", "bfloat16", "eval", "train", "contiguous", "clone") and obj is not None:
            return _made_on(ix, obj, depth + 1)
        return None
    return _device_index(ix, kwarg(ix, node, "device"))


def _device_context(ix: FileIndex, anchor: Node) -> tuple[Node, int] | None:
    """The innermost `with torch.cuda.device(N):` around the capture (inside its function) and N."""
    nav = ix.src.nav
    p = nav.enclosing(anchor, _WITH_OR_SCOPE)
    while p is not None and p.type == "with_statement":
        clause = next((c for c in p.children if c.type == "with_clause"), None)
        for item in clause.named_children if clause is not None else []:
            v = item.child_by_field_name("value")
            if v is not None and v.type == "call":
                f = v.child_by_field_name("function")
                if f is not None and (ix.qualname(f) or "") in ("torch.cuda.device", "torch.cuda.device_of"):
                    pos = positional(v)
                    idx = _device_index(ix, pos[0]) if pos else None
                    return (v, idx) if idx is not None else None
        p = nav.enclosing(p, _WITH_OR_SCOPE)
    return None


def _other_device(scan: RegionScan) -> None:
    region = scan.region
    ix = region.ix
    if region.kind not in ("graph", "capture_begin") or not ix.has(b"device("):
        return
    ctx = _device_context(ix, region.anchor)
    if ctx is None:
        return
    ctx_call, current = ctx
    seen: set[str] = set()
    for st in region.stmts:
        for n in walk(st):
            if n.type != "identifier" or ix.text(n) in seen:
                continue
            p = n.parent
            if p is not None and ((p.type == "attribute" and p.child_by_field_name("attribute") == n) or (
                    p.type == "keyword_argument" and p.child_by_field_name("name") == n)):
                continue
            if p is not None and p.type == "assignment" and p.child_by_field_name("left") == n:
                continue
            seen.add(ix.text(n))
            other = _made_on(ix, n)
            if other is not None and other != current:
                line = ix.src.start(ctx_call)[0] + 1
                scan.sink(Hit(_HAZARD, ix, region.site, region, (), [], "error",
                              f"This capture runs under torch.cuda.device({current}) (line {line}), but "
                              f"`{ix.text(n)}` lives on cuda:{other}: its kernels run on cuda:{other}'s own stream, "
                              "outside the capture, and the graph ends empty ('The CUDA Graph is empty'); replays "
                              f"do nothing (silently wrong). Capture under torch.cuda.device({other}), or move the "
                              "tensors to the capturing device"))
                return


RULE = SourceRule(
    id="capture-graph-empty-warning",
    hazards=(Hazard(_HAZARD),),
    around=(Around(75, _other_device),),
)
