"""The entries of a capture walk into one file's functions (issue 20: every keystroke fast).

A keystroke in a file that other files' captures reach (a layer deep in the import graph, a helper a capture
calls) used to re-walk every capture region of those files that consulted the edited function: Megatron-LM's
transformer_layer.py is reached by 4 regions whose walks take 50-150 ms each, while the part of each walk inside
the edited file takes 2-8 ms. Here the walk of a region in another file is recorded as a tree of `Unit`s, one per
call that enters a function of the analysed file: its hits there, the ranges of that file and the names it
consulted itself (not through an inner unit), the walker's state when it was entered and what it changed. An edit
inside one function marks the units that consulted it; the next analysis re-walks only those entries, from their
recorded calling context and walker state, and keeps the rest of the walk.

That is exact when the part of the walk outside the re-walked entries cannot tell the difference:
  * the entry is walked with the resolver's and walker's remembered answers set aside (`_isolate`), in a fresh
    walk as in a re-walk: what it computes depends only on its context and the trees, and no answer it computed
    (possibly from the edited text) is read after it without being recorded;
  * the re-walk must leave the walker's state (functions visited, defaults used, the rules' `state`) as the
    recorded walk did, else the whole region is walked again;
  * the calling context must name no code of the analysed file (its tree changes with the edit): an entry from
    one of its own functions, or with an argument bound to its code, is re-walked through the enclosing unit;
  * what the walk consulted outside every entry (the region's root) is checked as before: consulted, the whole
    region is walked again.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from tree_sitter import Node

from denpex.source.capture.regions import CaptureRegion
from denpex.source.engine.hits import Hit
from denpex.source.engine.kept import (
    Pending,
    Rec,
    RegionEntry,
    consulted,
    merged,
    shift_entry,
    shift_rec,
    shift_steps,
)
from denpex.source.engine.walker import CaptureWalker
from denpex.source.model import CallStep
from denpex.source.resolve.callgraph import Binding, Env
from denpex.source.resolve.carried import CarriedAnswers
from denpex.source.resolve.index import FileIndex, FuncInfo
from denpex.source.resolve.values import Values
from denpex.source.rules._api import Frame

_K = TypeVar("_K")
_V = TypeVar("_V")
Write = tuple[str, Any, Any]  # (which of the walker's dicts, key, value)


class Logged(dict[_K, _V]):
    """A walker dict (visited, default_used, state) that appends each write to the walk's log: the walker's state
    when an entry is made is the log up to there, what the entry changed the log's part it wrote (one log per
    walk, not a copy of the dicts per entry: NeMo's module.py is entered thousands of times)."""

    def __init__(self, tag: str, log: list[Write], items: dict[_K, _V] | None = None) -> None:
        super().__init__(items or {})
        self.tag = tag
        self.log = log

    def __setitem__(self, key: _K, value: _V) -> None:
        self.log.append((self.tag, key, value))
        super().__setitem__(key, value)

    def setdefault(self, key: _K, default: _V = None) -> _V:  # type: ignore[assignment]
        if key not in self:
            self[key] = default
        return self[key]


def _attach(w: CaptureWalker, log: list[Write]) -> None:
    """Give `w` logged dicts holding what `log` wrote (appending to it from now on)."""
    dicts: dict[str, dict[Any, Any]] = {"v": {}, "d": {}, "s": {}}
    for tag, key, value in log:
        dicts[tag][key] = value
    w.visited = Logged("v", log, dicts["v"])
    w.default_used = Logged("d", log, dicts["d"])
    w.state = Logged("s", log, dicts["s"])


@dataclass
class Context:
    """The call that entered the unit's function, as CaptureWalker.enter took it. A context that names code of the
    analysed file (a call from one of its own functions, an argument bound to its code) keeps those nodes' byte
    ranges (`anchors`, moved across edits): a re-walk finds them again in the current tree (`_relocated`)."""

    env: Env
    frame: Frame
    label: str
    branch: str | None
    step: CallStep | None
    maybe: str | None
    call: Node | None
    pre: Env
    anchors: list[tuple[int, int, str]] | None = None  # (start, end, type) of its nodes of the analysed file


