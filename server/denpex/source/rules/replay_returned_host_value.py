"""replay-returned-host-value (DPX313): a captured function returns Python values (an int, a flag, a tuple holding
them) next to its tensors, and a wrapper hands back the capture-time result after every replay. Replays refresh
the tensors; the Python values stay those of the capture's call (a token count of the first batch, added again
for every batch).

Found from the capture: `out = f(...)` among the captured statements, in a function that also replays the graph
and returns (the wrapper); `f` resolved through the call graph, or, for `fn(*static)` inside a decorator, the
functions the decorator is applied to. A return of `f` (one call deeper when it returns another call) whose
tuple holds a Python value: a number or bool literal, `int(...)`/`len(...)`/..., a name bound to one, or a
parameter that the function's callers bind to one."""

from __future__ import annotations

import re

from tree_sitter import Node

from denpex.source.engine.hits import Hit
from denpex.source.resolve.callgraph import EMPTY_ENV
from denpex.source.resolve.index import FileIndex, FuncInfo
from denpex.source.rules._api import Around, Hazard, RegionScan, SourceRule
from denpex.source.rules._frozen import files_with, where
from denpex.source.syntax.parse import run_query, strip_parens, walk

_HAZARD = "returned-host-value"
_HOST_CALLS = frozenset({"int", "float", "bool", "len", "round", "str"})
_LITERALS = frozenset({"integer", "float", "true", "false"})
_MAX_DECORATED = 16
_MAX_CALLER_FILES = 12  # a name called from more files is a common one: its callers are not read


def _captured_calls(ix: FileIndex, stmts: list[Node]) -> list[Node]:
    """The calls whose result the captured statements bind (`out = f(...)`, `a, b = f(...)`)."""
    out = []
    for st in stmts:
        for n in walk(st):
            if n.type == "assignment":
                r = n.child_by_field_name("right")
                if r is not None and strip_parens(r).type == "call":
                    out.append(strip_parens(r))
    return out


def _decorated(scan: RegionScan, ix: FileIndex, call: Node) -> list[tuple[FileIndex, FuncInfo]]:
    """`fn(...)` where `fn` is a parameter of a decorator (or of the function a decorator factory returns): the
    functions of the workspace decorated with it."""
    f = call.child_by_field_name("function")
    if f is None or f.type != "identifier":
        return []
    name = ix.text(f)
    holders: list[FuncInfo] = []
    p = ix.src.nav.enclosing(call, frozenset({"function_definition"}))
    while p is not None:
        info = ix.by_node.get(p.id)
        if info is not None:
            holders.append(info)
        p = ix.src.nav.enclosing(p, frozenset({"function_definition"}))
    deco = next((i for i, h in enumerate(holders) if name in h.params), None)
    if deco is None:
        return []
    names = {h.name for h in holders[deco:]}  # the decorator and the factories around it
    out: list[tuple[FileIndex, FuncInfo]] = []
    pattern = r"@\s*(?:\w+\.)*(?:" + "|".join(re.escape(n) for n in sorted(names)) + r")\b"
    for fx in files_with(scan.resolver, pattern, ix, needles=tuple(sorted(names))):
        for fn in fx.by_node.values():
            for d in fn.decorators:
                text = fx.text(d).lstrip("@").strip()
                head = text.split("(", 1)[0].rsplit(".", 1)[-1]
                if head in names:
                    out.append((fx, fn))
                    break
            if len(out) >= _MAX_DECORATED:
                return out
    return out


def _returns(fn: FuncInfo) -> list[Node]:
    body = fn.body
    if body is None:
        return []
    caps = run_query("(return_statement) @r", body).get("r", [])
    return [r for r in caps if fn.src.nav.enclosing(r, frozenset({"function_definition", "lambda"})) == fn.node]


