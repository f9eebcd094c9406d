"""replay-graph-cache-key (DPX314): graphs cached in a dict keyed by some dimensions of the inputs (`key =
q.shape[1]`), and reused for inputs whose other dimensions differ: the replay copies a smaller input into the
front of the static buffer (`static_q[:n].copy_(q)` with `n = q.shape[0]`, a dimension the key leaves out), so the
rest of the buffer keeps the values of an earlier batch and the graph computes over them.

Found from a capture inside a function `F`: a store `D[key] = F(...)` (or of a value holding that call) in a
function of the same file; the dimensions of `key` (`X.shape[i]`, `X.size(i)`, through a local name); and, in the
same function, a partial copy `S[:n].copy_(...)` whose `n` is a dimension of a tensor passed to `F` that the
key does not hold. A warning: the stale rows change the result only where rows interact (a softmax or a
normalisation over the batch).

Quick fix (unsafe: one graph, and its memory, per distinct shape): `key = q.shape[1]` becomes `key = tuple(q.shape)`
(with the shapes of the other tensors copied into static buffers: `(tuple(q.shape), tuple(d.shape))`), offered
only where the key is one local name bound once to one dimension of a parameter passed to the capture, and
the key and the cache are read only where a tuple serves as well (the cache's subscript, `in`, `get`, `%s`)."""

from __future__ import annotations

import re

from tree_sitter import Node

from denpex.source.engine.hits import Hit
from denpex.source.fixes import edits as F
from denpex.source.model import Fix
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


_LOGS = ("print", "debug", "info", "warning", "warn", "error", "exception", "critical")
_CONVERSION = re.compile(r"%(?:%|\(|[-+ #0]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[hlL]?([a-zA-Z]))")
_DICT_READS = ("get", "setdefault", "pop")
_DICT_WHOLE = ("clear", "values")
_CLASS = frozenset({"class_definition"})


def _one_dim(ix: FileIndex, expr: Node) -> str | None:
    """`x` for `x.shape[i]` / `x.size(i)` (x a plain name, i an integer), else None."""
    if expr.type == "subscript":
        obj, idx = expr.child_by_field_name("value"), expr.child_by_field_name("subscript")
        if obj is not None and idx is not None and idx.type == "integer" and obj.type == "attribute":
            x, a = obj.child_by_field_name("object"), obj.child_by_field_name("attribute")
            if x is not None and a is not None and x.type == "identifier" and ix.text(a) == "shape":
                return ix.text(x)
    elif expr.type == "call":
        f, args = expr.child_by_field_name("function"), expr.child_by_field_name("arguments")
        if f is not None and args is not None and f.type == "attribute" and len(args.named_children) == 1 \
                and args.named_children[0].type == "integer":
            x, a = f.child_by_field_name("object"), f.child_by_field_name("attribute")
            if x is not None and a is not None and x.type == "identifier" and ix.text(a) == "size":
                return ix.text(x)
    return None


def _call_of(n: Node) -> tuple[Node, Node] | None:
    """(call, its function) when `n` is a direct argument of a call."""
    args = n.parent
    call = args.parent if args is not None and args.type == "argument_list" else None
    f = call.child_by_field_name("function") if call is not None else None
    return (call, f) if call is not None and f is not None else None


def _tuple_serves(ix: FileIndex, n: Node, cache: str) -> bool:
    """A read of the key where a tuple serves as well as the number: the cache's subscript, `key in cache`,
    `cache.get(key)`, an f-string field with no format spec, a print/log argument with no numeric %-format."""
    p = n.parent
    if p is None:
        return False
    if p.type == "subscript":
        v = p.child_by_field_name("value")
        return v is not None and ix.text(v) == cache and n.id != v.id
    if p.type == "comparison_operator":
        ops = {ix.text(c) for c in p.children if not c.is_named}
        return p.named_children[0].id == n.id and len(p.named_children) == 2 and \
            ix.text(p.named_children[1]) == cache and ops <= {"in", "not", "not in"}
    if p.type == "interpolation":
        return p.child_by_field_name("format_specifier") is None and not any(
            c.type == "format_specifier" for c in p.children)
    got = _call_of(n)
    if got is None:
        return False
    call, f = got
    name = ix.text(f).rsplit(".", 1)[-1]
    if f.type == "attribute" and name in _DICT_READS:
        obj = f.child_by_field_name("object")
        args = call.child_by_field_name("arguments")
        return obj is not None and ix.text(obj) == cache and args is not None and args.named_children[0].id == n.id
    args = call.child_by_field_name("arguments")
    if name not in _LOGS or args is None:
        return False
    given = args.named_children
    at = next(i for i, a in enumerate(given) if a.id == n.id)
    if name == "print" or at == 0:
        return True  # printed, or logged as the message: str()
    if given[0].type != "string":
        return False  # a format string held elsewhere: its conversions are not known
    # logger.info("bucket %s (%d graphs)", key, n): the key's own conversion must be %s or %r
    convs = [m.group(1) for m in _CONVERSION.finditer(ix.text(given[0])) if m.group(0) != "%%"]
    return at - 1 < len(convs) and convs[at - 1] in ("s", "r", "a")


