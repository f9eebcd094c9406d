"""The workspace class hierarchy, as Values answers it: a class's workspace bases, their C3 linearisation, and the
library classes it derives from (split from values.py; Values inherits these)."""

from __future__ import annotations

from denpex.source.resolve.index import ClassInfo, FileIndex, class_header
from denpex.source.resolve.value_types import ClassRef, Value


class Hierarchy:
    """Mixed into Values, which holds `_mro` and answers `_asked` and `symbol`."""

    _mro: dict[tuple[int, int], list[tuple[FileIndex, ClassInfo]]]

    def _asked(self, ix: FileIndex) -> None:
        raise NotImplementedError

    def symbol(self, module: str, name: str, depth: int) -> list[Value]:
        raise NotImplementedError

    def base_class(self, ix: FileIndex, base: str) -> tuple[FileIndex, ClassInfo] | None:
        self._asked(ix)
        short = base.rsplit(".", 1)[-1]
        if "." not in base:
            cls = ix.classes.get(base)
            return (ix, cls) if cls is not None else None
        mod = base.rpartition(".")[0]
        for v in self.symbol(mod, short, 1):
            if isinstance(v, ClassRef):
                return v.ix, v.cls
        if short in ix.classes and ix.imports.lookup(short) is None:
            return ix, ix.classes[short]
        return None

    def mro(self, ix: FileIndex, cls: ClassInfo) -> list[tuple[FileIndex, ClassInfo]]:
        """The C3 linearisation of a workspace class over its workspace bases (library bases end it)."""
        self._asked(ix)
        key = (id(ix), cls.node.id)
        found = self._mro.get(key)
        if found is not None:
            return found
        self._mro[key] = [(ix, cls)]  # a cyclic hierarchy stops here
        # the bases: an edit inside a method body changes no base and no method name (Document keeps nothing
        # after one that spells `def`/`class` or moves a function's end)
        ix.touched.append(class_header(cls))
        seqs: list[list[tuple[FileIndex, ClassInfo]]] = []
        direct: list[tuple[FileIndex, ClassInfo]] = []
        for b in cls.bases:
            bc = self.base_class(ix, b)
            if bc is not None and bc[1] is not cls:
                seqs.append(list(self.mro(*bc)))
                direct.append(bc)
        seqs.append(direct)
        out: list[tuple[FileIndex, ClassInfo]] = [(ix, cls)]
        while any(seqs):
            for seq in seqs:
                if not seq:
                    continue
                head = seq[0]
                if not any(head[1] is c[1] for s in seqs for c in s[1:]):
                    break
            else:
                break  # no consistent order: keep what is linear so far
            out.append(head)
            seqs = [[c for c in s if c[1] is not head[1]] for s in seqs]
        self._mro[key] = out
        return out

    def library_bases(self, ix: FileIndex, cls: ClassInfo) -> set[str]:
        """The qualified names of the library classes the workspace class derives from."""
        out: set[str] = set()
        for cix, c in self.mro(ix, cls):
            for b in c.bases:
                if self.base_class(cix, b) is None:
                    out.add(b)
        return out

    def is_module(self, ix: FileIndex, cls: ClassInfo) -> bool:
        """An nn.Module subclass (calling an instance runs `forward`)."""
        return any(b.startswith("torch.nn.") or b.endswith(("nn.Module", "Module")) for b in self.library_bases(ix, cls))

