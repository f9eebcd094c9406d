"""Shared by the frozen-state rules (issue 21): where host code changes a Python value between replays.

A graph replays device work only, so a Python value read while capturing is fixed for every replay. What these
helpers find is the host side: the files of the workspace that write an attribute or a name, the loops that
replay a graph (directly or through a function whose body calls `.replay()`), and whether such a loop captures
again (then each value gets its own capture and nothing is frozen)."""

from __future__ import annotations

import re
import sys
import weakref
from dataclasses import dataclass
from pathlib import Path

from tree_sitter import Node

from denpex.source.capture.regions import CaptureRegion
from denpex.source.resolve.callgraph import Resolver
from denpex.source.resolve.index import FileIndex, FuncInfo
from denpex.source.resolve.workspace import Workspace
from denpex.source.syntax.mentions import def_of
from denpex.source.syntax.parse import growths, run_query, walk

_WRITES = (
    "(assignment left: (attribute attribute: (identifier) @attr)) @w\n"
    "(augmented_assignment left: (attribute attribute: (identifier) @attr)) @w\n"
)
_NAME_WRITES = (
    "(assignment left: (identifier) @name) @w\n"
    "(augmented_assignment left: (identifier) @name) @w\n"
)
_CALLS = "(call function: [(identifier) @name (attribute attribute: (identifier) @name)]) @c"
# constructors and setup methods: a write there happens once, before any replay
SETUP_METHODS = frozenset({"__init__", "__new__", "__post_init__", "__setstate__", "reset_parameters"})
# the right-hand sides that are plain Python values (not a module, tensor or buffer rebound)
_VALUE_RHS = frozenset({"true", "false", "integer", "float", "string", "none", "comparison_operator",
                        "boolean_operator", "not_operator", "identifier", "attribute", "binary_operator",
                        "unary_operator", "conditional_expression", "subscript"})
_VALUE_CALLS = frozenset({"bool", "int", "float", "str", "len", "min", "max", "round"})
_CAPTURE_WORDS = (b"torch.cuda.graph(", b".capture_begin(", b"make_graphed_callables(", b"cuda.graph(")
# ((id of the workspace, its generation, question), lazy trees grown so far) -> (the workspace, weakly, and the
# answer): a workspace freed and another made at the same address must not read the first one's answers
_CACHE: dict[tuple[tuple[int, int, str], int], tuple[weakref.ref[Workspace], object]] = {}


def _remember(ws: Workspace, key: tuple[int, int, str], value: object) -> None:
    """Keep an answer for this workspace generation (bounded: a long editor session keeps asking)."""
    if len(_CACHE) > 512:
        _CACHE.clear()
    _CACHE[(key, growths())] = (weakref.ref(ws), value)


def _recall(ws: Workspace | None, key: tuple[int, int, str] | None) -> object:
    if ws is None or key is None:
        return None
    hit = _CACHE.get((key, growths()))  # a lazily parsed tree grown since: asked again
    return hit[1] if hit is not None and hit[0]() is ws else None


def workspace_of(resolver: Resolver) -> Workspace | None:
    """The workspace the resolver looks modules up in (None for a file analysed on its own)."""
    ws = getattr(resolver.lookup_module, "__self__", None)
    return ws if isinstance(ws, Workspace) else None


def where(ix: FileIndex, node: Node) -> str:
    return f"{Path(ix.path).name}:{node.start_point[0] + 1}"


# pattern -> path -> (the text searched, held so its identity means "unchanged", and whether it matched): a
# workspace change bumps the generation, but only the changed file's text needs the regex again
_MATCHES: dict[str, dict[str, tuple[str, bool]]] = {}


def files_with(resolver: Resolver, pattern: str, *local: FileIndex, needles: tuple[str, ...] = ()) -> list[FileIndex]:
    """The files of the workspace whose text matches `pattern` (a regex), or of `local` without a workspace.
    `needles`: strings of which every match of `pattern` holds one; a text holding none is not searched. The
    answer is the same: `in` finds a word ten times faster than a pattern opening with a lookbehind or \\b
    (the workspace's word sets, tried instead, took the same time and 20 MB more on Megatron-LM)."""
    ws = workspace_of(resolver)
    rx = re.compile(pattern)

    def matches(text: str) -> bool:
        return (not needles or any(n in text for n in needles)) and rx.search(text) is not None

    if ws is None:
        seen: dict[str, FileIndex] = {}
        for ix in local:
            if matches(ix.src.text):
                seen.setdefault(ix.path, ix)
        return list(seen.values())
    key = (id(ws), ws.generation, "files:" + pattern)
    hit = _recall(ws, key)
    if isinstance(hit, list):
        return hit
    out: list[FileIndex] = []
    per_file = _MATCHES.get(pattern)
    if per_file is None or len(per_file) > 4 * len(ws) + 64:
        if len(_MATCHES) >= 256:
            _MATCHES.clear()
        per_file = _MATCHES[pattern] = {}
    for p in ws.paths():
        text = ws.text(p) or ""
        seen_text = per_file.get(p)
        if seen_text is not None and seen_text[0] is text:
            found = seen_text[1]
        else:
            found = matches(text)
            per_file[p] = (text, found)
        if found:
            fx = ws.index(p)
            if fx is not None:
                out.append(fx)
    _remember(ws, key, out)
    return out


