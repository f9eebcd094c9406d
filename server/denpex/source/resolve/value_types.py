"""The values resolve/values.py answers with: instances of workspace classes (one abstract object per construction
site), workspace functions (bound to an instance or to call arguments), classes, containers, library objects by
qualified name and `super()`; each keyed for de-duplication in a union."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from tree_sitter import Node

from denpex.source.resolve.index import ClassInfo, FileIndex, FuncInfo


@dataclass(frozen=True, eq=False)
class Inst:
    """An instance of a workspace class, made at `site` (None: `self`, or made where we cannot see)."""

    ix: FileIndex
    cls: ClassInfo
    site: Node | None
    site_ix: FileIndex | None = None

    def key(self) -> tuple[int, int, int]:
        return (id(self.ix), self.cls.node.id, self.site.id if self.site is not None else -1)


@dataclass(frozen=True, eq=False)
class Func:
    """A workspace function (a method bound to `bound` when it has one)."""

    ix: FileIndex
    func: FuncInfo
    bound: Inst | None = None
    partial: Node | None = None  # the functools.partial(...) call that made it, binding arguments ahead
    partial_ix: FileIndex | None = None

    def key(self) -> tuple[int, int, int]:
        return (id(self.ix), self.func.node.id, self.bound.key()[2] if self.bound is not None else -2)


@dataclass(frozen=True, eq=False)
class ClassRef:
    ix: FileIndex
    cls: ClassInfo

    def key(self) -> tuple[int, int, int]:
        return (id(self.ix), self.cls.node.id, -3)


@dataclass(frozen=True, eq=False)
class Seq:
    """A container of values: nn.Sequential (`runs`: calling it calls each element in order), ModuleList,
    ModuleDict, a list / tuple / dict literal or comprehension."""

    elems: tuple[Value, ...]
    runs: bool = False

    def key(self) -> tuple[int, ...]:
        return (-4, int(self.runs), *(x for e in self.elems for x in e.key()))


@dataclass(frozen=True, eq=False)
class Lib:
    """A library object made by the call `node` in `ix` (`torch.optim.AdamW(...)`): its kind is read there."""

    qualname: str
    ix: FileIndex
    node: Node

    def key(self) -> tuple[int, int, int]:
        return (id(self.ix), self.node.id, -5)


@dataclass(frozen=True, eq=False)
class Super:
    """`super()` inside class `cls`: attribute lookups start after `cls` in the instance's MRO."""

    ix: FileIndex
    cls: ClassInfo
    this: Inst

    def key(self) -> tuple[int, int, int]:
        return (id(self.ix), self.cls.node.id, -6)


Value = Inst | Func | ClassRef | Seq | Lib | Super
Lookup = Callable[[str], "FileIndex | None"]
class FilesWith(Protocol):
    """(defining file, name[, also]) -> the files that may use `name` from it (and spell `also`; with `called`,
    that may call `name`, or `also`)."""

    def __call__(self, path: str, name: str, also: str | None = None, called: bool = False) -> list[FileIndex]: ...
