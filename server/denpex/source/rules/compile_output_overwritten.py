"""compile-output-overwritten (DPX700): an output of a function compiled with CUDA graphs (reduce-overhead) kept
in a name, the function called again, then the name read: the second run overwrote it. Not when the name was
bound again by then (`out = f(a)`, `out = f(b)`: it reads the new output).

Also (compile-output-collected) the outputs of such calls collected across loop iterations (`outs.append(y)`,
`store.add(y)`, `d[i] = y`, `[f(x) for x in xs]`), directly or through a function that returns the call's
output to a caller that keeps it: every entry aliases the output memory the next call writes."""

from __future__ import annotations

from tree_sitter import Node

from denpex.source.engine.around import after, enclosing_loop, scope_table
from denpex.source.engine.hits import Hit
from denpex.source.fixes import edits as F
from denpex.source.fixes.eager import eager_fallback
from denpex.source.resolve.index import FileIndex
from denpex.source.rules._api import Around, Hazard, RegionScan, SourceRule
from denpex.source.rules._frozen import where
from denpex.source.rules._frozen_outputs import (
    Kept,
    callers,
    calls_spelled,
    kept_across_iterations,
    returned,
)
from denpex.source.syntax.mentions import identifiers
from denpex.source.syntax.parse import walk


def _outputs(scan: RegionScan) -> None:
    region = scan.region
    if region.kind != "compile":
        return
    ix = region.ix
    names = set(region.compiled_names)
    if not names:
        return
    owner = ix.scope_of(region.anchor).node
    body = owner if owner.type == "module" else owner.child_by_field_name("body")
    if body is None:
        return
    start, end = region.end_byte, body.end_byte
    by_name = scope_table(ix, "named_calls", owner)
    calls = sorted((c for name in names if name.isidentifier() for c in after(by_name.get(name), start)),
                   key=lambda c: c.start_byte)
    for call in calls:
        parent = call.parent
        if parent is None or parent.type != "assignment" or parent.child_by_field_name("right") != call:
            continue
        left = parent.child_by_field_name("left")
        if left is None or left.type != "identifier" or enclosing_loop(call, body) is not None:
            continue
        name = ix.text(left)
        later_calls = [c for c in calls if c.start_byte > parent.end_byte]
        if not later_calls:
            continue
        nxt = later_calls[0]
        if _rebound(ix, name, parent, nxt, owner):
            continue  # `out = f(a)` then `out = f(b)`: the name holds the new output, the old one is not kept
        for n in identifiers(ix, name, nxt.end_byte, end):
            if n.start_byte <= nxt.end_byte or ix.scope_of(n).node.id != owner.id:
                continue
            p = n.parent
            if p is not None and p.type == "assignment" and p.child_by_field_name("left") == n:
                break
            fx = F.fix("Clone the output before the next call", "unsafe",
                       [F.replace_node(ix, call, f"{ix.text(call)}.clone()")])
            fb = eager_fallback(region, None)
            grad = _grad_may_be_pending(ix, region.callables, (call, nxt))
            msg = None if grad is None else (
                "An output of a function compiled with CUDA graphs (reduce-overhead) is read after the next call, "
                f"which may have overwritten it, unless gradients are recorded: {grad}, and while an output's "
                "backward has not run, CUDA graph trees keep it (the next call takes the slow path: checked on an "
                "H200, torch 2.11); with no_grad or frozen parameters it holds the next call's values (silently "
                "wrong)")
            scan.sink(Hit("compile-output-reused", ix, parent, region, (), [f for f in (fx, fb) if f],
                          "warning" if grad is not None else None, msg))
            break


_NO_GRAD = ("no_grad", "inference_mode")


def _grad_may_be_pending(ix: FileIndex, compiled: list[Node], calls: tuple[Node, Node]) -> str | None:
    """Why the two calls' outputs may require grad (a compiled nn.Module has parameters, an argument was made
    with requires_grad=True), or None: then, or under `torch.no_grad()` / `inference_mode()`, an output the next
    call overwrites is read silently (torchao's test_quantize_2d.py); with a backward pending it is not
    (test_nvfp4_linear.py, bench/ecosystem/gpu_check_compile_overwrite.py)."""
    for c in calls:
        p: Node | None = c
        while p is not None:
            if p.type == "with_statement":
                clause = next((k for k in p.named_children if k.type == "with_clause"), None)
                if clause is not None and any(w in ix.text(clause) for w in _NO_GRAD):
                    return None
            if p.type == "function_definition":
                dd = p.parent
                if dd is not None and dd.type == "decorated_definition" and any(
                        w in ix.text(d) for d in dd.named_children if d.type == "decorator" for w in _NO_GRAD):
                    return None
            p = p.parent
    for target in compiled:
        k = ix.kind(target)
        if k.cat == "module":
            return f"`{ix.text(target)}` is a module, whose parameters require grad unless frozen"
    for c in calls:
        args = c.child_by_field_name("arguments")
        for a in (args.named_children if args is not None else []):
            if a.type != "identifier":
                continue
            assign, _scope, _p = ix.lookup(ix.text(a), a)
            value = assign.value if assign is not None else None
            if value is not None and "requires_grad=True" in ix.text(value).replace(" ", ""):
                return f"`{ix.text(a)}` is made with requires_grad=True"
    return None


