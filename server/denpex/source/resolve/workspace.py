"""A workspace index: parsed files by path and by module name, so capture regions reach callees in other
files. Files are added, updated (incrementally, by edits) and removed; every change bumps `generation`."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable
from pathlib import PurePath

from denpex.source.model import TextEdit
from denpex.source.resolve.index import FileIndex
from denpex.source.resolve.names import module_parts, path_parts
from denpex.source.syntax.chunks import import_statements
from denpex.source.syntax.parse import ParsedSource, parse

_WORD = re.compile(r"\w+")
MAX_IMPORTERS = 30  # files searched for the call sites of one function (jedi parses at most 6)
_WORD_BYTES = re.compile(rb"[\w\x80-\xff]+")  # words of UTF-8 text (non-ASCII letters included)
_WORD_CHAR = re.compile(r"\w")


def _spells_call(text: str, word: str) -> bool:
    r"""`word(` in text, the word whole: what `(?<!\w)word\s*\(` finds. Searched as `word\s*\(` with the
    character before tested apart: a pattern opening with a lookbehind tries it at every position, ten
    times slower on a big file."""
    for m in re.finditer(rf"{re.escape(word)}\s*\(", text):
        at = m.start()
        if at == 0 or _WORD_CHAR.match(text, at - 1) is None:
            return True
    return False


def _spells_word(text: str, word: str) -> bool:
    r"""`word` in text as a whole word: what `(?<!\w)word(?!\w)` finds, by `str.find` with the characters on
    either side tested apart (the lookbehind pattern is tried at every position: 0.34 ms a search on
    Megatron-LM's files, a third of its has_word time)."""
    at = text.find(word)
    n = len(word)
    while at >= 0:
        if (at == 0 or _WORD_CHAR.match(text, at - 1) is None) and _WORD_CHAR.match(text, at + n) is None:
            return True
        at = text.find(word, at + 1)
    return False


def module_names(path: str, roots: Iterable[str] = ()) -> list[str]:
    """Dotted module names a file may be imported as, most specific first (none for a path without a file name:
    "", ".", "/", as an editor's document with an empty or bare `file://` URI has)."""
    return list(_module_names(path, tuple(roots)))


@functools.lru_cache(maxsize=8192)
def _module_names(path: str, roots: tuple[str, ...]) -> tuple[str, ...]:
    # remembered: every call-site search asks it of the function's file (12k times on Megatron-LM)
    parts = _root_parts(path, roots)
    return tuple(".".join(parts[i:]) for i in range(len(parts)) if parts[i:])


def _root_parts(path: str, roots: Iterable[str]) -> list[str]:
    """The file's module parts below the first root that holds it (all of its path's parts under none)."""
    p = PurePath(path)
    if not p.name:
        return []
    stem = p.with_suffix("")
    parts = list(stem.parts)
    for root in roots:
        try:
            parts = list(stem.relative_to(root).parts)
            break
        except ValueError:
            continue
    return module_parts(parts)


def diff_edit(old: str, new: str) -> tuple[int, int, int, int, str] | None:
    """One edit (start_line, start_col, end_line, end_col, text) turning old into new: the span between the
    common prefix and the common suffix (found by bisection on slice equality, which runs in C)."""
    if old == new:
        return None
    n = min(len(old), len(new))
    lo, hi = 0, n
    while lo < hi:  # longest common prefix
        mid = (lo + hi + 1) // 2
        if old[:mid] == new[:mid]:
            lo = mid
        else:
            hi = mid - 1
    p = lo
    lo, hi = 0, n - p
    while lo < hi:  # longest common suffix not overlapping the prefix
        mid = (lo + hi + 1) // 2
        if old[len(old) - mid :] == new[len(new) - mid :]:
            lo = mid
        else:
            hi = mid - 1
    sfx = lo
    start, old_end, new_end = p, len(old) - sfx, len(new) - sfx
    sl = old.count("\n", 0, start)
    sc = start - (old.rfind("\n", 0, start) + 1)
    el = old.count("\n", 0, old_end)
    ec = old_end - (old.rfind("\n", 0, old_end) + 1)
    return sl, sc, el, ec, new[start:new_end]


class Workspace:
    def __init__(self, roots: Iterable[str] = (), *, lazy: bool = True) -> None:
        self.roots = [str(r) for r in roots]
        # parse each file only as far as a capture can reach (syntax/chunks.py): the editor's few files; a
        # whole-tree scan parses whole files, since each lookup past a file's parsed part re-runs the analysis
        self.lazy = lazy
        self._sources: dict[str, ParsedSource] = {}
        self._pending: dict[str, str] = {}  # added as text, parsed when first needed
        self._indexes: dict[str, FileIndex] = {}
        self._known: dict[str, None] = {}  # every path, in the order first added (ties of module names)
        self._layout = 0  # bumped when a path comes or goes (the module map depends on nothing else)
        self._modules: tuple[int, dict[str, str], bool] | None = None  # layout, module -> path, root is a package
        self.generation = 0
        self._changed_at: dict[str, int] = {}
        self._removed_at = 0
        # the two most recent changes of distinct files, (path, generation): others_generation without a pass
        # over every file (it is asked on every keystroke)
        self._top: tuple[str, int] = ("", 0)
        self._second: tuple[str, int] = ("", 0)
        # the file changed at each generation since `_log_base` (changes_since: what a per-file cache must read
        # again, instead of every file's text on every keystroke)
        self._log: list[str] = []
        self._log_base = 0
        self._word_cache: dict[str, tuple[int, frozenset[str]]] = {}
        self._searched: dict[str, tuple[int, int]] = {}  # path -> (stamp, words searched for in that text)
        self._has_cache: dict[tuple[str, str], tuple[int, bool]] = {}
        self._imported_cache: dict[tuple[str, str], tuple[int, bool]] = {}
        self._imports: tuple[int, dict[str, set[str]]] | None = None
        self._closures: dict[str, tuple[int, set[str]]] = {}
        # importers' answers (the paths) of this generation: each call-site search asks again (13.8k times on
        # TransformerEngine, for about a tenth as many functions)
        self._importers: tuple[int, dict[tuple[str, str, str | None, bool], list[str]]] = (-1, {})

    # ---- files ---------------------------------------------------------------------------------------------
    def add_text(self, path: str, text: str) -> None:
        """Add or replace a file without parsing it yet (parsed when an analysis first needs it)."""
        if path in self._sources:
            self.add_file(path, text)
            return
        is_new = path not in self._pending
        self._pending[path] = text
        if is_new:
            self._new_path(path)
        self._changed(path)

    def text(self, path: str) -> str | None:
        pending = self._pending.get(path)
        if pending is not None:
            return pending
        src = self._sources.get(path)
        return src.text if src is not None else None

    def add_file(self, path: str, text: str) -> FileIndex:
        """Add or replace a file (a known file is reparsed incrementally from its old tree)."""
        self._pending.pop(path, None)
        old = self._sources.get(path)
        if old is not None:
            if old.text == text:
                ix = self.index(path)
                assert ix is not None
                return ix
            edit = diff_edit(old.text, text)
            if edit is not None:
                return self._store(path, old.edit(*edit))
        return self._store(path, parse(text, lazy=self.lazy))

    def _store(self, path: str, src: ParsedSource) -> FileIndex:
        self._put(path, src)
        ix = self.index(path)
        assert ix is not None
        return ix

    update_file = add_file

    def set_source(self, path: str, src: ParsedSource) -> None:
        """Store an already parsed file (its index is built when first needed)."""
        self._put(path, src)

    def edit_file(self, path: str, edits: Iterable[TextEdit]) -> FileIndex:
        """Apply edits to a known file, reparsing incrementally (edits in document order, positions in the
        text *before* each edit, as LSP didChange sends them)."""
        src = self.source(path)
        if src is None:
            raise KeyError(path)
        for e in edits:
            src = src.edit(e.start_line, e.start_col, e.end_line, e.end_col, e.new_text)
        return self._store(path, src)

    def remove_file(self, path: str) -> None:
        if self._sources.pop(path, None) is not None or self._pending.pop(path, None) is not None:
            self._indexes.pop(path, None)
            self._changed_at.pop(path, None)
            self._word_cache.pop(path, None)
            self._searched.pop(path, None)
            self._known.pop(path, None)
            self._layout += 1
            self._changed("")
            self._removed_at = self.generation

    def _put(self, path: str, src: ParsedSource) -> None:
        is_new = path not in self._sources and path not in self._pending
        self._pending.pop(path, None)
        self._sources[path] = src
        self._indexes.pop(path, None)
        if is_new:
            self._new_path(path)
        self._changed(path)

    _LOG_KEEP = 4096

    def _changed(self, path: str) -> None:
        """A new generation: `path` added or changed (\"\": a file removed)."""
        self.generation += 1
        if path:
            self._changed_at[path] = self.generation
            if self._top[0] != path:
                self._second = self._top
            self._top = (path, self.generation)
        self._log.append(path)
        if len(self._log) > 2 * self._LOG_KEEP:
            del self._log[:self._LOG_KEEP]
            self._log_base += self._LOG_KEEP

    def others_generation(self, path: str) -> int:
        """The last change to any other file (or a removal)."""
        other = self._top[1] if self._top[0] != path else self._second[1]
        return max(self._removed_at, other)

    def changes_since(self, generation: int) -> list[str] | None:
        """The files added or changed after `generation`, oldest first, repeats included (None: a file was
        removed since, or the log no longer reaches back that far: read every file again)."""
        if generation < self._removed_at or generation < self._log_base:
            return None
        return self._log[generation - self._log_base:]

    def _new_path(self, path: str) -> None:
        self._known[path] = None
        self._layout += 1

    def _module_map(self) -> tuple[dict[str, str], bool]:
        """Module name -> file, and whether a root is itself a package (holds an `__init__.py`).

        A file's names are its path in dots below a root (`pkg.sub.mod`), its path in dots whole (what a
        resolved relative import names, `names.path_parts`), and each shorter tail that starts in a folder
        without `__init__.py` (`diffusers.models.unet` of `src/diffusers/models/unet.py`; `core.utils` of a
        namespace package's `megatron/core/utils.py`), as jedi's search path has the folders up from a file
        that are no package. A tail that starts inside a package is no name of the file: `torch` is not
        `thunder/torch/__init__.py`, nor `distributed` `lmdeploy/pytorch/distributed.py`. A name of several
        files goes to the one whose name is longest (fewest folders dropped), then to the first added. A folder
        is a package when the workspace holds its `__init__.py` or the disk does (a workspace of part of a
        tree, as the language server's bounded index: a missing `__init__.py` must not turn a package's
        `torch/` into the top-level `torch`)."""
        if self._modules is not None and self._modules[0] == self._layout:
            return self._modules[1], self._modules[2]
        split = {p: _root_parts(p, self.roots) for p in self._known}
        packages = {tuple(parts) for p, parts in split.items() if PurePath(p).stem == "__init__"}
        on_disk: dict[str, bool] = {}

        def package(p: str, parts: list[str], i: int) -> bool:
            """Whether the folder that holds `parts[i:]` of file `p` is a package."""
            if tuple(parts[:i]) in packages:
                return True
            pp = PurePath(p)
            up = len(parts) - i - (0 if pp.stem == "__init__" else 1)  # folders up from the file's own
            if not 0 <= up < len(pp.parents):
                return False
            folder = str(pp.parents[up])
            hit = on_disk.get(folder)
            if hit is None:
                hit = on_disk[folder] = os.path.isfile(os.path.join(folder, "__init__.py"))
            return hit

        best: dict[str, tuple[int, str]] = {}
        for p, parts in split.items():
            whole = ".".join(path_parts(p))
            if whole and best.get(whole, (0, ""))[0] >= 0:
                best[whole] = (-1, p)
            for i in range(len(parts)):
                if i and package(p, parts, i):
                    continue
                name = ".".join(parts[i:])
                have = best.get(name)
                if have is None or have[0] > i:
                    best[name] = (i, p)
        out = {name: p for name, (_i, p) in best.items()}
        root_package = () in packages or any(os.path.isfile(os.path.join(r, "__init__.py")) for r in self.roots)
        self._modules = (self._layout, out, root_package)
        return out, root_package

    # ---- queries -------------------------------------------------------------------------------------------
    def paths(self) -> list[str]:
        return [*self._sources, *(p for p in self._pending if p not in self._sources)]

    def index(self, path: str) -> FileIndex | None:
        ix = self._indexes.get(path)
        if ix is None or ix.epoch != ix.src.epoch:  # a lazily parsed file whose tree has grown since
            src = self.source(path)
            if src is None:
                return None
            ix = self._indexes[path] = FileIndex(path, src)
        return ix

    def indexed(self, path: str) -> FileIndex | None:
        """The file's index when one is built for its current tree (None otherwise; nothing is built)."""
        ix = self._indexes.get(path)
        return ix if ix is not None and ix.epoch == ix.src.epoch else None

    def source(self, path: str) -> ParsedSource | None:
        src = self._sources.get(path)
        if src is None:
            pending = self._pending.pop(path, None)
            if pending is not None:
                src = self._sources[path] = parse(pending, lazy=self.lazy)
        return src

    def imported_elsewhere(self, path: str, name: str) -> bool:
        """Another file may import `name` from `path`: its text spells the module's last name and `name`
        as words (a cheap over-approximation; used to refuse fixes that need every use of a global)."""
        key = (path, name)
        hit = self._imported_cache.get(key)
        if hit is not None and hit[0] == self.generation:
            return hit[1]
        stems = {m.rsplit(".", 1)[-1] for m in module_names(path, self.roots)}
        importers = self._import_words()
        candidates = set().union(*(importers.get(stem, ()) for stem in stems)) - {path}
        # an import statement of theirs spells the module's name, and the name is a word of theirs
        found = any(self.has_word(p, name) for p in sorted(candidates))
        self._imported_cache[key] = (self.generation, found)
        return found

    def importers(self, path: str, name: str, also: str | None = None, called: bool = False) -> list[FileIndex]:
        """The other files that may import `name` from `path` and use it: an import statement of theirs spells
        the module's last name or `name` itself (a package re-export), and `name` is a word of theirs (and so is
        `also`, when given: a method called on instances of the class `name`). With `called`, the text must
        also spell a call of `name` (of `also`, when given): `name(`. Sorted, at most `MAX_IMPORTERS` (call sites
        of a function defined elsewhere; parsed only when asked for, so a file that cannot hold one is not)."""
        gen, known = self._importers
        if gen != self.generation:
            known = {}
            self._importers = (self.generation, known)
        key = (path, name, also, called)
        paths = known.get(key)
        if paths is not None:
            return [ix for p in paths if (ix := self.index(p)) is not None]
        stems = {m.rsplit(".", 1)[-1] for m in module_names(path, self.roots)} | {name}
        words = self._import_words()
        candidates = set().union(*(words.get(stem, ()) for stem in stems)) - {path}
        out: list[FileIndex] = []
        for p in sorted(candidates):
            if self.has_word(p, name) and (also is None or self.has_word(p, also)) and (
                    not called or self.has_word(p, also or name, call=True)):
                ix = self.index(p)
                if ix is not None:
                    out.append(ix)
                    if len(out) >= MAX_IMPORTERS:
                        break
        known[key] = [ix.path for ix in out]
        return out

    def importers_closure(self, path: str, depth: int = 6) -> set[str]:
        """The files whose import statements name `path`'s module, or a module of a file that does, and so on
        (`depth` steps): an over-approximation from the words of import statements, cached per generation."""
        hit = self._closures.get(path)
        if hit is not None and hit[0] == self.generation:
            return hit[1]
        words = self._import_words()
        found: set[str] = set()
        frontier = {path}
        for _ in range(depth):
            stems = {m.rsplit(".", 1)[-1] for p in frontier for m in module_names(p, self.roots)}
            stems |= {"__init__"} if any(p.endswith("__init__.py") for p in frontier) else set()
            nxt = set().union(*(words.get(s, ()) for s in stems)) - found - {path}
            if not nxt:
                break
            found |= nxt
            frontier = nxt
        self._closures[path] = (self.generation, found)
        return found

    def _import_words(self) -> dict[str, set[str]]:
        """The words of every import statement of every file -> the files (rebuilt when the workspace changes)."""
        if self._imports is None or self._imports[0] != self.generation:
            index: dict[str, set[str]] = {}
            for p in self.paths():
                data = (self.text(p) or "").encode("utf-8", "surrogatepass")
                for _kw, _line, start, end in import_statements(data):
                    for w in _WORD_BYTES.findall(data, start, end):
                        index.setdefault(w.decode("utf-8", "surrogatepass"), set()).add(p)
            self._imports = (self.generation, index)
        return self._imports[1]

    def has_word(self, path: str, word: str, call: bool = False) -> bool:
        """`word` is a whole word of the file's text (with `call`: followed by `(`, a call of it); cached until the
        file changes (the file's words are read once; the call form is searched only in a file that has the word)."""
        stamp = self._changed_at.get(path, -1)
        key = (path, word + "(" if call else word)
        hit = self._has_cache.get(key)
        if hit is not None and hit[0] == stamp:
            return hit[1]
        if not self._has(path, word, stamp):
            found = False
        elif not call:
            found = True
        else:
            found = _spells_call(self.text(path) or "", word)
        self._has_cache[key] = (stamp, found)
        return found

    _SEARCHES_BEFORE_WORDS = 32  # words asked of one text before all its words are read

    def _has(self, path: str, word: str, stamp: int) -> bool:
        """`word` is one of the file's words: the first few questions of a text (an edited file's, on every
        keystroke) by a search for that word, not by reading every word of the file."""
        cached = self._word_cache.get(path)
        if cached is not None and cached[0] == stamp:
            return word in cached[1]
        asked = self._searched.get(path)
        count = asked[1] if asked is not None and asked[0] == stamp else 0
        if count >= self._SEARCHES_BEFORE_WORDS:
            return word in self._words(path)
        self._searched[path] = (stamp, count + 1)
        if not _WORD.fullmatch(word):
            return False  # not a word at all
        return _spells_word(self.text(path) or "", word)

    def _words(self, path: str) -> frozenset[str]:
        """The identifier-like words of a file, cached until the file changes."""
        stamp = self._changed_at.get(path, -1)
        cached = self._word_cache.get(path)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        words = frozenset(_WORD.findall(self.text(path) or ""))
        self._word_cache[path] = (stamp, words)
        return words

    def lookup_module(self, module: str) -> FileIndex | None:
        """The workspace file of a module, or None: a module no file of the workspace is (torch, numpy, a
        package installed beside it) is not looked for by a tail of its name (`torch.distributed` is not a
        local `distributed.py`): an unresolved call gives nothing rather than a wrong target."""
        modules, root_is_package = self._module_map()
        path = modules.get(module)
        if path is None and root_is_package and "." in module:
            # scanned from inside a package: `from pkg.sub.mod import f` at the root `.../pkg/sub/`, where the
            # files' names start below the root; only a prefix ending in a root's own folder name is dropped
            parts = module.split(".")
            roots = {PurePath(r).name for r in self.roots}
            for k in range(1, len(parts)):
                if parts[k - 1] in roots:
                    path = modules.get(".".join(parts[k:]))
                    if path is not None:
                        break
        return self.index(path) if path is not None else None

    def __contains__(self, path: object) -> bool:
        return path in self._sources or path in self._pending

    def __len__(self) -> int:
        return len(self.paths())