def _function_names(ix: FileIndex, words: tuple[bytes, ...], method: str | None) -> set[str]:
    """Names of the functions of `ix` whose own body calls `.<method>(` (or spells one of `words`)."""
    out: set[str] = set()
    data = ix.src.data
    for fn in ix.by_node.values():
        body = fn.body
        if body is None or _autograd_step(ix, fn):
            continue
        chunk = data[body.start_byte:body.end_byte]
        called = method is not None and f".{method}(".encode() in chunk.replace(b" ", b"")
        if called or any(w in chunk for w in words):
            out.add(fn.name)
    return out


def _autograd_step(ix: FileIndex, fn: FuncInfo) -> bool:
    """The forward/backward of a torch.autograd.Function subclass: autograd runs them (`Cls.apply(...)`, a
    `loss.backward()` through it), never a call by their name; as replayers by name they would make every
    `loss.backward()` in the workspace a replay (Megatron-LM's _CudagraphReplayNode)."""
    if fn.name not in ("forward", "backward") or fn.class_name is None:
        return False
    cls = ix.classes.get(fn.class_name)
    return cls is not None and any(b.rsplit(".", 1)[-1] == "Function" for b in cls.bases)


def replayers(resolver: Resolver, *local: FileIndex) -> set[str]:
    """Functions of the workspace whose body replays a graph (`x.replay()`), by name."""
    ws = workspace_of(resolver)
    key = (id(ws), ws.generation, "replayers") if ws is not None else None
    hit = _recall(ws, key)
    if isinstance(hit, set):
        return hit
    out: set[str] = set()
    for ix in files_with(resolver, r"\.replay\(", *local, needles=(".replay(",)):
        out |= _function_names(ix, (), "replay")
    if ws is not None and key is not None:
        _remember(ws, key, out)
    return out


def graphed_names(region: CaptureRegion) -> set[str]:
    """What a graphed callable is bound to (`graphed = make_graphed_callables(block, ...)`, `model.block = ...`):
    a call of it replays. Empty for other captures."""
    if region.kind != "graphed_callables":
        return set()
    ix = region.ix
    st = region.anchor
    a = st.named_children[0] if st.type == "expression_statement" and st.named_child_count else st
    left = a.child_by_field_name("left") if a.type == "assignment" else None
    out: set[str] = set()
    targets = [left] if left is not None and left.type != "pattern_list" else (
        left.named_children if left is not None else [])
    for t in targets:
        if t.type == "identifier":
            out.add(ix.text(t))
        elif t.type == "attribute":
            attr = t.child_by_field_name("attribute")
            obj = t.child_by_field_name("object")
            if attr is not None:
                out.add(ix.text(attr))
            if obj is not None and obj.type == "identifier":
                out.add(ix.text(obj))  # model.block = graphed: calling model runs it
    return out


# per file index and tree epoch: asked once per capture region, and a file can hold hundreds of them
_LOCAL_REPLAYERS: weakref.WeakKeyDictionary[FileIndex, tuple[int, frozenset[str]]] = weakref.WeakKeyDictionary()


def local_replayers(ix: FileIndex) -> set[str]:
    """Functions of one file whose body replays a graph (a name of another file may be any other function)."""
    known = _LOCAL_REPLAYERS.get(ix)
    if known is not None and known[0] == ix.src.epoch:
        return set(known[1])
    found = _function_names(ix, (), "replay") if ".replay(" in ix.src.text.replace(" ", "") else set()
    _LOCAL_REPLAYERS[ix] = (ix.src.epoch, frozenset(found))
    return found


def capturers(resolver: Resolver, *local: FileIndex) -> set[str]:
    """Functions of the workspace whose body opens a capture, by name."""
    ws = workspace_of(resolver)
    key = (id(ws), ws.generation, "capturers") if ws is not None else None
    hit = _recall(ws, key)
    if isinstance(hit, set):
        return hit
    out: set[str] = set()
    for ix in files_with(resolver, r"cuda\.graph\(|capture_begin\(|make_graphed_callables\(", *local,
                         needles=("cuda.graph(", "capture_begin(", "make_graphed_callables(")):
        out |= _function_names(ix, _CAPTURE_WORDS, None)
    if ws is not None and key is not None:
        _remember(ws, key, out)
    return out