def _rebound(ix: FileIndex, name: str, first: Node, nxt: Node, owner: Node) -> bool:
    """`name` is bound again after the assignment `first` and by the time the next call `nxt` returns: by that
    call's own assignment (`out = f(b)`, also in a tuple target), or in between by a value that does not read it."""
    p = nxt.parent
    if p is not None and p.type == "assignment" and p.child_by_field_name("right") == nxt:
        left = p.child_by_field_name("left")
        if left is not None and any(n.type == "identifier" and ix.text(n) == name for n in walk(left)):
            return True
    for n in identifiers(ix, name, first.end_byte, nxt.start_byte):
        q = n.parent
        if q is None or q.type != "assignment" or q.child_by_field_name("left") != n or ix.scope_of(n).node.id != owner.id:
            continue
        right = q.child_by_field_name("right")
        if right is not None and not any(m.type == "identifier" and ix.text(m) == name for m in walk(right)):
            return True  # (`out = out[0]` still views the old output)
    return False


def _producer_root(ix: FileIndex, anchor: Node, name: str) -> Node:
    """Where calls of the compiled `name` are looked for: the class holding the compile for `self.fn`, the
    compile's own function for a local name, the module for a module-level or decorated function."""
    if "." in name:
        p = anchor.parent
        while p is not None and p.type != "class_definition":
            p = p.parent
        return p if p is not None else ix.src.root
    owner = ix.scope_of(anchor).node
    return owner


def _collected(scan: RegionScan) -> None:
    region = scan.region
    if region.kind != "compile" or not region.compiled_names:
        return
    ix = region.ix
    seen: set[tuple[str, int]] = set()
    for name in dict.fromkeys(region.compiled_names):
        root = _producer_root(ix, region.anchor, name)
        wrappers: dict[int, Node] = {}
        for call in calls_spelled(ix, root, {name}):
            k = kept_across_iterations(ix, call)
            if k is not None:
                _report(scan, k, name, None, seen)
                continue
            fn = ix.enclosing_function(call)
            if fn is not None and returned(ix, fn.node, set(), {name}) is not None:
                wrappers[fn.node.id] = fn.node
        for fn_node in wrappers.values():
            info = ix.by_node.get(fn_node.id)
            if info is None:
                continue
            for fx, call in callers(scan.resolver, ix, info.name, info.class_name):
                k = kept_across_iterations(fx, call)
                if k is not None:
                    _report(scan, k, name, f"{info.name}() ({where(ix, fn_node)}) returns it", seen)


def _report(scan: RegionScan, k: Kept, name: str, via: str | None, seen: set[tuple[str, int]]) -> None:
    key = (k.ix.path, k.node.id)
    if key in seen:
        return
    seen.add(key)
    region = scan.region
    text = k.ix.text(k.value)
    clone = f"{text}.clone()" if k.value.type in ("identifier", "call", "subscript", "attribute") else f"({text}).clone()"
    fx = F.fix("Clone kept outputs", "unsafe", [F.replace_node(k.ix, k.value, clone)], in_place=True)
    how = f"; {via}" if via else ""
    doubt = region.uncertain
    msg = (f"An output of `{name}` (compiled with CUDA graphs{how}) is kept across loop iterations at "
           f"{where(k.ix, k.node)} ({k.label}): the next call writes the same output memory, so every kept entry "
           "ends up holding the last call's values (silently wrong): clone() what you keep"
           + (" (if the compile's mode uses CUDA graphs)" if doubt else ""))
    scan.sink(Hit("compile-output-collected", k.ix, k.node, region, (), [fx] if fx else [],
                  "warning" if doubt else None, msg))


RULE = SourceRule(
    id="compile-output-overwritten",
    hazards=(Hazard("compile-output-reused"), Hazard("compile-output-collected", eager_fallback=False)),
    around=(Around(40, _outputs), Around(41, _collected)),
)
