"""Public API of the source analyser (the language server and `denpex scan` call only this).

    analyse_source(text: str, path: str, *, config: ScanConfig | None = None,
                   workspace: Workspace | None = None, rulebook: RuleBook | None = None) -> list[SourceFinding]
        Findings located in `path`, sorted by position. With a workspace, `text` replaces that file in it
        and capture regions in other workspace files that reach functions of `path` report here too.
    analyse_workspace(workspace: Workspace, *, config=None, rulebook=None) -> dict[str, list[SourceFinding]]
        Every file at once (each capture region analysed once).
    Document(path, text)                      incremental editing of one file
        .apply_edits(edits: Sequence[TextEdit]) -> None   (LSP didChange order; tree-sitter reparse)
        .analyse(config=None, workspace=None, rulebook=None) -> list[SourceFinding]
    apply_fixes(text, findings, *, unsafe=False) -> str          first eligible fix of each finding
    apply_edits(text, edits) -> str

Positions in results are 0-based lines and 0-based code-point columns (UTF-16 conversion is the LSP's
job); ends are exclusive. Types: SourceFinding, Fix, TextEdit, CaptureSite (denpex.source.model),
ScanConfig (denpex.source.config), Workspace (denpex.source.workspace).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import cache

from denpex.rulebook import Rule, RuleBook, load_rulebook
from denpex.source.callgraph import Resolver
from denpex.source.config import ScanConfig
from denpex.source.fixes import apply_edits
from denpex.source.hazards import DEFAULT_GUARDS, AroundIndex, CaptureWalker, Hit, around_region
from denpex.source.index import FileIndex
from denpex.source.model import CaptureSite, Fix, SourceFinding, TextEdit
from denpex.source.parse import ParsedSource, parse
from denpex.source.regions import contextmanager_wrappers, find_regions
from denpex.source.suppress import is_suppressed, suppression_fix, suppressions
from denpex.source.workspace import Workspace, diff_edit

__all__ = [
    "CaptureSite", "Document", "Fix", "ScanConfig", "SourceFinding", "TextEdit", "Workspace",
    "analyse_source", "analyse_workspace", "apply_edits", "apply_fixes",
]

_OPENER_WORDS = ("graph", "capture_begin", "reduce-overhead", "max-autotune", "cudagraphs")


@cache
def _default_book() -> RuleBook:
    return load_rulebook()


def hazard_map(book: RuleBook) -> dict[str, Rule]:
    out: dict[str, Rule] = {}
    for r in book.rules:
        if r.source is not None:
            for h in r.source.hazards:
                out.setdefault(h, r)
    return out


_HMAP: dict[int, dict[str, Rule]] = {}


def _hmap(book: RuleBook) -> dict[str, Rule]:
    m = _HMAP.get(id(book))
    if m is None:
        m = _HMAP[id(book)] = hazard_map(book)
    return m


def may_open(text: str, extra: Iterable[str]) -> bool:
    """Cheap text prefilter: can this file open a capture at all?"""
    return any(w in text for w in _OPENER_WORDS) or any(w in text for w in extra)


def _may_open(ix: FileIndex, extra: Iterable[str]) -> bool:
    return may_open(ix.src.text, extra)


def _hits_for(ix: FileIndex, resolver: Resolver, config: ScanConfig, wrappers: set[str]) -> list[Hit]:
    hits: list[Hit] = []
    if not _may_open(ix, wrappers):
        return hits
    guards = DEFAULT_GUARDS | frozenset(g.rsplit(".", 1)[-1] for g in config.guards)
    around = AroundIndex(ix)  # the code after the captures, indexed once for all regions of the file
    for region in find_regions(ix, wrappers):
        CaptureWalker(region, resolver, hits.append, guards=guards, max_depth=config.max_depth).run()
        around_region(region, resolver, hits.append, around)
    return hits


def _wrapper_names(config: ScanConfig, ws: Workspace | None, ix: FileIndex) -> set[str]:
    names = {w.rsplit(".", 1)[-1] for w in config.capture_wrappers} | set(config.capture_wrappers)
    if ws is not None:
        for p in ws.paths():
            text = ws.text(p) or ""
            if p != ix.path and "graph(" in text and ("contextmanager" in text or "return" in text):
                other = ws.index(p)
                if other is not None:
                    names |= contextmanager_wrappers(other)
    return names


def _to_findings(hits: Iterable[Hit], book: RuleBook, config: ScanConfig, only_path: str | None) -> list[SourceFinding]:
    hmap = _hmap(book)
    seen: set[tuple[str, int, int, str]] = set()
    out: list[SourceFinding] = []
    hits = list(hits)
    busy_lines = {(h.ix.path, h.node.start_point[0]) for h in hits if h.hazard != "python-side-effect"}
    hits = [h for h in hits if h.hazard != "python-side-effect" or (h.ix.path, h.node.start_point[0]) not in busy_lines]
    supp_cache: dict[int, dict[int, set[str]]] = {}
    for h in hits:
        if only_path is not None and h.ix.path != only_path:
            continue
        rule = hmap.get(h.hazard)
        if rule is None or not config.enabled(rule.id):
            continue
        key = (h.ix.path, h.node.start_byte, h.node.end_byte, rule.id)
        if key in seen:
            continue
        seen.add(key)
        src: ParsedSource = h.ix.src
        table = supp_cache.get(id(src))
        if table is None:
            table = supp_cache[id(src)] = suppressions(src)
        sl, sc = src.start(h.node)
        el, ec = src.end(h.node)
        if is_suppressed(table, sl, rule.id, rule.code):
            continue
        severity = config.severity.get(rule.id) or h.severity or rule.severity
        message = h.message or (rule.source.message if rule.source is not None else rule.title)
        region = h.region
        out.append(SourceFinding(
            rule=rule.id, code=rule.code, severity=severity, message=message, path=h.ix.path,
            start_line=sl, start_col=sc, end_line=el, end_col=ec, hazard=h.hazard,
            capture_site=CaptureSite(region.ix.path, region.line, region.kind),
            fixes=tuple(h.fixes), suppression=suppression_fix(src, sl, rule.id), via=h.chain,
        ))
    out.sort(key=lambda f: (f.path, f.start_line, f.start_col, f.code))
    return out


def _analyse_index(ix: FileIndex, *, config: ScanConfig, workspace: Workspace | None, book: RuleBook) -> list[SourceFinding]:
    ws = workspace
    resolver = Resolver(ws.lookup_module if ws is not None else (lambda _m: None),
                        ws.imported_elsewhere if ws is not None else None)
    wrappers = _wrapper_names(config, ws, ix)
    hits = _hits_for(ix, resolver, config, wrappers)
    if ws is not None:
        stem = ix.path.replace("\\", "/").rsplit("/", 1)[-1].removesuffix(".py")
        for p in ws.paths():
            if p == ix.path:
                continue
            text = ws.text(p) or ""
            if (stem != "__init__" and stem not in text) or not may_open(text, wrappers):
                continue  # it cannot import this file, or it opens no capture
            other = ws.index(p)
            if other is None or not any(m in ix.path.replace("/", ".") for m in other.imports.modules):
                continue  # it imports nothing that could be this file
            hits.extend(h for h in _hits_for(other, resolver, config, wrappers) if h.ix.path == ix.path)
    return _to_findings(hits, book, config, ix.path)


def analyse_source(text: str, path: str, *, config: ScanConfig | None = None, workspace: Workspace | None = None,
                   rulebook: RuleBook | None = None) -> list[SourceFinding]:
    """Findings in one file (see the module docstring)."""
    key = (path, id(workspace))
    doc = _DOCS.get(key)
    ws_src = workspace.source(path) if workspace is not None and doc is not None else None
    if doc is not None and ws_src is not None and ws_src is not doc.src and ws_src.text == text:
        # the workspace already re-parsed this file incrementally (the language server's didChange): take its
        # tree instead of parsing again, and carry the findings of unchanged code across the edit
        edit = diff_edit(doc.text, text)
        doc.advance(ws_src, TextEdit(*edit) if edit is not None else None)
    elif doc is None or (ws_src is not None and ws_src is not doc.src and ws_src != doc.src):
        doc = Document(path, text)
        if len(_DOCS) >= 256:
            _DOCS.clear()
        _DOCS[key] = doc
    elif doc.text != text:
        doc.update_text(text)
    return doc.analyse(config, workspace, rulebook)


_DOCS: dict[tuple[str, int], Document] = {}


def analyse_workspace(workspace: Workspace, *, config: ScanConfig | None = None,
                      rulebook: RuleBook | None = None) -> dict[str, list[SourceFinding]]:
    book = rulebook or _default_book()
    cfg = config or ScanConfig()
    resolver = Resolver(workspace.lookup_module, workspace.imported_elsewhere)
    hits: list[Hit] = []
    wrappers = {w.rsplit(".", 1)[-1] for w in cfg.capture_wrappers} | set(cfg.capture_wrappers)
    for p in workspace.paths():
        text = workspace.text(p) or ""
        if "graph(" in text and ("contextmanager" in text or "return" in text):
            ix = workspace.index(p)
            if ix is not None:
                wrappers |= contextmanager_wrappers(ix)
    for p in workspace.paths():
        if not may_open(workspace.text(p) or "", wrappers):
            continue
        ix = workspace.index(p)
        if ix is not None:
            hits.extend(_hits_for(ix, resolver, cfg, wrappers))
    findings = _to_findings(hits, book, cfg, None)
    out: dict[str, list[SourceFinding]] = {p: [] for p in workspace.paths()}
    for f in findings:
        out.setdefault(f.path, []).append(f)
    return out


_LOCAL_EDIT_BLOCKERS = ("def", "class", "lambda", "import", "global", "nonlocal", "graph", "capture", "compile",
                        "yield", "@", "replay", "contextmanager")


@dataclass
class _Cached:
    key: tuple[object, ...]
    findings: list[SourceFinding]
    touched: list[tuple[int, int]]
    watched: frozenset[str] = frozenset()


class Document:
    """One open file, reparsed incrementally on edits (tree-sitter reuses the unchanged subtrees).

    After an analysis, an edit that falls inside the body of a function the analysis never consulted (not
    reached from a capture, not a capture's scope, no definitions/imports/capture words in the old or new
    text) keeps the previous findings, shifted to their new positions, without re-running the analysis."""

    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self.src = parse(text)
        self._ix: FileIndex | None = None
        self._cached: _Cached | None = None
        self.last_was_incremental = False

    @property
    def text(self) -> str:
        return self.src.text

    @property
    def ix(self) -> FileIndex:
        if self._ix is None:
            self._ix = FileIndex(self.path, self.src)
        return self._ix

    def update_text(self, text: str) -> None:
        """Replace the whole text; the change is reparsed incrementally as one edit."""
        edit = diff_edit(self.src.text, text)
        if edit is not None:
            self.apply_edits([TextEdit(*edit)])

    def apply_edits(self, edits: Sequence[TextEdit]) -> None:
        for e in edits:
            self.advance(self.src.edit(e.start_line, e.start_col, e.end_line, e.end_col, e.new_text), e)

    def advance(self, new: ParsedSource, e: TextEdit | None) -> None:
        """Move to `new`, the current source after the one edit `e` (already parsed, e.g. by a workspace)."""
        if e is not None:
            if self._cached is not None and not self._local(e):
                self._cached = None
            if self._cached is not None:
                self._cached = _shift_cached(self._cached, self.src, new, e)
        elif new.text != self.src.text:
            self._cached = None
        self.src = new
        self._ix = None

    def _local(self, e: TextEdit) -> bool:
        cached = self._cached
        assert cached is not None
        src = self.src
        s = src.byte_offset(e.start_line, e.start_col)
        t = src.byte_offset(e.end_line, e.end_col)
        old_text = src.data[s:t].decode("utf-8", "surrogatepass")
        if any(w in old_text or w in e.new_text for w in _LOCAL_EDIT_BLOCKERS):
            return False
        if any(re.search(rf"\b{re.escape(w)}\b", old_text + "\n" + e.new_text) for w in cached.watched):
            return False
        node = src.root.descendant_for_byte_range(s, max(s, t))
        fn = None
        while node is not None:
            if node.type == "function_definition":
                body = node.child_by_field_name("body")
                if body is not None and body.start_byte < s and t <= body.end_byte:
                    fn = node
                break
            node = node.parent
        if fn is None:
            return False
        return not any(a < fn.end_byte and fn.start_byte < b for a, b in cached.touched)

    def analyse(self, config: ScanConfig | None = None, workspace: Workspace | None = None,
                rulebook: RuleBook | None = None) -> list[SourceFinding]:
        book = rulebook or _default_book()
        cfg = config or ScanConfig()
        key = (cfg, id(workspace), workspace.others_generation(self.path) if workspace is not None else 0, id(book))
        if self._cached is not None and self._cached.key == key:
            self.last_was_incremental = True
            return list(self._cached.findings)
        self.last_was_incremental = False
        if workspace is not None:
            if workspace.source(self.path) is not self.src:
                workspace.set_source(self.path, self.src)
            ix = workspace.index(self.path)
            assert ix is not None
            self._ix = ix
        ix = self.ix
        ix.touched.clear()
        ix.watched.clear()
        findings = _analyse_index(ix, config=cfg, workspace=workspace, book=book)
        self._cached = _Cached(key, findings, list(ix.touched), frozenset(ix.watched))
        return list(findings)


def _shift_point(line: int, col: int, e: TextEdit) -> tuple[int, int]:
    if (line, col) <= (e.start_line, e.start_col):
        return line, col
    if (line, col) < (e.end_line, e.end_col):
        raise ValueError("inside the edit")
    nl = e.new_text.count("\n")
    if line == e.end_line:
        if nl:
            return e.start_line + nl, col - e.end_col + len(e.new_text) - e.new_text.rfind("\n") - 1
        return e.start_line, e.start_col + len(e.new_text) + (col - e.end_col)
    return line + nl - (e.end_line - e.start_line), col


def _shift_edit(t: TextEdit, e: TextEdit) -> TextEdit:
    sl, sc = _shift_point(t.start_line, t.start_col, e)
    el, ec = _shift_point(t.end_line, t.end_col, e)
    return TextEdit(sl, sc, el, ec, t.new_text)


def _shift_fix(f: Fix, e: TextEdit) -> Fix:
    return Fix(f.title, f.safety, tuple(_shift_edit(t, e) for t in f.edits))


def _shift_cached(c: _Cached, old: ParsedSource, new: ParsedSource, e: TextEdit) -> _Cached | None:
    s = old.byte_offset(e.start_line, e.start_col)
    t = old.byte_offset(e.end_line, e.end_col)
    delta = len(new.data) - len(old.data)
    try:
        out: list[SourceFinding] = []
        for f in c.findings:
            sl, sc = _shift_point(f.start_line, f.start_col, e)
            el, ec = _shift_point(f.end_line, f.end_col, e)
            site = f.capture_site
            if site is not None and site.path == f.path:
                site = CaptureSite(site.path, _shift_point(site.line, 0, e)[0], site.kind)
            out.append(replace(
                f, start_line=sl, start_col=sc, end_line=el, end_col=ec, capture_site=site,
                fixes=tuple(_shift_fix(x, e) for x in f.fixes),
                suppression=_shift_fix(f.suppression, e) if f.suppression is not None else None,
            ))
    except ValueError:
        return None
    touched = [(a + delta if a >= t else a, b + delta if b >= t else b) for a, b in c.touched if not (a < t and s < b)]
    return _Cached(c.key, out, touched, c.watched)


def apply_fixes(text: str, findings: Iterable[SourceFinding], *, unsafe: bool = False) -> str:
    """Apply the first eligible fix of each finding; fixes that overlap an already chosen one are skipped."""
    chosen: list[TextEdit] = []
    spans: list[tuple[tuple[int, int], tuple[int, int]]] = []
    for f in findings:
        for fx in f.fixes:
            if fx.safety == "unsafe" and not unsafe:
                continue
            if not fx.edits:
                continue
            fs = [((e.start_line, e.start_col), (e.end_line, e.end_col)) for e in fx.edits]
            if any((a[0] < b[1] and b[0] < a[1]) or (a[0] == b[0]) for a in fs for b in spans):
                break
            chosen.extend(fx.edits)
            spans.extend(fs)
            break
    return apply_edits(text, chosen) if chosen else text
