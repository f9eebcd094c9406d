"""replay-graph-cache-key (DPX314): graphs cached in a dict keyed by some dimensions of the inputs (`key =
q.shape[1]`), and reused for inputs whose other dimensions differ: the replay copies a smaller input into the
front of the static buffer (`static_q[:n].copy_(q)` with `n = q.shape[0]`, a dimension the key leaves out), so the
rest of the buffer keeps the values of an earlier batch and the graph computes over them.

Found from a capture inside a function `F`: a store `D[key] = F(...)` (or of a value holding that call) in a
function of the same file; the dimensions of `key` (`X.shape[i]`, `X.size(i)`, through a local name); and, in the
same function, a partial copy `S[:n].copy_(...)` whose `n` is a dimension of a tensor passed to `F` that the
key does not hold. A warning: the stale rows change the result only where rows interact (a softmax or a
normalisation over the batch)."""

from __future__ import annotations

from tree_sitter import Node

from denpex.source.engine.hits import Hit
from denpex.source.resolve.index import FileIndex, FuncInfo
from denpex.source.rules._api import Around, Hazard, RegionScan, SourceRule
from denpex.source.syntax.parse import run_query, strip_parens, walk

_HAZARD = "graph-cache-key"


def _dims(ix: FileIndex, expr: Node, fn: FuncInfo, depth: int = 0) -> dict[str, set[int]] | None:
    """The dimensions of tensors that `expr` reads: {"q": {1}} for `q.shape[1]`, `q.size(1)`, `len(q)` (dim 0),
    through local names of `fn`. None when it reads a whole shape (`q.shape`, `tuple(q.shape)`)."""
    out: dict[str, set[int]] = {}
    for n in walk(expr):
        if n.type == "attribute" and ix.text(n.child_by_field_name("attribute") or n) == "shape":
            obj = n.child_by_field_name("object")
            p = n.parent
            idx = p.child_by_field_name("subscript") if p is not None and p.type == "subscript" else None
            if obj is None:
                continue
            if idx is None or idx.type != "integer":
                return None
            out.setdefault(ix.text(obj), set()).add(int(ix.text(idx)))
        elif n.type == "call":
            f = n.child_by_field_name("function")
            args = n.child_by_field_name("arguments")
            if f is None or args is None:
                continue
            if f.type == "attribute" and ix.text(f.child_by_field_name("attribute") or f) == "size":
                obj = f.child_by_field_name("object")
                a = args.named_children
                if obj is None or len(a) != 1 or a[0].type != "integer":
                    return None
                out.setdefault(ix.text(obj), set()).add(int(ix.text(a[0])))
            elif f.type == "identifier" and ix.text(f) == "len" and len(args.named_children) == 1:
                out.setdefault(ix.text(args.named_children[0]), set()).add(0)
        elif n.type == "identifier" and depth < 3 and (n.parent is None or n.parent.type != "attribute"):
            assign, _scope, _p = ix.lookup(ix.text(n), n)
            if assign is not None and assign.value is not None and fn.node.start_byte <= assign.start_byte \
                    < fn.node.end_byte and assign.value.id != expr.id:
                inner = _dims(ix, assign.value, fn, depth + 1)
                if inner is None:
                    return None
                for k, v in inner.items():
                    out.setdefault(k, set()).update(v)
    return out


def _stores(ix: FileIndex, capturer: FuncInfo) -> list[tuple[Node, Node, Node]]:
    """(store statement, key, call of the capturing function) for `D[key] = ...F(...)` in other functions."""
    out = []
    for a in run_query("(assignment left: (subscript) @l) @a", ix.src.root).get("a", []):
        left = a.child_by_field_name("left")
        right = a.child_by_field_name("right")
        key = left.child_by_field_name("subscript") if left is not None else None
        if right is None or key is None:
            continue
        for n in walk(right):
            if n.type != "call":
                continue
            f = n.child_by_field_name("function")
            name = f.child_by_field_name("attribute") if f is not None and f.type == "attribute" else f
            if name is not None and ix.text(name) == capturer.name:
                out.append((a, key, n))
                break
    return out


def _partial_copies(ix: FileIndex, fn: FuncInfo) -> list[tuple[Node, Node]]:
    """(copy call, slice bound) for `S[:n].copy_(...)` in `fn`."""
    out: list[tuple[Node, Node]] = []
    if fn.body is None:
        return out
    for c in run_query("(call function: (attribute object: (subscript) @s attribute: (identifier) @m)) @c",
                       fn.body).get("c", []):
        f = c.child_by_field_name("function")
        s = f.child_by_field_name("object") if f is not None else None
        m = f.child_by_field_name("attribute") if f is not None else None
        if s is None or m is None or ix.text(m) != "copy_":
            continue
        sl = s.child_by_field_name("subscript")
        if sl is None or sl.type != "slice":
            continue
        kids = [k for k in sl.children if k.is_named]
        text = ix.text(sl).replace(" ", "")
        if text.startswith(":") and len(kids) == 1:
            out.append((c, kids[0]))
    return out


def _cache_key(scan: RegionScan) -> None:
    region = scan.region
    if region.kind not in ("graph", "capture_begin", "wrapper"):
        return
    ix = region.ix
    capturer = ix.enclosing_function(region.anchor)
    if capturer is None:
        return
    for store, key, call in _stores(ix, capturer):
        fn = ix.enclosing_function(store)
        if fn is None or fn.node.id == capturer.node.id:
            continue
        kd = _dims(ix, strip_parens(key), fn)
        if not kd:
            continue  # a key of no tensor dimension (a name, a mode) or of whole shapes
        args = call.child_by_field_name("arguments")
        passed = {ix.text(a) for a in args.named_children} if args is not None else set()
        for copy, bound in _partial_copies(ix, fn):
            bd = _dims(ix, bound, fn)
            if not bd:
                continue
            left_out = [(t, d) for t, ds in bd.items() if t in passed for d in sorted(ds) if d not in kd.get(t, set())]
            if not left_out or not any(t in kd for t, _d in left_out):
                continue
            t, d = left_out[0]
            at = key
            if key.type == "identifier":  # the line that builds the key says which dimensions it holds
                assign, _scope, _p = ix.lookup(ix.text(key), key)
                if assign is not None and assign.value is not None:
                    at = assign.value
            scan.sink(Hit(_HAZARD, ix, at, region, (), [], None, (
                f"graphs are cached by `{ix.text(key)}`, which holds dimension{'s' if len(kd[t]) > 1 else ''} "
                f"{', '.join(str(x) for x in sorted(kd[t]))} of `{t}` only; line {copy.start_point[0] + 1} copies "
                f"`{t}` into the front of a static buffer ([:{ix.text(bound)}], dimension {d} of `{t}`): a call "
                f"whose dimension {d} differs replays a graph captured for another size, over rows an earlier "
                "batch left (silently wrong where rows interact)")))
            break


RULE = SourceRule(
    id="replay-graph-cache-key",
    hazards=(Hazard(_HAZARD, eager_fallback=False),),
    around=(Around(151, _cache_key),),
)