@dataclass
class Unit:
    fn_start: int  # start byte of the function entered (in the analysed file); -1: the region's root
    ctx: Context | None  # None: not re-walkable on its own (the root, or a context naming the analysed file)
    before: int = -1  # the walk's log when it was entered (-1: not re-walkable)
    end: int = -1  # and when it returned
    items: list[Rec | Unit] = field(default_factory=list)  # its hits and inner units, in walk order
    touched: list[tuple[int, int]] = field(default_factory=list)
    attrs: list[tuple[int, int, str]] = field(default_factory=list)  # FileIndex.attr_deps' entries
    watched: set[str] = field(default_factory=set)
    redo: bool = False  # an edit since changed what it consulted: re-walked at the next analysis
    mark: int = 0  # while recorded: where its own part of ix.touched starts
    emark: int = 0  # and of ix.attr_deps

    def recs(self) -> list[Rec]:
        out: list[Rec] = []
        for it in self.items:
            out.extend(it.recs() if isinstance(it, Unit) else [it])
        return out

    def all_touched(self, out: list[tuple[int, int]], watched: set[str]) -> None:
        out.extend(self.touched)
        out.extend((a, b) for a, b, _name in self.attrs)
        watched |= self.watched
        for it in self.items:
            if isinstance(it, Unit):
                it.all_touched(out, watched)

    def pending(self) -> bool:
        return self.redo or any(isinstance(it, Unit) and it.pending() for it in self.items)


@dataclass
class Walk:
    """One capture region's recorded walk (by its identity in its file)."""

    ident: tuple[str, int, int, int, int]
    root: Unit
    log: list[Write]
    # where `log` writes a key naming a function of the recorded file (only those move with an edit; found at the
    # first edit: a walk's log is never rewritten otherwise, rewalk checks a re-walk wrote the same)
    local: list[int] | None = None


@dataclass
class RemoteEntry:
    """The hits that the capture regions of another file (one importing this one) produced in this file, region by
    region; `text` is the importer's text they were computed from, `head` what of this file finding its regions
    consulted."""

    text: str
    head: list[tuple[int, int]]
    head_watched: set[str]
    walks: dict[tuple[str, int, int, int, int], Walk]
    complete: bool = True  # every region's walk as recorded: none dropped or marked since
    # the importer's capture regions as found, with the importer's index and the wrapper names they were found
    # with: kept while this entry is (an edit that changed what finding them consulted, `head`, drops it)
    regions: tuple[FileIndex, frozenset[str], list[CaptureRegion]] | None = None

    @property
    def recs(self) -> list[Rec]:
        return [r for w in self.walks.values() for r in w.root.recs()]

    def consulted(self) -> tuple[list[tuple[int, int]], set[str]]:
        touched, watched = list(self.head), set(self.head_watched)
        for w in self.walks.values():
            w.root.all_touched(touched, watched)
        return touched, watched


