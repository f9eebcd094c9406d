"""A workspace index: parsed files by path and by module name, so capture regions reach callees in other
files. Files are added, updated (incrementally, by edits) and removed; every change bumps `generation`."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import PurePath

from denpex.source.index import FileIndex
from denpex.source.model import TextEdit
from denpex.source.parse import ParsedSource, parse


def module_names(path: str, roots: Iterable[str] = ()) -> list[str]:
    """Dotted module names a file may be imported as, most specific first."""
    p = PurePath(path)
    parts = list(p.with_suffix("").parts)
    for root in roots:
        try:
            parts = list(p.with_suffix("").relative_to(root).parts)
            break
        except ValueError:
            continue
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    parts = [x for x in parts if x not in ("/", "\\") and not x.endswith(":")]
    return [".".join(parts[i:]) for i in range(len(parts)) if parts[i:]]


class Workspace:
    def __init__(self, roots: Iterable[str] = ()) -> None:
        self.roots = [str(r) for r in roots]
        self._sources: dict[str, ParsedSource] = {}
        self._indexes: dict[str, FileIndex] = {}
        self._modules: dict[str, str] = {}
        self.generation = 0

    # ---- files ---------------------------------------------------------------------------------------------
    def add_file(self, path: str, text: str) -> FileIndex:
        """Add or replace a file (a full parse)."""
        return self._store(path, parse(text))

    update_file = add_file

    def edit_file(self, path: str, edits: Iterable[TextEdit]) -> FileIndex:
        """Apply edits to a known file, reparsing incrementally (edits in document order, positions in the
        text *before* each edit, as LSP didChange sends them)."""
        src = self._sources[path]
        for e in edits:
            src = src.edit(e.start_line, e.start_col, e.end_line, e.end_col, e.new_text)
        return self._store(path, src)

    def remove_file(self, path: str) -> None:
        if self._sources.pop(path, None) is not None:
            self._indexes.pop(path, None)
            self._reindex_modules()
            self.generation += 1

    def _store(self, path: str, src: ParsedSource) -> FileIndex:
        is_new = path not in self._sources
        self._sources[path] = src
        ix = FileIndex(path, src)
        self._indexes[path] = ix
        if is_new:
            for name in module_names(path, self.roots):
                self._modules.setdefault(name, path)
        self.generation += 1
        return ix

    def _reindex_modules(self) -> None:
        self._modules.clear()
        for path in self._sources:
            for name in module_names(path, self.roots):
                self._modules.setdefault(name, path)

    # ---- queries -------------------------------------------------------------------------------------------
    def paths(self) -> list[str]:
        return list(self._sources)

    def index(self, path: str) -> FileIndex | None:
        return self._indexes.get(path)

    def source(self, path: str) -> ParsedSource | None:
        return self._sources.get(path)

    def lookup_module(self, module: str) -> FileIndex | None:
        path = self._modules.get(module)
        if path is None and "." in module:
            # `from pkg.mod import f` when only `mod.py` is known (no package root given)
            path = self._modules.get(module.rsplit(".", 1)[-1])
        return self._indexes.get(path) if path is not None else None

    def __contains__(self, path: object) -> bool:
        return path in self._sources

    def __len__(self) -> int:
        return len(self._sources)
