"""The one place the language server touches the source analyser (`denpex.source`).

Everything else in `denpex.lsp` sees `SourceFinding` (from `denpex.source.model`) and the small
`RegionSummary` below. The boundary is typed end to end: the analyser's own `analyse_source`,
`Workspace` and `ScanConfig`, nothing looked up by name.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from denpex.lsp.paths import SKIP_DIRS
from denpex.source.config import ScanConfig
from denpex.source.engine.analyse import analyse_source
from denpex.source.model import SourceFinding, TextEdit
from denpex.source.resolve.workspace import Workspace, module_names
from denpex.source.syntax.chunks import import_statements

Log = Callable[[str], None]


@dataclass(frozen=True)
class RegionSummary:
    """A capture opener: where it is, what kind, what it reaches, what was found in it."""

    line: int  # 0-based
    start_col: int
    end_col: int
    kind: str
    callees: tuple[str, ...] = ()
    findings: tuple[SourceFinding, ...] = field(default=())


_OPENER = re.compile(
    r"(?P<graph>\b(?:cuda\.)?graph\s*\()|(?P<begin>\.capture_begin\s*\()"
    r"|(?P<mgc>\bmake_graphed_callables\s*\()|(?P<compile>\bcompile\s*\()"
)
_OPENER_KIND = {"graph": "graph", "begin": "capture_begin", "mgc": "graphed_callables", "compile": "compile"}


def find_openers(text: str, line: int) -> list[tuple[int, int, str]]:
    """Capture openers on one line of `text`: (start, end, kind) in code points (for hovers only)."""
    lines = text.splitlines()
    if not 0 <= line < len(lines):
        return []
    src = lines[line].split("#", 1)[0]
    out: list[tuple[int, int, str]] = []
    for m in _OPENER.finditer(src):
        kind = m.lastgroup or "graph"
        if kind == "compile" and not re.search(r"reduce-overhead|max-autotune|cudagraphs", lines[line]):
            continue
        if kind == "graph" and "CUDAGraph" in m.group(0):
            continue
        out.append((m.start(), m.end() - 1, _OPENER_KIND[kind]))
    return out


_WORD_BYTES = re.compile(rb"[\w\x80-\xff]+")  # as workspace.py reads the words of an import statement


def import_words(text: str) -> frozenset[str]:
    """The words of a file's import statements."""
    data = text.encode("utf-8", "surrogatepass")
    return frozenset(w.decode("utf-8", "surrogatepass") for _kw, _line, start, end in import_statements(data)
                     for w in _WORD_BYTES.findall(data, start, end))


class IndexedWorkspace(Workspace):
    """The server's workspace: the words of import statements -> files, updated file by file.

    The base class rebuilds that map from every file's text after any change, so each keystroke in a big
    workspace paid for reading all of it (Megatron-LM: about 450 ms, up to three times per analysis). Here a
    file's words are read again only when its text object changed (an edit, a watched-file change); the rest is
    kept. The map answers exactly what the base class's rebuild would."""

    def __init__(self, roots: Iterable[str] = ()) -> None:
        super().__init__(roots)
        self._file_words: dict[str, tuple[str, frozenset[str]]] = {}
        self._word_files: dict[str, set[str]] = {}
        self._words_generation = -1
        self._words_version = 0  # bumped only when the map changes (not on an edit that keeps a file's imports)
        self._stems: dict[str, frozenset[str]] = {}
        self._closure_at: dict[tuple[str, int], tuple[int, set[str]]] = {}

    def _import_words(self) -> dict[str, set[str]]:
        if self._words_generation == self.generation:
            return self._word_files
        changed = self.changes_since(self._words_generation) if self._words_generation >= 0 else None
        if changed is None:  # a file removed (or the first map): every file looked at
            for gone in [p for p in self._file_words if p not in self]:
                self._unlink(gone, self._file_words.pop(gone)[1])
                self._words_version += 1
        # else only the files changed since are (a keystroke: one), not every file's text
        for p in self.paths() if changed is None else dict.fromkeys(changed):
            text = self.text(p) or ""
            old = self._file_words.get(p)
            if old is not None and old[0] is text:
                continue
            words = import_words(text)
            if old is not None:
                if old[1] == words:
                    self._file_words[p] = (text, words)
                    continue
                self._unlink(p, old[1] - words)
            self._words_version += 1
            for w in words:
                self._word_files.setdefault(w, set()).add(p)
            self._file_words[p] = (text, words)
        self._words_generation = self.generation
        return self._word_files

    def importers_closure(self, path: str, depth: int = 6) -> set[str]:
        """As the base class's, kept while the import-word map is unchanged (it depends on nothing else: an edit
        that leaves every file's import statements alone keeps it), with each file's module stems remembered."""
        words = self._import_words()
        key = (path, depth)
        hit = self._closure_at.get(key)
        if hit is not None and hit[0] == self._words_version:
            return hit[1]
        found: set[str] = set()
        frontier = {path}
        for _ in range(depth):
            stems: set[str] = set().union(*(self._stems_of(p) for p in frontier))
            stems |= {"__init__"} if any(p.endswith("__init__.py") for p in frontier) else set()
            nxt = set().union(*(words.get(s, ()) for s in stems)) - found - {path}
            if not nxt:
                break
            found |= nxt
            frontier = nxt
        self._closure_at[key] = (self._words_version, found)
        return found

    def _stems_of(self, path: str) -> frozenset[str]:
        stems = self._stems.get(path)
        if stems is None:
            stems = self._stems[path] = frozenset(m.rsplit(".", 1)[-1] for m in module_names(path, self.roots))
        return stems

    def _unlink(self, path: str, words: Iterable[str]) -> None:
        for w in words:
            files = self._word_files.get(w)
            if files is not None:
                files.discard(path)
                if not files:
                    del self._word_files[w]