@dataclass
class RegionCache:
    key: tuple[object, ...]
    entries: dict[tuple[str, int, int, int, int], RegionEntry]
    pending: list[Pending] = field(default_factory=list)
    remote: dict[str, RemoteEntry] = field(default_factory=dict)  # by importer path
    carried: CarriedAnswers = field(default_factory=CarriedAnswers)  # resolver answers free of this file

    def current(self, path: str) -> dict[tuple[str, int, int, int, int], RegionEntry]:
        """The entries (and remote entries) that survive the pending edits of file `path`, moved to the current
        positions; a remote entry keeps the walks of its regions that can be carried, the entries into the edited
        function marked to be walked again."""
        for p in self.pending:
            self.carried.drop_spelled(p.changed)
            kept: dict[tuple[str, int, int, int, int], RegionEntry] = {}
            for entry in self.entries.values():
                if consulted(p.fn_start, p.fn_end, p.changed, entry.touched, entry.watched):
                    continue
                moved = shift_entry(entry, p.s, p.t, p.delta, p.edit)
                if moved is not None:
                    kept[moved.ident] = moved
            self.entries = kept
            remote: dict[str, RemoteEntry] = {}
            for other, rentry in self.remote.items():
                if not rentry.walks and not rentry.head and not rentry.head_watched:
                    remote[other] = rentry  # no region, and finding none read this file: nothing to move
                    continue
                if _consulted(p, rentry.head, rentry.head_watched):
                    continue
                walks: dict[tuple[str, int, int, int, int], Walk] = {}
                for ident, walk in rentry.walks.items():
                    moved_walk = carry(walk, p, path)
                    if moved_walk is not None:
                        walks[ident] = moved_walk
                complete = rentry.complete and len(walks) == len(rentry.walks) and not any(
                    w.root.pending() for w in walks.values())
                remote[other] = RemoteEntry(rentry.text, [(_shift_any(a, p), _shift_any(b, p)) for a, b in rentry.head],
                                            rentry.head_watched, walks, complete, rentry.regions)
            self.remote = remote
        self.pending.clear()
        return self.entries


class Recorder:
    """Records a walk's entries into the functions of `ix`'s file (CaptureWalker.recorder)."""

    def __init__(self, ix: FileIndex, values: Values, to_rec: Callable[[Hit], Rec]) -> None:
        self.path = ix.path
        self.ix = ix
        self.values = values
        self.to_rec = to_rec
        self.stack: list[Unit] = []
        self.log: list[Write] = []

    def start(self, root: Unit, log: list[Write]) -> None:
        root.mark, root.emark = len(self.ix.touched), len(self.ix.attr_deps)
        self.ix.watched = set()
        self.stack = [root]
        self.log = log

    def attach(self, w: CaptureWalker) -> None:
        """Record `w`'s walk: its dicts logged to this recording's log."""
        w.recorder = self
        _attach(w, self.log)

    def finish(self) -> None:
        self._flush(self.stack[-1])
        self.stack[-1].touched = merged(self.stack[-1].touched)
        self.stack = []

    def sink(self, h: Hit) -> None:
        if h.ix.path == self.path:
            self.stack[-1].items.append(self.to_rec(h))

    def _flush(self, u: Unit) -> None:
        ix = self.ix
        u.touched.extend(ix.touched[u.mark:])
        u.attrs.extend(ix.attr_deps[u.emark:])
        u.watched |= ix.watched
        ix.watched = set()
        u.mark, u.emark = len(ix.touched), len(ix.attr_deps)

    def entry(self, w: CaptureWalker, ix: FileIndex, fn: FuncInfo, env: Env, frame: Frame, label: str,
              branch: str | None, step: CallStep | None, maybe: str | None, call: Node | None, pre: Env) -> None:
        if not self.stack or not w.would_enter(ix, fn, env, frame, branch, maybe, call, pre):
            w.walk_entry(ix, fn, env, frame, label, branch, step, maybe, call, pre)
            return
        parent = self.stack[-1]
        self._flush(parent)
        ctx = None
        if not (self.values.busy() or w.resolver.busy()):
            ctx = Context(env, frame, label, branch, step, maybe, call, pre)
            if not self._free(frame, env, pre):
                nodes: list[Node] = []
                _map_nodes(ctx, self.path, None, _collect(nodes))
                ctx.anchors = [(n.start_byte, n.end_byte, n.type) for n in nodes]
        unit = Unit(fn.node.start_byte, ctx)
        parent.items.append(unit)
        self.stack.append(unit)
        unit.mark, unit.emark = len(self.ix.touched), len(self.ix.attr_deps)
        if ctx is None:
            try:
                w.walk_entry(ix, fn, env, frame, label, branch, step, maybe, call, pre)
            finally:
                self._close(unit, parent)
            return
        unit.before = len(self.log)
        saved = _isolate(w, self.values)
        try:
            w.walk_entry(ix, fn, env, frame, label, branch, step, maybe, call, pre)
        finally:
            _restore(w, self.values, saved)
            self._close(unit, parent)
        unit.end = len(self.log)

    def _close(self, unit: Unit, parent: Unit) -> None:
        """`unit`'s entry has returned: its reads taken (as their union), its parent's resumed."""
        self._flush(unit)
        unit.touched = merged(unit.touched)
        self.stack.pop()
        parent.mark, parent.emark = len(self.ix.touched), len(self.ix.attr_deps)

    def _free(self, frame: Frame, env: Env, pre: Env) -> bool:
        """The context names no code of the recorded file (else its nodes are anchored, Context.anchors)."""
        return frame.ix.path != self.path and all(self._env_free(e) for e in (env, pre, frame.env))

    def _env_free(self, env: Env) -> bool:
        stack = [env]
        while stack:
            e = stack.pop()
            for _k, b in e.params:
                if b.ix.path == self.path:
                    return False
                stack.append(b.env)
        return True


