"""Library mode: the functions of a project that its *users* capture, named by `module:object` globs.

A glob is `pkg.mod:Class.method` or `pkg.mod:function`, with `*`, `?` and `[...]` as in fnmatch in each part:
`transformer_engine.pytorch.module:*.forward` is the `forward` of every class of `transformer_engine.pytorch.module`
and of the modules under it (a package's classes live in its submodules, re-exported by its `__init__`). They come
from `[tool.denpex] capture-entry-points` (a glob there is library surface) and from a preset's `functions`.

Capturing such code is the users' choice, so what is found there is at most a warning, and its message says which
glob or preset made it captured ("captured by users through ...").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import cache, lru_cache

from denpex.source.resolve.index import ClassInfo, FileIndex, FuncInfo
from denpex.source.resolve.workspace import module_names

_GLOB = re.compile(r"[*?\[]")
_LITERAL = re.compile(r"[A-Za-z_]\w*")


@dataclass(frozen=True)
class Glob:
    """One `module:object` pattern, split once."""

    module: str
    cls: str  # "" for a module-level function
    name: str

    @property
    def text(self) -> str:
        return f"{self.module}:{self.cls + '.' if self.cls else ''}{self.name}"


def is_glob(entry: str) -> bool:
    return bool(_GLOB.search(entry))


@cache
def parse(entry: str) -> Glob | None:
    """The pattern of an entry, None when it has no `:` or no object."""
    mod, _, obj = entry.strip().partition(":")
    if not mod or not obj:
        return None
    cls, _, name = obj.rpartition(".")
    return Glob(mod, cls, name)


def module_matches(pattern: str, names: Iterable[str]) -> bool:
    """A module pattern names one of `names` (the dotted names a file may be imported as) or a package above it."""
    for n in names:
        if fnmatchcase(n, pattern):
            return True
        parts = n.split(".")
        if any(fnmatchcase(".".join(parts[:i]), pattern) for i in range(1, len(parts))):
            return True
    return False


@lru_cache(maxsize=1 << 16)
def _path_matches(pattern: str, path: str) -> bool:
    """module_matches for a file's own names: asked once per entry and file in every analysis round (a whole-tree
    scan of Megatron-LM asked 22k times, each a few dozen fnmatch calls)."""
    return module_matches(pattern, module_names(path))


def words(entry: str) -> tuple[str, ...]:
    """A literal name a file must spell to hold a function the entry selects: the cheap text prefilter. The
    class's name when it is literal, else the longest literal piece of the class or function pattern (`Wrapper`
    of `*Wrapper.run`, `forward` of `*.forward`), else the module's last part."""
    g = parse(entry)
    if g is None:
        return ()
    if g.cls and not is_glob(g.cls):
        return (g.cls,)
    pieces = [w for part in (g.cls, g.name) for w in _LITERAL.findall(part) if len(w) >= 3]
    if pieces:
        return (max(pieces, key=len),)
    return (g.module.rsplit(".", 1)[-1],)


def _ask_for(ix: FileIndex, pattern: str) -> None:
    """In a lazily parsed file, ask for the definitions a pattern names (see chunks.py): the analysis is run again
    with them parsed, so a glob sees classes and functions the tree does not hold yet."""
    lazy = ix.src.lazy
    if lazy is None:
        return
    for raw in list(lazy.defs):
        name = raw.decode("utf-8", "surrogatepass")
        if fnmatchcase(name, pattern):
            ix.src.need_def(name)


def _top_level(fn: FuncInfo) -> bool:
    p = fn.node.parent
    if p is not None and p.type == "decorated_definition":
        p = p.parent
    return p is not None and p.type == "module"


def _overload(ix: FileIndex, fn: FuncInfo) -> bool:
    """A `typing.overload` stub: its body is `...`, the implementation is the def without the decorator."""
    return any(ix.text(d).lstrip("@").strip().rsplit(".", 1)[-1] == "overload" for d in fn.decorators)


def selected(ix: FileIndex, entry: str) -> list[tuple[ClassInfo | None, FuncInfo]]:
    """The functions of this file a glob entry names: methods defined in the file's own classes (an inherited
    method is its defining file's), or module-level functions; `@overload` stubs are not the function."""
    g = parse(entry)
    if g is None or not _path_matches(g.module, ix.path):
        return []
    _ask_for(ix, g.cls or g.name)
    out: list[tuple[ClassInfo | None, FuncInfo]] = []
    for fn in ix.functions:
        if not fnmatchcase(fn.name, g.name) or _overload(ix, fn):
            continue
        if not g.cls:
            if fn.class_name is None and _top_level(fn):
                out.append((None, fn))
            continue
        if fn.class_name is None or not fnmatchcase(fn.class_name, g.cls):
            continue
        cls = ix.classes.get(fn.class_name)
        if cls is not None and fn.node.parent is not None and _in_class(fn, cls):
            out.append((cls, fn))
    return out


def _in_class(fn: FuncInfo, cls: ClassInfo) -> bool:
    """The function is a method of this class itself (not of a nested or same-named class elsewhere)."""
    p = fn.node.parent
    if p is not None and p.type == "decorated_definition":
        p = p.parent
    owner = p.parent if p is not None and p.type == "block" else None
    return owner is not None and owner.id == cls.node.id
