"""Code a framework captures with no capture site in the user's files: the presets in `source/capture/presets/*.yaml`
(vLLM, SGLang, Megatron-LM, TensorRT-LLM, TransformerEngine) and the project's own
`[tool.denpex] capture-entry-points = ["pkg.mod:Class.method", "pkg.mod:function"]`.

A preset turns on for a file that imports one of its `detect` modules, or is one of them (the framework's own
tree). Its entry points select methods of the file's classes: by a framework base class (`subclass_of`, through the
class's bases in the workspace; in the framework's own tree the listed class itself and its subclasses), a class
decorator (`decorated_with`), or the module-level name a model registry reads (`module_assigns`), optionally only
in files importing some module (`in_files_importing`); or functions of the framework's own modules by
`module:object` globs (`functions`, library mode: see library.py). Each selected function becomes a capture region
of kind `entry`; its findings name the framework path that captures it, and are warnings where capture depends on
the user's flags (`conditional`) or is the users' choice (`users`: library surface, always at most a warning).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from tree_sitter import Node

from denpex import snapshot
from denpex.errors import DenpexError
from denpex.source.capture import library
from denpex.source.capture.regions import CaptureRegion
from denpex.source.resolve.index import ClassInfo, FileIndex, FuncInfo
from denpex.source.resolve.values import Values
from denpex.source.resolve.workspace import module_names
from denpex.source.syntax.parse import strip_parens

PRESETS = Path(__file__).resolve().parent / "presets"
_MATCHERS = ("subclass_of", "decorated_with", "module_assigns", "functions")
_KEYS = frozenset({"methods", *_MATCHERS, "in_files_importing", "captured_by", "unless", "conditional", "users"})


@dataclass(frozen=True)
class EntryPoint:
    framework: str
    methods: tuple[str, ...]
    subclass_of: tuple[str, ...] = ()
    decorated_with: tuple[str, ...] = ()
    module_assigns: tuple[str, ...] = ()
    in_files_importing: tuple[str, ...] = ()
    captured_by: str = ""
    unless: str = ""
    conditional: bool = True
    functions: tuple[str, ...] = ()  # `module:object` globs of the framework's own functions (library.py)
    users: bool = False  # library surface: the framework's users capture it, by their choice

    def note(self) -> str:
        """The message suffix of a finding reached from this entry point."""
        unless = f"; not when {self.unless}" if self.unless else ""
        if self.users:
            how = f": {self.captured_by}" if self.captured_by else ""
            return f" (captured by users through {self.framework}{how}{unless}; capturing is their choice)"
        return f" (captured by {self.framework}: {self.captured_by}{unless})"


def glob_entry(entry: str) -> EntryPoint:
    """The entry point of a `capture-entry-points` glob: library surface, named by the glob."""
    return EntryPoint(f"capture-entry-points `{entry}`", (), functions=(entry,), users=True)


@dataclass(frozen=True)
class Preset:
    framework: str
    detect: tuple[str, ...]
    entry_points: tuple[EntryPoint, ...]


def _strings(v: object, where: str) -> tuple[str, ...]:
    if v is None:
        return ()
    if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
        raise DenpexError(f"{where}: expected a list of names")
    return tuple(v)


def load_preset(path: Path) -> Preset:
    """One preset file; DenpexError (one line, naming the file) when it does not follow the schema."""
    data = snapshot.yaml_data(path)  # parsed when the package was built (PyYAML costs ~0.1 s a start)
    if data is None:
        import yaml

        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
            raise DenpexError(f"{path}: unreadable preset ({type(e).__name__})") from None
    if not isinstance(data, dict) or not isinstance(data.get("framework"), str):
        raise DenpexError(f"{path}: a preset needs `framework`, `detect` and `entry_points`")
    fw = data["framework"]
    eps: list[EntryPoint] = []
    for i, ep in enumerate(data.get("entry_points") or []):
        where = f"{path}: entry_points[{i}]"
        if not isinstance(ep, dict) or set(ep) - _KEYS:
            raise DenpexError(f"{where}: unknown key(s) {sorted(set(ep) - _KEYS) if isinstance(ep, dict) else ep}")
        if not any(ep.get(m) for m in _MATCHERS):
            raise DenpexError(f"{where}: needs one of {', '.join(_MATCHERS)}")
        functions = _strings(ep.get("functions"), where)
        if any(library.parse(f) is None for f in functions):
            raise DenpexError(f"{where}: functions are `module:object` globs")
        users = bool(ep.get("users", bool(functions)))
        eps.append(EntryPoint(
            f"the {fw} preset" if users else fw, _strings(ep.get("methods"), where) or ("forward",),
            _strings(ep.get("subclass_of"), where), _strings(ep.get("decorated_with"), where),
            _strings(ep.get("module_assigns"), where), _strings(ep.get("in_files_importing"), where),
            str(ep.get("captured_by") or ""), str(ep.get("unless") or ""),
            users or bool(ep.get("conditional", True)), functions, users))
    return Preset(fw, _strings(data.get("detect"), f"{path}: detect"), tuple(eps))


@cache
def presets() -> tuple[Preset, ...]:
    return tuple(load_preset(p) for p in sorted(PRESETS.glob("*.yaml")))


def _imports(ix: FileIndex, prefixes: tuple[str, ...]) -> bool:
    mods = ix.imports.all_modules()
    return any(m == p or m.startswith(p + ".") for m in mods for p in prefixes)


def _inside(ix: FileIndex, prefixes: tuple[str, ...]) -> bool:
    """The file is a module of one of the packages (the framework's own tree, whose imports may be relative)."""
    return any(m == p or m.startswith(p + ".") for m in module_names(ix.path) for p in prefixes)


def _own_names(values: Values, ix: FileIndex, cls: ClassInfo) -> list[str]:
    """The qualified names of a workspace class and its workspace ancestors (`megatron.core.optimizer.optimizer.
    MegatronOptimizer`): what a preset's `subclass_of` names when the framework's own tree is scanned."""
    out: list[str] = []
    for cix, c in values.mro(ix, cls):
        out.extend(f"{m}.{c.name}" for m in module_names(cix.path))
    return out


def _same_class(found: str, wanted: str) -> bool:
    """A base or decorator names the wanted library class: the same qualified name, or the same class name
    under the same top-level package (frameworks move classes between versions)."""
    if found == wanted:
        return True
    return found.rsplit(".", 1)[-1] == wanted.rsplit(".", 1)[-1] and found.split(".", 1)[0] == wanted.split(".", 1)[0]


def _decorators(ix: FileIndex, cls: ClassInfo) -> list[str]:
    p = cls.node.parent
    if p is None or p.type != "decorated_definition":
        return []
    out = []
    for d in p.named_children:
        if d.type != "decorator" or not d.named_child_count:
            continue
        e = strip_parens(d.named_children[0])
        if e.type == "call":
            e = e.child_by_field_name("function") or e
        q = ix.qualname(e)
        if q:
            out.append(q)
    return out


def _registered(ix: FileIndex, names: tuple[str, ...]) -> set[str]:
    """Class names assigned at module level to one of `names` (`EntryClass = Model`, `= [A, B]`)."""
    out: set[str] = set()
    for name in names:
        ix.src.need_word(name)
        for a in ix.scope(ix.src.root).assigns.get(name, []):
            v = strip_parens(a.value) if a.value is not None else None
            elems = list(v.named_children) if v is not None and v.type in ("list", "tuple") else [v]
            for e in elems:
                if e is not None and e.type == "identifier":
                    out.add(ix.text(e))
    return out


_CLASS = re.compile(rb"^[ \t]*class[ \t]+([A-Za-z_]\w*)", re.M)


def _ask_for_classes(ix: FileIndex) -> None:
    """A lazily parsed file holds only the definitions something asked for (chunks.py): ask for its classes, so
    the matchers below see every class (a subclass two steps from the framework base spells neither it nor the
    framework). The analysis runs again with them parsed."""
    if ix.src.lazy is None:
        return
    for m in _CLASS.finditer(ix.src.data):
        ix.src.need_def(m.group(1).decode("utf-8", "surrogatepass"))


def _selected(ix: FileIndex, ep: EntryPoint, values: Values, own: bool, imports: bool) -> list[FuncInfo]:
    """The functions of this file an entry point selects (`own`: the file is in the framework's own tree;
    `imports`: it imports the framework or is in its tree, which class matchers need and globs do not)."""
    out: list[FuncInfo] = []
    if ep.functions:
        out.extend(fn for f in ep.functions for _cls, fn in library.selected(ix, f))
    if not imports or not (ep.subclass_of or ep.decorated_with or ep.module_assigns):
        return out
    if ep.in_files_importing and not _imports(ix, ep.in_files_importing) and not _inside(ix, ep.in_files_importing):
        return out
    registered = _registered(ix, ep.module_assigns) if ep.module_assigns else set()
    _ask_for_classes(ix)
    for cls in list(ix.classes.values()):
        ok = cls.name in registered
        if not ok and ep.subclass_of:
            bases = values.library_bases(ix, cls)
            ok = any(_same_class(b, w) for b in bases for w in ep.subclass_of)
            if not ok and own:
                ok = any(_same_class(n, w) for n in _own_names(values, ix, cls) for w in ep.subclass_of)
        if not ok and ep.decorated_with:
            ok = any(_same_class(d, w) for d in _decorators(ix, cls) for w in ep.decorated_with)
        if not ok:
            continue
        for m in ep.methods:
            for cix, c in values.mro(ix, cls):
                fn = c.methods.get(m)
                if fn is not None:
                    if cix is ix:  # a method inherited from another file is that file's entry point
                        out.append(fn)
                    break
    return out


def _configured(ix: FileIndex, entries: frozenset[str]) -> list[tuple[FuncInfo, str]]:
    """`pkg.mod:Class.method` / `pkg.mod:function` entries that name a function of this file (globs: library.py)."""
    names = set(module_names(ix.path))
    out: list[tuple[FuncInfo, str]] = []
    for entry in sorted(entries):
        if library.is_glob(entry):
            continue
        mod, _, obj = entry.partition(":")
        if mod not in names or not obj:
            continue
        cls_name, _, meth = obj.rpartition(".")
        if cls_name:
            cls = ix.classes.get(cls_name)
            fn = cls.methods.get(meth) if cls is not None else None
        else:
            fn = ix.module_funcs.get(meth)
        if fn is not None:
            out.append((fn, entry))
    return out


@cache
def _words_of(pr: Preset) -> tuple[str, ...]:
    """The names one of a preset's entry points needs to see in a file: its classes, decorators, registries."""
    out = {n.rsplit(".", 1)[-1] for ep in pr.entry_points for n in (*ep.subclass_of, *ep.decorated_with)}
    out |= {n for ep in pr.entry_points for n in ep.module_assigns}
    return tuple(sorted(out))


@cache
def _function_words(pr: Preset) -> tuple[str, ...]:
    return tuple(sorted({w for ep in pr.entry_points for f in ep.functions for w in library.words(f)}))


@cache
def _packages(pr: Preset) -> tuple[str, ...]:
    """The top-level packages a preset's `functions` globs name (`transformer_engine`, `flashinfer`)."""
    return tuple(sorted({f.split(":", 1)[0].split(".", 1)[0] for ep in pr.entry_points for f in ep.functions}))


def _may_be_own(pr: Preset, text: str, path: str | None) -> bool:
    """The file may be one of the modules a preset's `functions` globs name: by its path when known, else by its
    text spelling the package (most of a package's own modules do: absolute imports, docstrings; a module that
    imports only relatively is found once the caller gives the path)."""
    packages = _packages(pr)
    if not packages:
        return False
    if path is not None:
        return any(m == p or m.startswith(p + ".") for m in module_names(path) for p in packages)
    return any(p in text for p in packages)


@cache
def _entry_words(entries: frozenset[str]) -> tuple[str, ...]:
    out: set[str] = set()
    for e in entries:
        out |= set(library.words(e)) if library.is_glob(e) else {e.partition(":")[2].rsplit(".", 1)[-1]}
    return tuple(sorted(w for w in out if w))


def may_have_entries(text: str, entries: frozenset[str], path: str | None = None) -> bool:
    """Cheap text prefilter: a preset's framework and one of its class, decorator or registry names are named in
    the file (a class that reaches a framework base only through another workspace file is not selected), a preset
    glob's function in a file that may be the library's own (`_may_be_own`: give `path` where the caller has it),
    or a configured entry point's function is."""
    for pr in presets():
        if any(p.split(".", 1)[0] in text for p in pr.detect) and any(w in text for w in _words_of(pr)):
            return True
        if _may_be_own(pr, text, path) and any(w in text for w in _function_words(pr)):  # library.py
            return True
    return any(w in text for w in _entry_words(entries))


def entry_regions(ix: FileIndex, values: Values, entries: frozenset[str] = frozenset()) -> list[CaptureRegion]:
    """The capture regions of kind `entry` of a file: its functions a framework preset or the configuration
    names as captured."""
    if not may_have_entries(ix.src.text, entries, ix.path):
        return []
    out: list[CaptureRegion] = []
    seen: set[int] = set()

    def add(fn: FuncInfo, ep: EntryPoint | None) -> None:
        if fn.node.id in seen:
            return
        seen.add(fn.node.id)
        name: Node = fn.node.child_by_field_name("name") or fn.node
        out.append(CaptureRegion(kind="entry", ix=ix, site=name, anchor=fn.node, functions=[fn.node], entry=ep))

    for fn, _entry in _configured(ix, entries):
        add(fn, None)
    for entry in sorted(e for e in entries if library.is_glob(e)):
        glob = glob_entry(entry)
        for _cls, fn in library.selected(ix, entry):
            add(fn, glob)
    for pr in presets():
        own = _inside(ix, pr.detect)
        imports = own or _imports(ix, pr.detect)
        for ep in pr.entry_points:
            for fn in _selected(ix, ep, values, own, imports):
                add(fn, ep)
    return out