class Analyzer:
    """Source analysis for the server: the workspace index and the analyser's runs."""

    MAX_INDEX_FILES = 5_000
    MAX_INDEX_BYTES = 1_000_000

    def __init__(self, log: Log) -> None:
        self._log = log
        self._workspace: Workspace | None = None
        self._folders: list[str] = []

    # workspace index -------------------------------------------------------------------------

    def set_folders(self, folders: Iterable[str]) -> None:
        self._folders = list(folders)
        try:
            self._workspace = IndexedWorkspace(self._folders)
        except Exception as exc:
            self._log(f"workspace index failed: {exc!r}")
            self._workspace = None

    def workspace_files(self, skip: Iterable[str] = ()) -> list[str]:
        """Python files of the folders to index (bounded), minus `skip`."""
        skipped = set(skip)
        out: list[str] = []
        for folder in self._folders:
            for root, dirs, files in os.walk(folder):
                dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info"))
                for name in sorted(files):
                    if name.endswith(".py"):
                        p = os.path.join(root, name)
                        if p not in skipped:
                            out.append(p)
                            if len(out) >= self.MAX_INDEX_FILES:
                                return out
        return out

    def index_file(self, path: str) -> None:
        """Add a file from disk to the workspace index (if small enough and readable)."""
        try:
            if os.path.getsize(path) > self.MAX_INDEX_BYTES:
                return
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
        except (OSError, UnicodeDecodeError):
            return
        self.update_file(path, text)

    def update_file(self, path: str, text: str | None) -> None:
        ws = self._workspace
        if ws is None:
            return
        try:
            if text is None:
                ws.remove_file(path)
            else:
                ws.add_file(path, text)
        except Exception as exc:
            self._log(f"workspace index update failed for {path}: {exc!r}")

    def edit_file(self, path: str, edits: list[TextEdit]) -> None:
        """Incremental re-parse of an indexed file (edits in didChange order, code points)."""
        ws = self._workspace
        if ws is None or path not in ws:
            return
        try:
            ws.edit_file(path, edits)
        except Exception as exc:  # the next analysis re-adds the file from the full text
            self._log(f"incremental index update failed for {path}: {exc!r}")
            ws.remove_file(path)

    # analysis ----------------------------------------------------------------------------------

    def analyse(self, text: str, path: str, config: ScanConfig) -> list[SourceFinding]:
        findings = analyse_source(text, path, config=config, workspace=self._workspace)
        return [f for f in findings if f.path == path]

    def regions(self, text: str, path: str, findings: list[SourceFinding], line: int) -> list[RegionSummary]:
        """Capture openers on `line`, each with the callees and findings it reaches."""
        out: list[RegionSummary] = []
        for start, end, kind in find_openers(text, line):
            mine = tuple(f for f in findings if f.capture_site is not None and f.capture_site.line == line)
            callees: list[str] = []
            for f in mine:
                for name in f.via:
                    if name not in callees:
                        callees.append(name)
            out.append(RegionSummary(line, start, end, kind, tuple(callees), mine))
        return out
