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
from functools import cache

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


def _names_like(ix: FileIndex, pattern: str, table: dict[str, object]) -> list[str]:
    """Names in `table` the pattern matches; in a lazily parsed file, the definitions it names are asked for first
    (see chunks.py), so a glob sees the classes and functions the tree does not hold yet."""
    if not is_glob(pattern):
        return [pattern] if table.get(pattern) is not None else []
    lazy = ix.src.lazy
    if lazy is not None:
        for raw in list(lazy.defs):
            name = raw.decode("utf-8", "surrogatepass")
            if fnmatchcase(name, pattern):
                ix.src.need_def(name)
    return [n for n in list(table) if fnmatchcase(n, pattern)]


def selected(ix: FileIndex, entry: str) -> list[tuple[ClassInfo | None, FuncInfo]]:
    """The functions of this file a glob entry names: methods defined in the file's own classes (an inherited
    method is its defining file's), or module-level functions."""
    g = parse(entry)
    if g is None or not module_matches(g.module, module_names(ix.path)):
        return []
    out: list[tuple[ClassInfo | None, FuncInfo]] = []
    if not g.cls:
        for n in _names_like(ix, g.name, ix.module_funcs):  # type: ignore[arg-type]
            fn = ix.module_funcs.get(n)
            if fn is not None:
                out.append((None, fn))
        return out
    for cn in _names_like(ix, g.cls, ix.classes):  # type: ignore[arg-type]
        cls = ix.classes.get(cn)
        if cls is None:
            continue
        for m in sorted(cls.methods):
            if fnmatchcase(m, g.name):
                out.append((cls, cls.methods[m]))
    return out