_Saved = tuple[tuple[dict[Any, Any], ...], dict[Any, Any], dict[Any, Any], dict[Any, Any]]


def _isolate(w: CaptureWalker, v: Values) -> _Saved:
    """Set the remembered answers aside: the entry computes its own and they are dropped after it."""
    saved = (v.memos(), w.guard_wrappers, w.warm_memo, w.kind_memo)
    v.set_memos(None)
    w.guard_wrappers, w.warm_memo, w.kind_memo = {}, {}, {}
    return saved


def _restore(w: CaptureWalker, v: Values, saved: _Saved) -> None:
    v.set_memos(saved[0])
    w.guard_wrappers, w.warm_memo, w.kind_memo = saved[1], saved[2], saved[3]


# ---- carrying a recorded walk across an edit of the recorded file ------------------------------------------------

class _Gone(Exception):
    """Something recorded lies inside the edit: the walk is not kept."""


def _consulted(p: Pending, touched: list[tuple[int, int]], watched: set[str],
               attrs: list[tuple[int, int, str]] | None = None) -> bool:
    """Edit `p` may change what was read: a watched name spelled, a range touched that holds part of the statements
    the edit changed (a whole function walked, or one statement whose value was read), or, in a class or function
    whose writes of a word were read (attr_deps), a statement that may write it."""
    if any(re.search(rf"\b{re.escape(w)}\b", p.changed) for w in watched):
        return True
    if any(a <= p.fn_start and p.fn_end <= b and name in p.written for a, b, name in attrs or ()):
        return True
    lo, hi = p.span
    return any(a <= hi and lo <= b for a, b in touched)


def _shift(b: int, p: Pending) -> int:
    if b >= p.t:
        return b + p.delta
    if b <= p.s:
        return b
    raise _Gone


def carry(walk: Walk, p: Pending, path: str) -> Walk | None:
    """`walk` after edit `p` of file `path`: positions moved, the units that consulted the edited function marked
    to be re-walked (None: the walk itself must be walked again)."""
    try:
        ok = _carry(walk.root, p, path)
        if walk.local is None:
            walk.local = [i for i, (_tag, k, _v) in enumerate(walk.log) if _shift_key(k, p, path) is not k]
        if walk.local:
            log = walk.log = list(walk.log)
            for i in walk.local:
                tag, k, v = log[i]
                log[i] = (tag, _shift_key(k, p, path), v)
    except (_Gone, ValueError):
        return None
    return walk if ok else None


