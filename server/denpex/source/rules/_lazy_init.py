"""The first use of cuBLAS / cuDNN inside a capture, unless the code ran before it (shared by lazy-init-cublas and
lazy-init-cudnn)."""

from __future__ import annotations

import heapq

from tree_sitter import Node

from denpex.source.capture.regions import CaptureRegion
from denpex.source.engine.around import scope_table, upto
from denpex.source.resolve.callgraph import Resolver
from denpex.source.resolve.index import FileIndex, positional
from denpex.source.rules._api import CallSite, Walk
from denpex.source.rules._frozen_outputs import callers
from denpex.source.syntax.parse import strip_parens, walk

CUBLAS_FUNCS = frozenset({"torch.matmul", "torch.mm", "torch.bmm", "torch.addmm", "torch.baddbmm", "torch.einsum",
                          "torch.nn.functional.linear", "torch.linalg.matmul"})
CUDNN_FUNCS = frozenset({"torch.nn.functional.conv1d", "torch.nn.functional.conv2d", "torch.nn.functional.conv3d",
                         "torch.conv2d", "torch.conv1d", "torch.conv3d"})
_FUNCS = {"cublas": CUBLAS_FUNCS, "cudnn": CUDNN_FUNCS}


def first_use(w: Walk, c: CallSite, lib: str, hazard: str) -> None:
    """Report the capture's first call that initialises `lib`, with the side-stream warm-up fix."""
    if w.region.kind not in ("graph", "wrapper", "capture_begin") or w.state.get(hazard):
        return
    q = c.qualname
    if q in CUBLAS_FUNCS:
        uses = lib == "cublas"
    elif q in CUDNN_FUNCS:
        uses = lib == "cudnn"
    else:
        f = c.func
        k = w.kind(f, c.frame) if f.type in ("identifier", "attribute") else None
        uses = k is not None and k.cat == "module" and lib in k.lib
    on_path = path_functions(c.frame.chain)
    if not uses or warmed_up(w.region, lib, on_path) or warmed_by_callers(w.resolver, w.region, on_path):
        return
    w.state[hazard] = True
    # cold for certain only where the capture's cold caller is the program's top (module code, or a function the
    # workspace never calls): a caller called in turn (main -> capture_step -> runner._record) may follow the
    # run's eager steps, out of this rule's sight
    certain = cold_at_the_top(w.resolver, w.region)
    w.report(hazard, c.node, c.frame, [w.fixes.warm_up()], severity=None if certain else "warning")


def cold_at_the_top(resolver: Resolver, r: CaptureRegion) -> bool:
    """The function holding the capture is module code or the program's entry, or each of its calls sits in module
    code or in an entry: a function called only from module code (`if __name__ == "__main__": main()`), or not
    at all in the workspace."""
    fn = r.ix.enclosing_function(r.anchor)
    if fn is None:
        return True
    for fx, call in callers(resolver, r.ix, fn.name, fn.class_name):
        outer = fx.enclosing_function(call)
        if outer is None or outer.name.startswith("__"):
            continue
        if any(gx.enclosing_function(g) is not None for gx, g in callers(resolver, fx, outer.name, outer.class_name)):
            return False
    return True


def path_functions(chain: tuple[str, ...]) -> frozenset[str]:
    """The names of the functions on the call path from the capture to the use (`self.m -> Net.forward`: forward)."""
    return frozenset(label.rsplit(" -> ", 1)[-1].rsplit(".", 1)[-1] for label in chain)


def _aliases(ix: FileIndex, owner: Node, targets: frozenset[str]) -> set[str]:
    """Names the scope binds once to a function on the path (`real = mod._fallback`): calling them warms it up."""
    out: set[str] = set()
    for name, assigns in ix.scope(owner).assigns.items():
        v = assigns[0].value if len(assigns) == 1 else None
        if v is not None and v.type in ("identifier", "attribute") and ix.text(v).rsplit(".", 1)[-1] in targets:
            out.add(name)
    return out