def _calls_in(ix: FileIndex, node: Node) -> list[tuple[str, Node]]:
    caps = run_query(_CALLS, node)
    out = []
    for c in caps.get("c", []):
        f = c.child_by_field_name("function")
        if f is None:
            continue
        n = f if f.type == "identifier" else f.child_by_field_name("attribute")
        if n is not None:
            out.append((ix.text(n), c))
    return out


def loop_replays(ix: FileIndex, loop: Node, names: set[str]) -> Node | None:
    """A call in `loop` that replays a graph: `x.replay()` or a call of a replaying function."""
    for name, c in _calls_in(ix, loop):
        if name == "replay" or name in names:
            return c
    return None


def recaptures(ix: FileIndex, loop: Node, names: set[str], word: str) -> bool:
    """`loop` captures again on every pass, or whenever `word` (the value that changes) differs: a capture or a
    call of a capturing function in it, unconditional in the loop or under a condition that mentions `word`."""
    sites = [c for name, c in _calls_in(ix, loop) if name in names or name in ("capture_begin", "graph")]
    for c in sites:
        p = c.parent
        conditional = False
        while p is not None and p.id != loop.id:
            if p.type in ("if_statement", "elif_clause", "while_statement"):
                cond = p.child_by_field_name("condition")
                if cond is not None and re.search(rf"(?<!\w){re.escape(word)}(?!\w)", ix.text(cond)):
                    return True
                conditional = True
            p = p.parent
        if not conditional:
            return True
    return False


def enclosing_loops(node: Node) -> list[Node]:
    """The for/while loops holding `node` inside its function, innermost first."""
    out = []
    p = node.parent
    while p is not None and p.type not in ("function_definition", "class_definition", "lambda"):
        if p.type in ("for_statement", "while_statement"):
            out.append(p)
        p = p.parent
    return out


def value_rhs(ix: FileIndex, assign: Node) -> bool:
    """The assigned value is a plain Python value (a flag, a number, a mode string), not an object or tensor."""
    if assign.type == "augmented_assignment":
        return True
    right = assign.child_by_field_name("right")
    if right is None:
        return False
    if right.type == "parenthesized_expression" and right.named_child_count == 1:
        right = right.named_children[0]
    if right.type in _VALUE_RHS:
        return True
    if right.type == "call":
        f = right.child_by_field_name("function")
        return f is not None and f.type == "identifier" and ix.text(f) in _VALUE_CALLS
    return False


@dataclass(frozen=True)
class Write:
    ix: FileIndex
    node: Node  # the assignment
    in_replay_loop: bool  # inside a loop that replays and does not capture again
    method: str | None  # the function holding it
    self_write: bool  # `self.<attr> = ...`


_WRITE_ATTR = re.compile(r"\.(\w+)\s*(?:[-+*/|&]|//)?=(?!=)")  # what files_with's per-attribute pattern finds
# path -> (the text read, held so its identity means "unchanged", and the attributes it assigns)
_WRITTEN: dict[str, tuple[str, frozenset[str]]] = {}


def _attribute_write_files(resolver: Resolver, attr: str, *local: FileIndex) -> list[FileIndex]:
    """The files that spell an assignment to `.attr`: what `files_with` gives for the pattern above with `attr`
    in place of the word, from one read of each text for every attribute (TransformerEngine asks of 266
    attributes, each a search of all 449 files)."""
    ws = workspace_of(resolver)
    if ws is None:
        return files_with(resolver, rf"\.{re.escape(attr)}\s*(?:[-+*/|&]|//)?=(?!=)", *local, needles=("." + attr,))
    key = (id(ws), ws.generation, "written-attributes")
    hit = _recall(ws, key)
    if not isinstance(hit, dict):
        if len(_WRITTEN) > 4 * len(ws) + 64:
            _WRITTEN.clear()
        files: dict[str, list[str]] = {}
        for p in ws.paths():
            text = ws.text(p) or ""
            seen = _WRITTEN.get(p)
            if seen is None or seen[0] is not text:
                seen = _WRITTEN[p] = (text, frozenset(sys.intern(a) for a in _WRITE_ATTR.findall(text)))
            for a in seen[1]:
                files.setdefault(a, []).append(p)
        _remember(ws, key, files)
        hit = files
    return [ix for p in hit.get(attr, ()) if (ix := ws.index(p)) is not None]


# per file index: its attribute assignments by attribute, for the tree of that epoch (asked once per attribute)
_WRITES_OF: weakref.WeakKeyDictionary[FileIndex, tuple[int, dict[str, list[Node]]]] = weakref.WeakKeyDictionary()


