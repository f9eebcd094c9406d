"""Resolution oracle: Denpex's call targets in reached code against jedi's, per project of the manifest.

    .venv/bin/pip install -e '.[bench]'                 # jedi (bench only; Denpex never imports it)
    .venv/bin/python bench/ecosystem/oracle.py --only nano-vllm gpt-fast --budget-s 300 --max-calls 2000

For each project tree (--cache DIR/NAME, the trees check.py materialises) the whole tree is set up as
`denpex scan .` does at its root (same file walk, same [tool.denpex] config, presets and capture wrappers),
and Denpex's own capture walker runs over every capture region with no rules enabled. Each call it visits
(code reached from capture sites, at any depth) is recorded with the targets `Resolver.resolve_call` gave it,
unioned over the activations that reached it. Jedi is then asked, at the callee's name (`f` of `f(x)`, `m` of
`a.b.m(x)`), `Script.goto(follow_imports=True)` and, where that lands on a variable, `Script.infer`.

A call falls in one bucket:
  same          both name the same definition (an instance or class from jedi matches the method Denpex
                enters on it: its forward/__call__/__init__, looked up through the class's bases)
  jedi_only     jedi finds a definition inside the tree, Denpex resolves nothing: a Denpex miss, with a reason
  denpex_only   Denpex resolves, jedi finds nothing (listed for checking by hand)
  different     both resolve, to disjoint definitions (each listed)
  out_of_tree   jedi lands outside the tree (torch, builtins, other packages) and Denpex enters nothing
  neither       no definition from either (dynamic callees, unresolvable attributes)
The oracle's figure is same / (same + jedi_only + different): of the calls jedi resolves inside the tree.
Jedi is slow, so calls are checked in a seeded random order until --max-calls or --budget-s per project;
the JSON says how many were seen and how many were checked.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import random
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import tomllib

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "manifest.toml"
RESULTS = HERE / "results_oracle.json"
SCHEMA = "denpex.oracle/1"
FIRST = ("nano-vllm", "gpt-fast", "Megatron-LM", "TransformerEngine")

# ---- pure parts (tests/source/test_oracle_classify.py) --------------------------------------------------------

Key = tuple[str, int, int]  # absolute file path, 1-based line, 0-based column of a definition's name


@dataclass(frozen=True)
class Def:
    """A definition one side names: a function (with its class, if a method) or a class (jedi's instance or
    constructor answers)."""

    path: str
    line: int  # 1-based, of the name
    col: int  # 0-based, of the name
    kind: str  # "function" | "class"
    name: str
    cls: Key | None = None  # a method's class

    @property
    def key(self) -> Key:
        return (self.path, self.line, self.col)


@dataclass
class Call:
    path: str  # absolute
    line: int  # 1-based, of the callee's name
    col: int  # 0-based
    text: str  # the callee expression
    shape: str  # name | self_method | self_attr | param | param_attr | local | local_attr | ... (see features)
    detail: str = ""  # what the shape was read from (an import's target, an assignment's value kind)
    qualname: str | None = None  # Denpex's qualified name of the callee (imports followed)
    lib: bool = False  # Denpex's qualname roots in a module that is not in the workspace (torch knowledge)
    denpex: list[Def] = field(default_factory=list)
    at_depth_limit: bool = False  # reached at the walker's max-depth (not followed by a scan)
    encl_cls: Key | None = None  # the class whose body holds the call


def in_tree(path: str | None, root: str) -> bool:
    if not path:
        return False
    r = root.rstrip("/") + "/"
    return path.startswith(r) and "/site-packages/" not in path[len(r):]


def outside_kind(path: str | None, full_name: str | None) -> str:
    """Which kind of code outside the tree jedi landed in: torch, builtins (typeshed, compiled), third-party."""
    fn = full_name or ""
    p = path or ""
    if fn == "torch" or fn.startswith("torch.") or "/torch/" in p:
        return "torch"
    if not p or "/typeshed/" in p or fn.startswith("builtins."):
        return "builtins"
    return "third_party"


def matches(jedi_defs: list[Def], denpex: list[Def], mro_method: dict[tuple[Key, str], Key | None]) -> bool:
    """Do the two sides name the same definition? A function matches by position; a class from jedi (an
    instance called, or a constructor) matches a Denpex method of that class, or the method of that name that
    the class inherits (`mro_method[(class key, method name)]`: where lookup through its bases finds it), or a
    method of a subclass of it (`mro_method[(subclass key, "")] == class key`: jedi names the declared class of
    `self` in a mixin's method, whose object is an instance of a subclass that defines the method)."""
    dk = {d.key for d in denpex}
    for j in jedi_defs:
        if j.kind == "function" and j.key in dk:
            return True
        if j.kind == "class":
            for d in denpex:
                if d.cls == j.key:
                    return True
                if mro_method.get((j.key, d.name)) == d.key:
                    return True
                if d.cls is not None and (d.cls, "") in mro_method and j.key in _bases(mro_method, d.cls):
                    return True
    return False


def _bases(mro_method: dict[tuple[Key, str], Key | None], cls: Key) -> set[Key]:
    """The classes after `cls` in its linearisation, as `_mro_methods` chained them: (class, "") -> next."""
    out: set[Key] = set()
    k: Key | None = mro_method.get((cls, ""))
    while k is not None and k not in out:
        out.add(k)
        k = mro_method.get((k, ""))
    return out


def jedi_artifact(call: Call, jedi_defs: list[Def]) -> list[Def]:
    """Jedi's answers to drop: for a callee that is a subscript or a call's result (`self.emb[i](x)`,
    `self.bda(a, b)(x)`), jedi names the class whose body holds the call, the type of `self` it lost the element
    or return type of; checked by hand on moshi lm.py:391/475, Megatron transformer_layer.py:754, NeMo
    mcore_mixins.py:548."""
    if call.shape != "chained" or call.encl_cls is None:
        return []
    return [j for j in jedi_defs if j.kind == "class" and j.key == call.encl_cls]


def bucket(jedi_defs: list[Def], jedi_outside: str | None, denpex: list[Def], lib: bool,
           mro_method: dict[tuple[Key, str], Key | None]) -> str:
    """The call's bucket (module docstring). `jedi_defs`: jedi's definitions inside the tree; `jedi_outside`:
    the kind of code outside it jedi landed in, if that is all it found."""
    if jedi_defs and denpex:
        return "same" if matches(jedi_defs, denpex, mro_method) else "different"
    if jedi_defs:
        return "jedi_only"
    if denpex:
        return "denpex_only"
    if jedi_outside is not None or lib:
        return "out_of_tree"
    return "neither"


REASONS = {
    "relative_import": "a name bound by a relative import (`from ..utils import f`, or its module or class)",
    "self_method_relative_base": "self.m() of a base class imported relatively (`from .base import Base`)",
    "constructor": "a class called: its __init__ is not entered",
    "class_attr": "a method called on a class name (`Manager.is_enabled()`: class/static method)",
    "self_attr": "method or call of a constructor-stored attribute (self.a.m(), self.a())",
    "param_attr": "method of a parameter (p.m())",
    "param": "a parameter called (a callable passed in)",
    "local_attr": "method of a local whose value comes from a call or expression",
    "local": "a local bound to a callable (alias, factory result)",
    "import": "an imported name (absolute import, re-export through a package)",
    "star_import": "a name from a star import",
    "module_attr": "an attribute of an imported module (mod.f())",
    "self_method": "a method of self not found (base class in another module, mixin, dynamic base)",
    "super": "super().m()",
    "cls_method": "cls.m() in a classmethod",
    "kernel_launch": "a Triton kernel launch `kernel[grid](...)` (GPU code: nothing to walk)",
    "lambda": "the target is a lambda",
    "chained": "method of a call's result or a subscript (f().m(), xs[i].m())",
    "global": "a module-level name that is not a def (assigned)",
    "other": "other",
}


def reason(shape: str, detail: str, jedi_defs: list[Def]) -> str:
    """Why Denpex missed a call jedi resolves, from the callee's shape (syntax and Denpex's own name lookup)."""
    if jedi_defs and all(j.name == "<lambda>" for j in jedi_defs):
        return "lambda"
    if shape == "chained" and detail == "callee subscript" and all(j.kind == "function" for j in jedi_defs):
        return "kernel_launch"
    if any(j.kind == "class" for j in jedi_defs) and shape in ("name", "import", "module_attr", "star_import",
                                                             "relative_import", "class_attr"):
        return "constructor"
    return shape if shape in REASONS else "other"


_RELATIVE: dict[str, tuple[str, frozenset[str]]] = {}  # path -> (the text read, its relative names)


def relative_names(text: str) -> frozenset[str]:
    """Names a file binds with relative imports (`from .m import a, b as c`, `from . import m`), from its text."""
    import re

    out: set[str] = set()
    for m in re.finditer(r"^[ \t]*from[ \t]+\.[\w.]*[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)", text, re.M):
        body = re.sub(r"#[^\n]*", "", m.group(1)).strip("() \t\n")
        for part in body.split(","):
            words = part.split()
            if words:
                out.add(words[-1])  # `a as c`: c is bound
    return frozenset(out)


# ---- Denpex side ------------------------------------------------------------------------------------------


def _denpex_calls(root: Path, walk_compile: bool = False) -> tuple[list[Call], float, int]:
    """Every call Denpex's walker visits under capture in the tree at `root`, with its targets."""
    from denpex.commands.scan import collect_files
    from denpex.config.project import load_project, with_cli
    from denpex.rulebook import load_rulebook
    from denpex.source.capture.entrypoints import entry_regions, may_have_entries
    from denpex.source.capture.regions import contextmanager_wrappers, find_regions
    from denpex.source.engine import analyse
    from denpex.source.engine.walker import DEFAULT_GUARDS, CaptureWalker
    from denpex.source.resolve.callgraph import Resolver, Target
    from denpex.source.resolve.workspace import Workspace
    from denpex.source.rules import rule_set

    # the scan's own file prefilter and lazy-parse settling (may_open lives in analyse.py or is re-exported there)
    may_open: Callable[[str, Any], bool] = analyse.__dict__["may_open"]
    t0 = time.perf_counter()
    old = Path.cwd()
    os.chdir(root)
    try:
        book = load_rulebook()
        project = load_project(book, start=root)
        cfg = with_cli(project.scan, book, (), ())
        ws = Workspace(roots=[str(Path.cwd())])  # as `denpex scan .` at the root: paths relative to it
        _WS_LOOKUP[:] = [ws.lookup_module]
        for f in collect_files(["."]):
            if not str(f).endswith(".ipynb"):
                try:
                    ws.add_text(os.path.relpath(f), f.read_text(encoding="utf-8", errors="surrogateescape"))
                except OSError:
                    continue
        rules = rule_set(())  # traversal only: the walker follows calls the same with no detector enabled
        guards = DEFAULT_GUARDS | frozenset(g.rsplit(".", 1)[-1] for g in cfg.guards)
        calls: dict[tuple[str, int, int], Call] = {}
        regions_n = [0]

        class Recording(Resolver):
            # the walker's call whose resolution is under way; the targets are taken as resolve_call returns
            # them (following them walks the callees, whose own calls come through here in turn)
            pending: Any = None

            def resolve_call(self, ix: Any, call: Any, env: Any) -> list[Target]:
                out = super().resolve_call(ix, call, env)
                site = self.pending
                if site is not None and site.node.id == call.id and site.frame.ix is ix:
                    self.pending = None
                    record(site, out)
                return out

        def record(site: Any, targets: list[Target]) -> None:
            ix, node = site.frame.ix, site.node
            k = (ix.path, node.start_byte, node.end_byte)  # `f().g()` and `f()` start at the same byte
            c = calls.get(k)
            if c is None:
                c = calls[k] = _call_of(ix, site, root)
            for t in targets:
                d = _def_of_target(t, root)
                if d is not None and d not in c.denpex:
                    c.denpex.append(d)

        class Walker(CaptureWalker):
            def _follow(self, site: Any) -> None:
                res = self.resolver
                assert isinstance(res, Recording)
                record(site, [])  # seen, even where the call depth stops the walk
                if site.frame.depth >= self.max_depth:
                    # the walker stops here (max-depth) and resolves nothing: ask the resolver as the walker
                    # would one level deeper, so the oracle judges resolution, not the depth setting
                    calls[(site.frame.ix.path, site.node.start_byte, site.node.end_byte)].at_depth_limit = True
                    record(site, res.resolve_call(site.frame.ix, site.node, site.frame.env))
                    return
                res.pending = site
                try:
                    super()._follow(site)
                finally:
                    res.pending = None

        def run() -> None:
            calls.clear()
            regions_n[0] = 0
            resolver = Recording(ws.lookup_module, ws.imported_elsewhere, ws.importers)
            wrappers = {w.rsplit(".", 1)[-1] for w in cfg.capture_wrappers} | set(cfg.capture_wrappers)
            for p in ws.paths():
                text = ws.text(p) or ""
                if ("graph(" in text and ("contextmanager" in text or "return" in text)) or (
                        "capture_begin(" in text and "contextmanager" in text):
                    ix = ws.index(p)
                    if ix is not None:
                        wrappers |= contextmanager_wrappers(ix)
            for p in ws.paths():
                text = ws.text(p) or ""
                if not may_open(text, wrappers) and not may_have_entries(text, cfg.capture_entry_points):
                    continue
                ix = ws.index(p)
                if ix is None:
                    continue
                found = find_regions(ix, wrappers, graphed=cfg.graphed_callables) if may_open(
                    text, wrappers | cfg.graphed_callables) else []
                for region in found + entry_regions(ix, resolver.values, cfg.capture_entry_points):
                    if region.kind == "compile":
                        if not walk_compile:
                            continue  # the walker enters nothing of a torch.compile region (walker.run)
                        # --walk-compile: the compiled callables walked as make_graphed_callables' are
                        region = replace(region, kind="entry" if region.functions else "graphed_callables")
                    regions_n[0] += 1
                    Walker(region, resolver, lambda _h: None, rules, guards=guards, max_depth=cfg.max_depth).run()

        analyse._settled(run)
        return list(calls.values()), time.perf_counter() - t0, regions_n[0]
    finally:
        os.chdir(old)


def _name_key(node: Any, ix: Any, root: Path) -> Key | None:
    n = node if node.type == "lambda" else node.child_by_field_name("name")  # jedi places a lambda at `lambda`
    if n is None:
        return None
    line, col = ix.src.start(n)
    return (str((root / ix.path).resolve()), line + 1, col)


def _def_of_target(t: Any, root: Path) -> Def | None:
    key = _name_key(t.func.node, t.ix, root)
    if key is None:
        return None
    cls: Key | None = None
    if t.func.class_name is not None:
        ci = t.ix.classes.get(t.func.class_name)
        if ci is not None:
            cls = _name_key(ci.node, t.ix, root)
    return Def(key[0], key[1], key[2], "function", t.func.name, cls)


def _call_of(ix: Any, site: Any, root: Path) -> Call:
    """The call as the oracle keeps it: where jedi is asked (the callee's last name) and its shape."""
    f = site.func
    path = str((root / ix.path).resolve())
    text = " ".join(ix.text(f).split())[:120]
    ec = ix.enclosing_class(site.node)
    encl = _name_key(ec.node, ix, root) if ec is not None else None
    if f.type == "identifier":
        at = f
    elif f.type == "attribute":
        at = f.child_by_field_name("attribute")
    else:
        line, col = ix.src.start(f)
        return Call(path, line + 1, col, text, "chained", f"callee {f.type}", site.qualname, encl_cls=encl)
    line, col = ix.src.start(at)
    shape, detail = _shape(ix, f)
    q = site.qualname
    # library code as Denpex knows it: a dotted name through the file's imports whose module is no workspace file
    lib = bool(q) and "." in (q or "") and ix.imports.lookup(ix.text(f).split(".", 1)[0]) is not None and (
        _ws_missing(q or ""))
    return Call(path, line + 1, col, text, shape, detail, q, lib, encl_cls=encl)


_WS_LOOKUP: list[Any] = []


def _ws_missing(q: str) -> bool:
    """The qualified name's module is not a workspace file (library code as Denpex sees it)."""
    look = _WS_LOOKUP[0] if _WS_LOOKUP else None
    if look is None:
        return False
    mod = q
    while "." in mod:
        mod = mod.rsplit(".", 1)[0]
        if look(mod) is not None:
            return False
    return True


def _relative(ix: Any) -> frozenset[str]:
    text = ix.src.text
    got = _RELATIVE.get(ix.path)
    if got is None or got[0] is not text:
        got = _RELATIVE[ix.path] = (text, relative_names(text))
    return got[1]


def _shape(ix: Any, f: Any) -> tuple[str, str]:
    """The callee's shape for the miss reasons: what kind of name or receiver it is, by Denpex's own lookup."""
    if f.type == "identifier":
        name = ix.text(f)
        assign, _scope, is_param = ix.lookup(name, f)
        if is_param:
            return "param", ""
        if assign is not None:
            v = assign.value
            scope_node = _scope.node if _scope is not None else None
            glob = scope_node is not None and scope_node.type == "module"
            return ("global" if glob else "local"), (v.type if v is not None else "bound")
        if name in ix.module_funcs or name in ix.classes:
            return "name", "def in file"
        q = ix.imports.lookup(name)
        if q is not None:
            return ("relative_import" if name in _relative(ix) else "import"), q
        if b"import *" in ix.src.data:
            return "star_import", ""
        return "name", "unbound"
    obj = f.child_by_field_name("object")
    while obj is not None and obj.type == "parenthesized_expression" and obj.named_child_count:
        obj = obj.named_children[0]
    if obj is None:
        return "other", ""
    if obj.type == "identifier":
        o = ix.text(obj)
        if o == "self":
            cls = ix.enclosing_class(f)
            rel = _relative(ix)
            if cls is not None and any(b.rsplit(".", 1)[-1] in rel or b.split(".", 1)[0] in rel for b in cls.bases):
                return "self_method_relative_base", ",".join(cls.bases)
            return "self_method", ",".join(cls.bases) if cls is not None else ""
        if o == "cls":
            return "cls_method", ""
        assign, _scope, is_param = ix.lookup(o, obj)
        if is_param:
            return "param_attr", ""
        if assign is not None:
            v = assign.value
            return "local_attr", v.type if v is not None else "bound"
        if ix.imports.lookup(o) is not None or o in ix.classes:
            if o in _relative(ix):
                return "relative_import", ix.imports.lookup(o) or ""
            return ("class_attr" if o[:1].isupper() else "module_attr"), ix.imports.lookup(o) or "class in file"
        return "other", "unbound receiver"
    if obj.type == "attribute":
        root_obj = obj
        while root_obj.type == "attribute":
            nxt = root_obj.child_by_field_name("object")
            if nxt is None:
                break
            root_obj = nxt
        if root_obj.type == "identifier" and ix.text(root_obj) == "self":
            return "self_attr", ""
        if root_obj.type == "identifier":
            o = ix.text(root_obj)
            assign, _scope, is_param = ix.lookup(o, root_obj)
            if is_param:
                return "param_attr", "deep"
            if ix.imports.lookup(o) is not None:
                return ("relative_import" if o in _relative(ix) else "module_attr"), ix.imports.lookup(o) or ""
            if assign is not None:
                return "local_attr", "deep"
        return "chained", obj.type
    if obj.type == "call":
        g = obj.child_by_field_name("function")
        if g is not None and ix.text(g) == "super":
            return "super", ""
    return "chained", obj.type


# ---- jedi side ------------------------------------------------------------------------------------------------


def _jedi_defs(script: Any, call: Call, root: str) -> tuple[list[Def], str | None, bool]:
    """Jedi's definitions for the call inside the tree, the kind of outside code if that is all, and whether a
    definition found is decorated."""
    try:
        found = script.goto(call.line, call.col, follow_imports=True)
        if not found or all(d.type not in ("function", "class", "instance") for d in found):
            found = script.infer(call.line, call.col)
    except Exception:  # jedi has its own failures on real code: no answer
        return [], None, False
    inside: list[Def] = []
    outside: str | None = None
    decorated = False
    for d in found:
        kind = {"function": "function", "class": "class", "instance": "class"}.get(d.type)
        if kind is None or d.line is None:
            continue
        p = str(d.module_path) if d.module_path is not None else None
        if not in_tree(p, root):
            outside = outside or outside_kind(p, d.full_name)
            continue
        assert p is not None
        if d.type == "function":
            decorated = decorated or _decorated(p, d.line)
        inside.append(Def(p, d.line, d.column, kind, d.name))
    return inside, (None if inside else outside), decorated


_LINES: dict[str, list[str]] = {}


def _lines(path: str) -> list[str]:
    got = _LINES.get(path)
    if got is None:
        try:
            got = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            got = []
        _LINES[path] = got
    return got


def _decorated(path: str, line: int) -> bool:
    """A decorator other than staticmethod/classmethod/property just above the `def` at `line`."""
    ls = _lines(path)
    i = line - 2
    while 0 <= i < len(ls) and ls[i].lstrip().startswith("@"):
        dec = ls[i].strip()
        if not dec.startswith(("@staticmethod", "@classmethod", "@property", "@abstractmethod", "@abc.",
                               "@override", "@typing.")):
            return True
        i -= 1
    return False


def _mro_methods(root: Path, jedi_classes: set[Key], names: set[str],
                 denpex_classes: frozenset[Key] | set[Key] = frozenset()) -> dict[tuple[Key, str], Key | None]:
    """For each class jedi named and each method name Denpex entered on it: where Denpex's own lookup through
    the class's bases (Resolver._method) finds that method, so an inherited forward matches its subclass. For
    each class of a method Denpex named, its linearisation as a chain: (class, "") -> the next class."""
    from denpex.source.resolve.callgraph import Resolver
    from denpex.source.resolve.workspace import Workspace

    out: dict[tuple[Key, str], Key | None] = {}
    if not jedi_classes:
        return out
    wanted = jedi_classes | set(denpex_classes)
    ws = Workspace(roots=[str(root)])
    files = {k[0] for k in jedi_classes | set(denpex_classes)}
    r = root.resolve()
    for p in files:
        rel = os.path.relpath(p, r)
        ws.add_text(rel, Path(p).read_text(encoding="utf-8", errors="surrogateescape"))
    res = Resolver(ws.lookup_module)
    # bases in other files: add the files the classes' modules import, lazily, as the lookup asks
    seen_mods: set[str] = set()

    def lookup(mod: str) -> Any:
        got = ws.lookup_module(mod)
        if got is None and mod not in seen_mods:
            seen_mods.add(mod)
            for cand in (r / (mod.replace(".", "/") + ".py"), r / mod.replace(".", "/") / "__init__.py"):
                if cand.is_file():
                    ws.add_text(os.path.relpath(cand, r), cand.read_text(encoding="utf-8", errors="surrogateescape"))
                    return ws.lookup_module(mod)
        return got

    res.lookup_module = lookup
    old = Path.cwd()
    os.chdir(r)
    try:
        for key in wanted:
            ix = ws.index(os.path.relpath(key[0], r))
            if ix is None:
                continue
            ix.src.complete()
            full = ws.index(os.path.relpath(key[0], r))
            if full is None:
                continue
            for ci in list(full.classes.values()):
                if _name_key(ci.node, full, r) != key:
                    continue
                if key in denpex_classes:
                    chain = [_name_key(c.node, i, r) for i, c in res.values.mro(full, ci)]
                    for a, b in itertools.pairwise(chain):
                        if a is not None:
                            out.setdefault((a, ""), b)
                if key not in jedi_classes:
                    continue
                for name in names:
                    found = res._method(full, ci, name)
                    out[(key, name)] = _name_key(found[1].node, found[0], r) if found is not None else None
    finally:
        os.chdir(old)
    return out


# ---- driving ----------------------------------------------------------------------------------------------


def _rel(root: str, path: str) -> str:
    return os.path.relpath(path, root)


def run_project(name: str, root: Path, max_calls: int, budget_s: float, seed: int,
                walk_compile: bool = False) -> dict[str, Any]:
    import jedi  # bench only

    from denpex.source.resolve.workspace import Workspace  # noqa: F401 - imported here so its cost is not jedi's

    _WS_LOOKUP.clear()
    calls, dx_s, regions = _denpex_calls(root, walk_compile)
    rootr = str(root.resolve())
    order = list(range(len(calls)))
    random.Random(seed).shuffle(order)
    project = jedi.Project(rootr, smart_sys_path=True)
    env = jedi.InterpreterEnvironment()
    scripts: dict[str, Any] = {}
    t0 = time.perf_counter()
    checked: list[tuple[Call, list[Def], str | None, bool]] = []
    stopped = "all calls checked"
    for n, i in enumerate(order):
        if n >= max_calls:
            stopped = f"--max-calls {max_calls}"
            break
        if time.perf_counter() - t0 > budget_s:
            stopped = f"--budget-s {budget_s:.0f}"
            break
        c = calls[i]
        s = scripts.get(c.path)
        if s is None:
            if len(scripts) > 200:
                scripts.clear()
            s = scripts[c.path] = jedi.Script(path=c.path, project=project, environment=env)
        jd, outside, dec = _jedi_defs(s, c, rootr)
        checked.append((c, jd, outside, dec))
    jedi_s = time.perf_counter() - t0
    jclasses = {j.key for _c, jd, _o, _d in checked for j in jd if j.kind == "class"}
    mnames = {d.name for c, _jd, _o, _d in checked for d in c.denpex} | {"forward", "__call__", "__init__"}
    dclasses = {d.cls for c, jd, _o, _d in checked if any(j.kind == "class" for j in jd) for d in c.denpex
                if d.cls is not None}
    mro = _mro_methods(root, jclasses, mnames, dclasses)
    counts: Counter[str] = Counter()
    outside_counts: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    examples: dict[str, list[str]] = {}
    denpex_only: list[dict[str, Any]] = []
    different: list[dict[str, Any]] = []
    misses: list[dict[str, Any]] = []
    lib_by_denpex = 0
    depth_limit: Counter[str] = Counter()
    artifacts = 0
    for c, jd0, outside, dec in checked:
        drop = jedi_artifact(c, jd0)
        artifacts += bool(drop)
        jd = [j for j in jd0 if j not in drop]
        b = bucket(jd, outside, c.denpex, c.lib, mro)
        counts[b] += 1
        if c.at_depth_limit:
            depth_limit[b] += 1
        where = f"{_rel(rootr, c.path)}:{c.line}"
        if b == "out_of_tree":
            outside_counts[outside or "denpex library"] += 1
            lib_by_denpex += c.lib
        elif b == "jedi_only":
            r = reason(c.shape, c.detail, jd)
            reasons[r] += 1
            misses.append({"call": where, "callee": c.text, "shape": c.shape, "detail": c.detail, "reason": r,
                           "jedi": [f"{_rel(rootr, j.path)}:{j.line} {j.name} ({j.kind})" for j in jd],
                           "decorated": dec, "at_depth_limit": c.at_depth_limit})
            ex = examples.setdefault(r, [])
            if len(ex) < 6:
                ex.append(f"{where} `{c.text}(...)` -> {_rel(rootr, jd[0].path)}:{jd[0].line} {jd[0].name}"
                          + (f" [{c.detail}]" if c.detail else "") + (" (decorated)" if dec else ""))
        elif b in ("denpex_only", "different"):
            item = {"call": where, "callee": c.text, "shape": c.shape,
                    "denpex": [f"{_rel(rootr, d.path)}:{d.line} {d.name}" for d in c.denpex],
                    "jedi": [f"{_rel(rootr, j.path)}:{j.line} {j.name} ({j.kind})" for j in jd],
                    "jedi_outside": outside}
            (denpex_only if b == "denpex_only" else different).append(item)
    resolved_in_tree = counts["same"] + counts["jedi_only"] + counts["different"]
    return {
        "name": name, "root": rootr, "capture_regions": regions, "calls_seen": len(calls), "calls_checked": len(checked),
        "stopped": stopped, "denpex_s": round(dx_s, 1), "jedi_s": round(jedi_s, 1),
        "buckets": dict(counts), "jedi_resolved_in_tree": resolved_in_tree,
        "same_share": round(counts["same"] / resolved_in_tree, 3) if resolved_in_tree else None,
        "jedi_enclosing_class_dropped": artifacts, "at_depth_limit": dict(depth_limit), "out_of_tree": dict(outside_counts), "out_of_tree_known_to_denpex_as_library": lib_by_denpex,
        "miss_reasons": dict(reasons.most_common()), "miss_examples": examples,
        "denpex_only": denpex_only, "different": different, "jedi_only": misses,
    }


def table(results: dict[str, Any]) -> str:
    """The README's table: one row per project, then the miss reasons summed over the projects."""
    rows = ["| project | regions | calls seen | checked | same | jedi only | Denpex only | different | out of tree "
            "(torch / builtins / other / Denpex library) | neither | same / jedi in tree |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|"]
    total: Counter[str] = Counter()
    for name, e in results.items():
        b, o = e["buckets"], e["out_of_tree"]
        share = f"{e['same_share']:.1%}" if e["same_share"] is not None else "-"
        capped = "" if e["stopped"] == "all calls checked" else f" ({e['stopped']})"
        rows.append(f"| {name} | {e['capture_regions']} | {e['calls_seen']} | {e['calls_checked']}{capped} | "
                    f"{b.get('same', 0)} | {b.get('jedi_only', 0)} | {b.get('denpex_only', 0)} | "
                    f"{b.get('different', 0)} | {b.get('out_of_tree', 0)} ({o.get('torch', 0)} / "
                    f"{o.get('builtins', 0)} / {o.get('third_party', 0)} / {o.get('denpex library', 0)}) | "
                    f"{b.get('neither', 0)} | {share} |")
        total.update(e["miss_reasons"])
    rows += ["", "| miss reason (jedi only) | calls | what |", "|---|---:|---|"]
    rows += [f"| {r} | {n} | {REASONS.get(r, r)} |" for r, n in total.most_common()]
    return "\n".join(rows) + "\n"


def _denpex_source() -> str:
    """Which Denpex ran: its package path (a snapshot of a commit may be put first on PYTHONPATH)."""
    import denpex

    here = Path(denpex.__file__).resolve().parent
    for p in (here.parent.parent / "COMMIT",):
        if p.is_file():
            return f"{here} ({p.read_text().strip()[:12]})"
    return str(here)


def load_manifest() -> list[tuple[str, str]]:
    data = tomllib.loads(MANIFEST.read_text(encoding="utf-8"))
    return [(p["name"], p.get("unavailable", "")) for p in data["project"]]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--only", nargs="*", default=None, help="projects by name (default: the manifest's, the first"
                    " four first)")
    ap.add_argument("--cache", type=Path, default=Path(os.environ.get("DENPEX_ECO_CACHE", "/tmp/denpex-eco")))
    ap.add_argument("--max-calls", type=int, default=3000, help="calls checked with jedi per project (sampled)")
    ap.add_argument("--budget-s", type=float, default=300.0, help="seconds of jedi per project")
    ap.add_argument("--seed", type=int, default=19)
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--walk-compile", action="store_true", help="also walk torch.compile(mode=reduce-overhead)"
                    " regions' callables, which a scan does not enter (stored under NAME+compile)")
    ap.add_argument("--table", action="store_true", help="print the README table from --out and stop")
    args = ap.parse_args(argv)
    if args.table:
        print(table(json.loads(args.out.read_text(encoding="utf-8"))["projects"]), end="")
        return 0
    names = [n for n, u in load_manifest() if not u]
    names = sorted(names, key=lambda n: (n not in FIRST, FIRST.index(n) if n in FIRST else 0))
    if args.only:
        names = [n for n in names if n in args.only]
    results: dict[str, Any] = {}
    if args.out.exists():
        results = json.loads(args.out.read_text(encoding="utf-8")).get("projects", {})
    for n in names:
        root = args.cache / n
        if not root.is_dir():
            print(f"{n}: no tree at {root}", file=sys.stderr)
            continue
        e = run_project(n, root, args.max_calls, args.budget_s, args.seed, args.walk_compile)
        e["settings"] = {"max_calls": args.max_calls, "budget_s": args.budget_s, "seed": args.seed,
                         "walk_compile": args.walk_compile, "denpex": _denpex_source(),
                         "oracle_sha1": hashlib.sha1(Path(__file__).read_bytes()).hexdigest()[:12]}
        if args.walk_compile:
            n = e["name"] = f"{n}+compile"
        results[n] = e
        b = e["buckets"]
        print(f"{n:18} seen {e['calls_seen']:6} checked {e['calls_checked']:5} same {b.get('same', 0):5} "
              f"jedi-only {b.get('jedi_only', 0):4} denpex-only {b.get('denpex_only', 0):4} "
              f"different {b.get('different', 0):3} out-of-tree {b.get('out_of_tree', 0):5} "
              f"neither {b.get('neither', 0):4} same/jedi-in-tree {e['same_share']}  ({e['stopped']})", flush=True)
        args.out.write_text(json.dumps({"schema": SCHEMA, "projects": results}, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["Call", "Def", "asdict", "bucket", "in_tree", "jedi_artifact", "matches", "outside_kind", "reason",
           "relative_names"]