def warmed_up(r: CaptureRegion, lib: str | None, on_path: frozenset[str] = frozenset()) -> bool:
    """The capture's scope runs, before the capture, one of its callees, a function on the call path to the use
    (or a local alias of one), or the library's functions (`lib`; None: none)."""
    ix = r.ix
    anchor = r.anchor
    callees: set[str] = set()
    names: set[str] = set()
    for st in r.stmts:
        for n in walk(st):
            if n.type == "call":
                fn = n.child_by_field_name("function")
                if fn is not None:
                    callees.add(ix.text(fn))
                    if fn.type == "identifier":
                        names.add(ix.text(fn))
            elif n.type == "identifier":
                names.add(ix.text(n))
    lib_funcs = {q.rsplit(".", 1)[-1] for q in _FUNCS[lib]} if lib is not None else set()
    owner = ix.scope_of(anchor).node
    deeper = set(on_path) | _aliases(ix, owner, on_path) if on_path else set()
    wanted = {c.rsplit(".", 1)[-1] for c in callees} | lib_funcs | deeper
    # the calls of the scope before the capture that call a wanted name or pass one of the names
    calls = scope_table(ix, "calls", owner)
    argcalls = scope_table(ix, "argcalls", owner)
    before = [upto(calls.get(w), anchor.start_byte) for w in sorted(wanted) if w.isidentifier()]
    before += [upto(argcalls.get(a), anchor.start_byte) for a in sorted(names) if a.isidentifier()]
    for n in heapq.merge(*before, key=lambda c: c.start_byte):
        if n.end_byte > anchor.start_byte:
            continue
        fn = n.child_by_field_name("function")
        if fn is None:
            continue
        text = ix.text(fn)
        if text.rsplit(".", 1)[-1] in deeper and text not in callees:
            return True
        if text in callees and not text.endswith((".cuda", ".to")):
            k = ix.kind(fn) if fn.type in ("identifier", "attribute") else None
            if k is None or k.cat != "optimizer":
                return True
        if lib is not None:
            if ix.qualname(fn) in _FUNCS[lib]:
                return True
            if fn.type in ("identifier", "attribute") and ix.kind(fn).cat == "module" and lib in ix.kind(fn).lib:
                return True
        for arg in positional(n):
            if strip_parens(arg).type == "identifier" and ix.text(arg) in names and ix.kind(arg).cat == "module":
                return True
    # a helper of the class or module called before the capture that runs a callee of the capture itself
    for name in sorted(set(calls) - wanted):
        for n in upto(calls[name], anchor.start_byte):
            fn = n.child_by_field_name("function")
            if n.end_byte <= anchor.start_byte and fn is not None and _helper_runs(ix, anchor, ix.text(fn), callees):
                return True
    return False


def _helper_runs(ix: FileIndex, anchor: Node, text: str, callees: set[str]) -> bool:
    """`self._warmup()` (or a module function) called before the capture runs, in its own body, a callee of the
    capture spelled the same (`self.model(self.static_in)` on a side stream): the capture's warm-up, one level
    down."""
    helper = None
    if text.startswith("self.") and text.count(".") == 1:
        cls = ix.enclosing_class(anchor)
        helper = cls.methods.get(text[5:]) if cls is not None else None
    elif text.isidentifier():
        helper = ix.module_funcs.get(text)
    body = helper.body if helper is not None else None
    if body is None:
        return False
    for n in walk(body):
        if n.type == "call":
            f = n.child_by_field_name("function")
            if f is not None and ix.text(f) in callees and not ix.text(f).endswith((".cuda", ".to")):
                return True
    return False


def warmed_by_callers(resolver: Resolver, r: CaptureRegion, on_path: frozenset[str]) -> bool:
    """Every call found of the function that holds the capture comes after a call, in the caller's scope, of a
    sibling that runs a function on the path: `trainer.warmup(b); trainer.capture()`, where `warmup` calls
    `self.step_fn()` on a side stream and the capture runs `self.step_fn()` too. One caller without it keeps the
    finding (that path captures cold)."""
    ix = r.ix
    fn = ix.enclosing_function(r.anchor)
    if fn is None or not on_path:
        return False
    # every call spelled like the method, not Values.call_sites: that keeps only calls whose receiver resolves,
    # and an unresolved caller (`def again(t): t.capture()`) may be the one that captures cold
    found = callers(resolver, ix, fn.name, fn.class_name)
    # `self.capture()` from another method of the class (a re-capture after an lr change) runs on an object the
    # outside code set up, warm-up first: the outside callers decide
    outside = [(fx, call) for fx, call in found if not _own_method_call(fx, call, fn.class_name)]
    return bool(outside) and all(_sibling_warms(ix, fn.name, fn.class_name, fx, call, on_path) for fx, call in outside)


def _own_method_call(fx: FileIndex, call: Node, cls: str | None) -> bool:
    f = call.child_by_field_name("function")
    recv = f.child_by_field_name("object") if f is not None and f.type == "attribute" else None
    if cls is None or recv is None or fx.text(recv) != "self":
        return False
    owner = fx.enclosing_class(call)
    return owner is not None and owner.name == cls


def _sibling_warms(ix: FileIndex, name: str, cls: str | None, fx: FileIndex, call: Node,
                   on_path: frozenset[str]) -> bool:
    f = call.child_by_field_name("function")
    if f is None:
        return False
    receiver = f.child_by_field_name("object") if f.type == "attribute" else None
    want_recv = fx.text(receiver) if receiver is not None else None
    siblings = ix.classes[cls].methods if cls is not None and cls in ix.classes else {
        v.name: v for v in ix.functions if v.class_name is None}
    owner = fx.scope_of(call).node
    for before in sorted((n for ns in scope_table(fx, "calls", owner).values() for n in ns),
                         key=lambda n: n.start_byte):
        if before.end_byte > call.start_byte:
            break
        g = before.child_by_field_name("function")
        if g is None:
            continue
        if cls is not None:
            obj = g.child_by_field_name("object") if g.type == "attribute" else None
            if obj is None or fx.text(obj) != want_recv:
                continue  # another object's method
            m = g.child_by_field_name("attribute")
        else:
            m = g if g.type == "identifier" else None
            if m is not None:
                ix.src.need_def(fx.text(m))  # a lazily parsed file: the sibling's definition must be in the tree
        sib = siblings.get(fx.text(m)) if m is not None else None
        if sib is None or sib.name == name or sib.body is None:
            continue
        if on_path & scope_table(ix, "calls", sib.node).keys():
            return True
    return False