def _host_element(scan: RegionScan, ix: FileIndex, fn: FuncInfo, e: Node, depth: int) -> bool:
    e = strip_parens(e)
    if e.type in _LITERALS:
        return True
    if e.type == "call":
        f = e.child_by_field_name("function")
        return f is not None and f.type == "identifier" and ix.text(f) in _HOST_CALLS
    if e.type != "identifier":
        return False
    name = ix.text(e)
    assign, _scope, is_param = ix.lookup(name, e)
    if not is_param:
        if assign is not None and assign.value is not None and depth <= 2 and \
                _host_element(scan, ix, fn, assign.value, depth + 1):
            return True  # n = int(lengths.sum())
        k = ix.kind(e)
        return k.cat in ("scalar", "bool") and not k.tensor
    if depth > 2 or name not in fn.params or fn.class_name is not None:
        return False  # a method's callers (forward, __call__, ...) are too many to read: not followed
    # a parameter: what the function's callers in the workspace pass for it
    pos = fn.params.index(name)
    callers = files_with(scan.resolver, rf"\b{re.escape(fn.name)}\s*\(", ix, needles=(fn.name,))
    if len(callers) > _MAX_CALLER_FILES:
        return False
    for cx in callers:
        cx.src.need_word(fn.name)  # every call in the tree, also in a lazily parsed file
        for c in run_query("(call function: [(identifier) @f (attribute attribute: (identifier) @f)]) @c",
                           cx.src.root).get("c", []):
            fnode = c.child_by_field_name("function")
            head = fnode.child_by_field_name("attribute") if fnode is not None and fnode.type == "attribute" \
                else fnode
            args = c.child_by_field_name("arguments")
            if head is None or args is None or cx.text(head) != fn.name:
                continue
            kw = [a for a in args.named_children if a.type == "keyword_argument"
                  and cx.text(a.child_by_field_name("name") or a) == name]
            pos_args = [a for a in args.named_children if a.type not in ("keyword_argument", "comment")]
            if any(a.type in ("list_splat", "dictionary_splat") for a in pos_args[:pos + 1]):
                continue
            arg = kw[0].child_by_field_name("value") if kw else (pos_args[pos] if pos < len(pos_args) else None)
            if arg is None:
                continue
            caller = cx.enclosing_function(c)
            if caller is not None and caller.node.id == fn.node.id:
                continue
            # a parameter of the caller is followed to its own callers (depth-limited)
            if _host_element(scan, cx, caller or fn, arg, depth + 1):
                return True
    return False


def _host_returns(scan: RegionScan, ix: FileIndex, fn: FuncInfo,
                  depth: int = 0) -> list[tuple[FileIndex, FuncInfo, Node]]:
    """Python values in the tuples `fn` returns (following a returned call of the workspace one level)."""
    out: list[tuple[FileIndex, FuncInfo, Node]] = []
    for r in _returns(fn):
        if not r.named_child_count:
            continue
        v = strip_parens(r.named_children[0])
        if v.type in ("expression_list", "tuple"):
            for e in v.named_children:
                if _host_element(scan, ix, fn, e, 0):
                    out.append((ix, fn, e))
        elif v.type == "call" and depth == 0:
            for t in scan.resolver.resolve_call(ix, v, EMPTY_ENV):
                out.extend(_host_returns(scan, t.ix, t.func, depth + 1))
    return out


def _returned(scan: RegionScan) -> None:
    region = scan.region
    if region.kind not in ("graph", "capture_begin", "wrapper") or not region.graph_name:
        return
    ix = region.ix
    holder = ix.enclosing_function(region.anchor)
    if holder is None or holder.body is None:
        return
    tail = ix.text(holder.body)[region.end_byte - holder.body.start_byte:].replace(" ", "")
    if ".replay(" not in tail or "return" not in tail:
        return  # not a wrapper that replays and hands a result back
    for call in _captured_calls(ix, region.stmts):
        resolved = scan.resolver.resolve_call(ix, call, EMPTY_ENV)
        # a callable found through what callers pass (a parameter or attribute typed at its call sites) is one
        # of the possible ones: a warning
        targets = [(t.ix, t.func, t.guess) for t in resolved]
        if not targets:
            targets = [(dix, dfn, None) for dix, dfn in _decorated(scan, ix, call)]
        for tix, fn, guess in targets:
            for hix, hfn, e in _host_returns(scan, tix, fn):
                may = f" (if `{guess}` is {fn.name}(), as a caller passes it)" if guess else ""
                scan.sink(Hit(_HAZARD, hix, e, region, (), [], "warning" if guess else None, (
                    f"`{hix.text(e)}` is a Python value returned by {hfn.name}(), which the graph captured at "
                    f"{where(ix, region.site)} runs; {holder.name}() hands back the capture-time result after "
                    f"every replay, so this value stays the one of the capture's call (silently wrong){may}")))


RULE = SourceRule(
    id="replay-returned-host-value",
    hazards=(Hazard(_HAZARD, eager_fallback=False),),
    around=(Around(149, _returned),),
)