def _writes_of(ix: FileIndex) -> dict[str, list[Node]]:
    known = _WRITES_OF.get(ix)
    if known is not None and known[0] == ix.src.epoch:
        return known[1]
    caps = run_query(_WRITES, ix.src.root)
    out: dict[str, list[Node]] = {}
    for w, a in zip(caps.get("w", []), caps.get("attr", []), strict=False):
        out.setdefault(ix.text(a), []).append(w)
    _WRITES_OF[ix] = (ix.src.epoch, out)
    return out


def attribute_writes(resolver: Resolver, attr: str, *local: FileIndex, also: frozenset[str] = frozenset()
                     ) -> list[Write]:
    """Assignments `<x>.<attr> = <python value>` across the workspace, outside constructors (`also`: more names
    whose calls replay, a graphed callable's)."""
    ws = workspace_of(resolver)
    key = (id(ws), ws.generation, f"writes:{attr}:{sorted(also)}") if ws is not None else None
    hit = _recall(ws, key)
    if isinstance(hit, list):
        return hit  # asked once per attribute: every condition on it reads the same writes
    rep = replayers(resolver, *local) | also
    cap = capturers(resolver, *local)
    out: list[Write] = []
    if ws is not None and key is not None:
        _remember(ws, key, out)
    for ix in _attribute_write_files(resolver, attr, *local):
        ix.src.need_word(attr)  # each write in the tree, also in a lazily parsed file (as name_writes)
        for w in _writes_of(ix).get(attr, ()):
            if not value_rhs(ix, w):
                continue
            fn = ix.enclosing_function(w)
            if fn is not None and fn.name in SETUP_METHODS:
                continue
            left = w.child_by_field_name("left")
            obj = left.child_by_field_name("object") if left is not None else None
            looped = any(loop_replays(ix, lp, rep) is not None and not recaptures(ix, lp, cap, attr)
                         for lp in enclosing_loops(w))
            out.append(Write(ix, w, looped, fn.name if fn is not None else None,
                             obj is not None and ix.text(obj) == "self"))
    return out


def name_writes(resolver: Resolver, ix: FileIndex, name: str, owner: Node, also: frozenset[str] = frozenset()
                ) -> list[Write]:
    """Rebindings of `name` in scope `owner` (module or function) of `ix`, and, for a module-level name, in the
    functions of the file that declare it `global`."""
    rep = replayers(resolver, ix) | also
    cap = capturers(resolver, ix)
    # every write must be in the tree: a lazily parsed file may have left out the function that sets a global
    # (Megatron-LM's configure_nvtx_profiling); the analysis runs again once it is parsed
    ix.src.need_word(name)
    caps = run_query(_NAME_WRITES, ix.src.root)
    out: list[Write] = []
    for w, n in zip(caps.get("w", []), caps.get("name", []), strict=False):
        if ix.text(n) != name or not value_rhs(ix, w):
            continue
        d = def_of(w)
        fn = ix.enclosing_function(w)
        elsewhere = (d.id if d is not None else ix.src.root.id) != owner.id
        if elsewhere and (owner.type != "module" or fn is None or name not in ix.scope(fn.node).globals):
            continue
        looped = any(loop_replays(ix, lp, rep) is not None and not recaptures(ix, lp, cap, name)
                     for lp in enclosing_loops(w))
        out.append(Write(ix, w, looped, fn.name if fn is not None else None, False))
    return out


def method_calls(resolver: Resolver, method: str, cls: str, home: FileIndex, *local: FileIndex,
                 also: frozenset[str] = frozenset()) -> tuple[list[Write], int]:
    """The calls `<x>.<method>(...)` across the workspace (as writes: in a replay loop or not), and how many: in
    the file of class `cls` (`home`) and in files that spell `cls` (a method of another class named alike is
    not this one's)."""
    rep = replayers(resolver, *local) | also
    cap = capturers(resolver, *local)
    out: list[Write] = []
    word = re.compile(rf"(?<!\w){re.escape(cls)}(?!\w)")
    for ix in files_with(resolver, rf"\.{re.escape(method)}\s*\(", *local, needles=("." + method,)):
        if ix.path != home.path and not word.search(ix.src.text):
            continue
        ix.src.need_word(method)
        for name, c in _calls_in(ix, ix.src.root):
            f = c.child_by_field_name("function")
            if name != method or f is None or f.type != "attribute":
                continue
            fn = ix.enclosing_function(c)
            if fn is not None and fn.name == method:
                continue
            looped = any(loop_replays(ix, lp, rep) is not None and not recaptures(ix, lp, cap, method)
                         for lp in enclosing_loops(c))
            out.append(Write(ix, c, looped, fn.name if fn is not None else None, False))
    return out, len(out)


def mentions(ix: FileIndex, node: Node, texts: set[str]) -> Node | None:
    """The first identifier or attribute under `node` spelled as one of `texts`."""
    for n in walk(node):
        if n.type in ("identifier", "attribute") and ix.text(n) in texts:
            return n
    return None