def _carry(u: Unit, p: Pending, path: str) -> bool:
    """Move `u` across the edit; False when it must be walked again and cannot be on its own (its parent is)."""
    if u.fn_start >= 0:
        u.fn_start = _shift(u.fn_start, p)
    if u.ctx is not None:
        step = u.ctx.step
        u.ctx = replace(u.ctx, frame=replace(u.ctx.frame, steps=shift_steps(u.ctx.frame.steps, path, p.edit)),
                        step=shift_steps((step,), path, p.edit)[0] if step is not None else None)
        if u.ctx.anchors is not None:
            u.ctx.anchors = _moved_anchors(u.ctx.anchors, p)
            if u.ctx.anchors is None:  # the calling code itself was edited: walked again with its caller
                u.ctx = None
                if u.redo:
                    return False
    if not u.redo and _consulted(p, u.touched, u.watched, u.attrs):
        if u.ctx is None:
            return False
        u.redo = True
    if u.redo:
        u.items, u.touched, u.attrs = [], [], []  # walked again: what it held is not carried
        return True
    u.touched = [(_shift_any(a, p), _shift_any(b, p)) for a, b in u.touched]
    u.attrs = [(_shift_any(a, p), _shift_any(b, p), name) for a, b, name in u.attrs]
    items: list[Rec | Unit] = []
    for it in u.items:
        if isinstance(it, Unit):
            if not _carry(it, p, path):
                if u.ctx is None:
                    return False
                u.redo = True
                u.items, u.touched, u.attrs = [], [], []
                return True
            items.append(it)
        else:
            items.append(shift_rec(it, path, p.s, p.t, p.delta, p.edit))
    u.items = items
    return True


def _shift_any(b: int, p: Pending) -> int:
    return b + p.delta if b >= p.t else b


def _shift_key(k: object, p: Pending, path: str) -> object:
    """A function's key (walker.visited's `(path, start)`, or a rule's key ending so) after the edit."""
    if isinstance(k, tuple) and len(k) >= 2 and k[-2] == path and isinstance(k[-1], int) and k[-1] >= 0:
        return (*k[:-1], _shift(k[-1], p))
    return k


# ---- walking the marked entries again ------------------------------------------------------------------------------

def rewalk(walk: Walk, w: CaptureWalker, rec: Recorder, index: Callable[[str], FileIndex | None]) -> bool:
    """Walk again the marked units of `walk` with walker `w` (a fresh one for the same region, `rec` its recorder;
    `index`: the workspace's current index of a file): False when a context names a file whose tree was replaced
    since (a lazily parsed tree grown) or a re-walk left the walker's state otherwise than the recorded walk did
    (walk the region again)."""
    by_start = {f.node.start_byte: f for f in rec.ix.functions}
    w.recorder = rec
    return _rewalk(walk, walk.root, w, rec, by_start, index)


def _rewalk(walk: Walk, u: Unit, w: CaptureWalker, rec: Recorder, by_start: dict[int, FuncInfo],
            index: Callable[[str], FileIndex | None]) -> bool:
    for i, it in enumerate(u.items):
        if not isinstance(it, Unit) or not it.pending():
            continue
        if not it.redo:
            if not _rewalk(walk, it, w, rec, by_start, index):
                return False
            continue
        ctx = it.ctx
        fn = by_start.get(it.fn_start)
        if ctx is None or it.before < 0 or fn is None or not _current(ctx, index, rec.path):
            return False
        if ctx.anchors is not None:
            ctx = _relocated(ctx, rec.ix)
            if ctx is None:
                return False
        log = walk.log[:it.before]
        holder = Unit(-1, None)
        rec.start(holder, log)
        _attach(w, log)
        values = rec.values
        rec.entry(w, rec.ix, fn, _rebind(ctx.env, values), replace(ctx.frame, env=_rebind(ctx.frame.env, values)),
                  ctx.label, ctx.branch, ctx.step, ctx.maybe, ctx.call, _rebind(ctx.pre, values))
        rec.finish()
        new = holder.items[0] if len(holder.items) == 1 and isinstance(holder.items[0], Unit) else None
        if new is None or new.before != it.before or log[it.before:] != walk.log[it.before:it.end]:
            return False  # the entry now changes the walker's state otherwise: the rest of the walk may differ
        u.items[i] = new
    return True


def _current(ctx: Context, index: Callable[[str], FileIndex | None], path: str) -> bool:
    """Every other file the context names is still indexed by the same FileIndex (its nodes are the current tree's;
    those of the analysed file `path` are found again from their anchors)."""
    ixs = {id(ctx.frame.ix): ctx.frame.ix}
    stack = [ctx.env, ctx.pre, ctx.frame.env]
    while stack:
        for _k, b in stack.pop().params:
            ixs[id(b.ix)] = b.ix
            stack.append(b.env)
    return all(ix.path == path or index(ix.path) is ix for ix in ixs.values())