def _cache_reads_ok(ix: FileIndex, fn: FuncInfo, cache: str, key_name: str) -> bool:
    """Every mention of the cache that a key of another kind would break is inside `fn`, by `key_name`: outside
    it only its initialisation, `len(cache)`, `cache.clear()` and `cache.values()`."""
    if cache.startswith("self."):
        where = ix.src.nav.enclosing(fn.node, _CLASS)
        if where is None:
            return False
    elif ix.src.lazy is not None:
        return False  # a module-level cache in a file parsed in part: its other mentions may not be in the tree
    else:
        where = ix.src.root
    kind = "attribute" if "." in cache else "identifier"
    for n in walk(where):
        if n.type != kind or ix.text(n) != cache:
            continue
        p = n.parent
        if p is None:
            return False
        inside = fn.node.start_byte <= n.start_byte < fn.node.end_byte
        left = p.child_by_field_name("left") if p.type == "assignment" else None
        if left is not None and left.id == n.id:
            continue  # cache = {}
        if p.type == "subscript" and inside:
            idx = p.child_by_field_name("subscript")
            if idx is not None and idx.type == "identifier" and ix.text(idx) == key_name:
                continue
            return False
        if p.type == "comparison_operator" and inside and ix.text(p.named_children[0]) == key_name:
            continue
        if p.type == "attribute":
            m = p.child_by_field_name("attribute")
            name = ix.text(m) if m is not None else ""
            if name in _DICT_WHOLE or (inside and name in _DICT_READS):
                continue
            return False
        got = _call_of(n)
        if got is None or ix.text(got[1]) != "len":
            return False
    return True


def _key_fix(ix: FileIndex, fn: FuncInfo, key: Node, store: Node, passed: list[str], copied: list[str]) -> Fix | None:
    """`key = x.shape[i]` -> `key = tuple(x.shape)` (or a tuple of the full shapes of every input copied into a
    static buffer), where nothing else depends on the key being one number."""
    left = store.child_by_field_name("left")
    cache_node = left.child_by_field_name("value") if left is not None else None
    if key.type != "identifier" or cache_node is None:
        return None
    k = ix.text(key)
    assign, scope, is_param = ix.lookup(k, key)
    if assign is None or is_param or scope is None or scope.node.id != fn.node.id or \
            len(scope.assigns.get(k, [])) != 1 or assign.value is None or assign.stmt.type != "assignment":
        return None
    target = assign.stmt.child_by_field_name("left")
    x = _one_dim(ix, strip_parens(assign.value))
    if target is None or target.type != "identifier" or x is None or x not in fn.params or x not in passed:
        return None
    if fn.body is None or not _cache_reads_ok(ix, fn, ix.text(cache_node), k):
        return None
    for n in walk(fn.body):
        if n.type == "identifier" and ix.text(n) == k and n.id != target.id and not _tuple_serves(
                ix, n, ix.text(cache_node)):
            return None
    shapes = list(dict.fromkeys([x] + [c for c in passed if c in copied and c in fn.params]))
    new = f"tuple({x}.shape)" if len(shapes) == 1 else "(" + ", ".join(f"tuple({c}.shape)" for c in shapes) + ")"
    return F.fix("Key the graph cache by every dimension of the inputs (their full shapes)", "unsafe",
                 [F.replace_node(ix, assign.value, new)])


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
        passed = [ix.text(a) for a in args.named_children] if args is not None else []
        copies = _partial_copies(ix, fn)
        copied = [ix.text(a) for c, _b in copies for a in (c.child_by_field_name("arguments") or c).named_children]
        for copy, bound in copies:
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
            fx = _key_fix(ix, fn, key, store, passed, copied)
            scan.sink(Hit(_HAZARD, ix, at, region, (), [fx] if fx else [], None, (
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