# ---- contexts that name code of the analysed file ---------------------------------------------------------------

def _collect(out: list[Node]) -> Callable[[Node], Node]:
    def take(n: Node) -> Node:
        out.append(n)
        return n
    return take


def _map_nodes(ctx: Context, path: str, ix: FileIndex | None, f: Callable[[Node], Node]) -> Context:
    """`ctx` with every node of file `path` it names replaced by `f(node)`, in one fixed order (the call, the
    calling function, its defaults, then the bindings of env, pre and the frame's env, depth first), and that file's
    index by `ix` (None: kept). The calling frame's call and defaults lie in the frame's file."""
    local = ctx.frame.ix.path == path
    call = f(ctx.call) if local and ctx.call is not None else ctx.call
    func = ctx.frame.func
    func_node = f(func.node) if local and func is not None else None
    defaulted = tuple((k, f(d)) for k, d in ctx.frame.defaulted) if local else ctx.frame.defaulted

    def env_of(e: Env) -> Env:
        params: list[tuple[str, Binding]] = []
        for k, b in e.params:
            if b.ix.path == path:
                params.append((k, Binding(ix or b.ix, f(b.node), env_of(b.env))))
            else:
                params.append((k, Binding(b.ix, b.node, env_of(b.env))))
        return Env(tuple(params), e.values)

    env, pre, fenv = env_of(ctx.env), env_of(ctx.pre), env_of(ctx.frame.env)
    if ix is not None and local:
        found = next((fi for fi in ix.functions if func_node is not None and fi.node.start_byte == func_node.start_byte
                      and fi.node.end_byte == func_node.end_byte), None)
        frame = replace(ctx.frame, ix=ix, env=fenv, func=found if func is not None else None, defaulted=defaulted)
    else:
        frame = replace(ctx.frame, env=fenv, defaulted=defaulted)
    return replace(ctx, env=env, frame=frame, call=call, pre=pre)


class _Lost(Exception):
    """An anchored node is not in the current tree as it was."""


def _relocated(ctx: Context, ix: FileIndex) -> Context | None:
    """`ctx` with its anchored nodes taken from `ix`'s current tree (None: one is not there as it was)."""
    assert ctx.anchors is not None
    anchors = iter(ctx.anchors)

    def find(_old: Node) -> Node:
        a, b, t = next(anchors)
        n: Node | None = ix.src.root.descendant_for_byte_range(a, b)
        while n is not None and not (n.start_byte == a and n.end_byte == b and n.type == t):
            if n.start_byte < a or n.end_byte > b:
                n = None
                break
            n = n.parent
        if n is None or n.has_error:
            raise _Lost
        return n

    try:
        moved = _map_nodes(ctx, ix.path, ix, find)
    except (_Lost, StopIteration):
        return None
    if moved.frame.func is None and ctx.frame.func is not None:
        return None
    return moved


def _moved_anchors(anchors: list[tuple[int, int, str]], p: Pending) -> list[tuple[int, int, str]] | None:
    """The anchors after edit `p` (None: one lies in the statements the edit changed)."""
    lo, hi = p.span
    out: list[tuple[int, int, str]] = []
    for a, b, t in anchors:
        if a <= hi and lo <= b and not (a <= lo and hi <= b):
            return None  # a node inside the edited statements (one holding them all, a function, moves whole)
        if a <= lo and hi <= b:
            out.append((a, b + p.delta, t))  # it holds the edit: its end moves
        else:
            out.append((_shift_any(a, p), _shift_any(b, p), t))
    return out


def _rebind(env: Env, values: Values) -> Env:
    """`env` with this analysis's resolver values (bindings name code of unchanged files only)."""
    if not env.params and env.values is None:
        return env
    return Env(tuple((k, Binding(b.ix, b.node, _rebind(b.env, values))) for k, b in env.params),
               values if env.values is not None else None)
