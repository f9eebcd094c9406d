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
ScanConfig (denpex.source.config), Workspace (denpex.source.resolve.workspace).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from functools import cache
from typing import TypeVar

from tree_sitter import Node

from denpex.rulebook import Rule, RuleBook, load_rulebook
from denpex.source.capture.entrypoints import entry_regions, may_have_entries
from denpex.source.capture.regions import CaptureRegion, contextmanager_wrappers, find_regions
from denpex.source.config import ScanConfig
from denpex.source.engine.around import AroundIndex, around_region
from denpex.source.engine.facts import fresh_name, logging_level_low
from denpex.source.engine.filecache import capturing_importers, may_open
from denpex.source.engine.filecache import may_wrap as _may_wrap
from denpex.source.engine.filecache import wrapper_names as _wrapper_names
from denpex.source.engine.hits import Hit, Sink, branch_head
from denpex.source.engine.jobs import map_in_order
from denpex.source.engine.kept import Cached as _Cached
from denpex.source.engine.kept import Pending as _Pending
from denpex.source.engine.kept import Rec as _Rec
from denpex.source.engine.kept import RegionEntry as _RegionEntry
from denpex.source.engine.kept import consulted as _consulted
from denpex.source.engine.kept import merged as _merged
from denpex.source.engine.kept import shift_cached as _shift_cached
from denpex.source.engine.units import Recorder, RegionCache, RemoteEntry, Unit, Walk, Write, rewalk
from denpex.source.engine.walker import DEFAULT_GUARDS, CaptureWalker
from denpex.source.fixes.edits import apply_edits
from denpex.source.fixes.suppress import is_suppressed, suppression_fix, suppressions
from denpex.source.model import CaptureSite, Fix, Severity, SourceFinding, TextEdit
from denpex.source.resolve.callgraph import Resolver
from denpex.source.resolve.carried import CarriedAnswers
from denpex.source.resolve.index import FileIndex
from denpex.source.resolve.workspace import Workspace, diff_edit
from denpex.source.rules import RuleSet, check_against, registry, rule_set
from denpex.source.syntax.parse import ParsedSource, parse, take_wanting

__all__ = [
    "CaptureSite", "Document", "Fix", "ScanConfig", "SourceFinding", "TextEdit", "Workspace",
    "analyse_source", "analyse_workspace", "apply_edits", "apply_fixes",
]


@cache
def _default_book() -> RuleBook:
    return load_rulebook()


def hazard_map(book: RuleBook) -> dict[str, Rule]:
    """Hazard id -> the rule it reports, after checking the source rule modules against the book (a module and
    its YAML that disagree, or a source side without a module, fail loudly: RegistryError)."""
    check_against(book)
    by_id = {r.id: r for r in book.rules}
    return {h: by_id[rid] for h, rid in registry().owner.items()}


_HMAP: dict[int, dict[str, Rule]] = {}


def _hmap(book: RuleBook) -> dict[str, Rule]:
    m = _HMAP.get(id(book))
    if m is None:
        m = _HMAP[id(book)] = hazard_map(book)
    return m


_T = TypeVar("_T")
_GROW_ROUNDS = 3  # then a file that still asks for more is parsed whole


def _settled(run: Callable[[], _T]) -> _T:
    """Run an analysis until every lazily parsed file it read holds all the code it asked for (see chunks.py):
    its result is then the one whole-file parses give. Each further round parses more of a file (a file that
    keeps asking is parsed whole after a few rounds), so this ends."""
    take_wanting()  # what earlier work asked for and never waited on is not this analysis's business
    rounds = 0
    while True:
        result = run()
        wanting = take_wanting()
        if not wanting:
            return result
        rounds += 1
        for src in wanting:
            if rounds <= _GROW_ROUNDS:
                src.grow()
            else:
                src.complete()


def _may_open(ix: FileIndex, extra: Iterable[str]) -> bool:
    return may_open(ix.src.text, extra)


def _regions(ix: FileIndex, config: ScanConfig, wrappers: set[str], resolver: Resolver) -> list[CaptureRegion]:
    """The file's capture regions (none without a capture word: no tree walk), then the functions a framework
    preset or `capture-entry-points` names as captured (entrypoints.py)."""
    found = find_regions(ix, wrappers, graphed=config.graphed_callables) if _may_open(
        ix, wrappers | config.graphed_callables) else []
    return found + entry_regions(ix, resolver.values, config.capture_entry_points)


def _enabled_rules(config: ScanConfig) -> RuleSet:
    return rule_set(rid for rid in registry().rules if config.enabled(rid))


def _walker(region: CaptureRegion, resolver: Resolver, config: ScanConfig, sink: Sink) -> CaptureWalker:
    guards = DEFAULT_GUARDS | frozenset(g.rsplit(".", 1)[-1] for g in config.guards)
    return CaptureWalker(region, resolver, sink, _enabled_rules(config), guards=guards, max_depth=config.max_depth)


def _detect(region: CaptureRegion, resolver: Resolver, config: ScanConfig, around: AroundIndex, sink: Sink,
            recorder: Recorder | None = None) -> None:
    """The enabled rules' detectors on one capture region: the captured code, then the code around it (with a
    recorder: the walk's entries into its file recorded, units.py)."""
    w = _walker(region, resolver, config, sink)
    if recorder is not None:
        recorder.attach(w)
    w.run()
    around_region(region, resolver, sink, w.rules, around)


def _hits_for(ix: FileIndex, resolver: Resolver, config: ScanConfig, wrappers: set[str]) -> list[Hit]:
    hits: list[Hit] = []
    around = AroundIndex(ix)  # the code after the captures, indexed once for all regions of the file
    for region in _regions(ix, config, wrappers, resolver):
        _detect(region, resolver, config, around, hits.append)
    return hits


def _capped(severity: Severity, uncertain: bool) -> Severity:
    """A finding that may not happen (a torch.compile whose mode the text leaves open, a line on a branch) is
    no error: at most a warning."""
    return "warning" if uncertain and severity == "error" else severity


_OPEN_MODE = (" (if this torch.compile runs with CUDA graphs: its mode is not a constant here, e.g. "
              "mode=\"reduce-overhead\" or \"max-autotune\" from a variable or **kwargs)")


def _doubt(h: Hit) -> str:
    """Why a hit may not happen, as a message suffix ("" when nothing says so)."""
    if h.region.uncertain:
        return _OPEN_MODE
    ep = h.region.entry
    if ep is not None and ep.conditional:
        return ep.note()  # captured only with the framework's CUDA graphs on
    head = branch_head(h.ix.src, h.node, h.region.anchor if h.ix is h.region.ix else None) or h.branch
    if head:
        return f" (only if the branch `{head}` runs)"
    if h.maybe:
        return f" (if `{h.maybe}` is what its callers pass: resolved from their arguments)"
    return ""


def _note(h: Hit) -> str:
    ep = h.region.entry
    return ep.note() if ep is not None and not ep.conditional else ""


def _worded(rule: Rule, config: ScanConfig, severity: Severity | None, message: str | None,
            doubt: str, note: str = "") -> tuple[Severity, str]:
    """A finding's severity (the configured one, else the hit's or the rule's, capped when in doubt) and message."""
    sev = config.severity.get(rule.id) or _capped(severity or rule.severity, bool(doubt))
    return sev, (message or (rule.source.message if rule.source is not None else rule.title)) + doubt + note


def _rec(h: Hit) -> _Rec:
    src = h.ix.src
    sl, sc = src.start(h.node)
    el, ec = src.end(h.node)
    r = h.region
    return _Rec(h.hazard, h.node.start_byte, h.node.end_byte, sl, sc, el, ec, h.severity, h.message,
                CaptureSite(r.ix.path, r.line, r.kind), tuple(h.fixes), h.chain, _doubt(h), h.steps, _note(h))


def _recs_to_findings(recs: list[_Rec], book: RuleBook, config: ScanConfig, src: ParsedSource,
                      path: str) -> list[SourceFinding]:
    """The findings of one file's hits: hits of disabled rules dropped, a side effect on a line that also has
    another hazard dropped, one finding per node and rule (a line reached both ways: the certain one),
    suppressions honoured, sorted by position."""
    hmap = _hmap(book)
    busy = {r.sl for r in recs if r.hazard != "python-side-effect"}
    seen: set[tuple[int, int, str]] = set()
    out: list[SourceFinding] = []
    table: dict[int, set[str]] | None = None
    for r in sorted(recs, key=lambda r: bool(r.doubt)):  # a line reached both ways: the certain one
        if r.hazard == "python-side-effect" and r.sl in busy:
            continue
        rule = hmap.get(r.hazard)
        if rule is None or not config.enabled(rule.id):
            continue
        key = (r.start_byte, r.end_byte, rule.id)
        if key in seen:
            continue
        seen.add(key)
        if table is None:
            table = suppressions(src)
        if is_suppressed(table, r.sl, rule.id, rule.code):
            continue
        severity, message = _worded(rule, config, r.severity, r.message, r.doubt, r.note)
        out.append(SourceFinding(
            rule=rule.id, code=rule.code, severity=severity, message=message, path=path,
            start_line=r.sl, start_col=r.sc, end_line=r.el, end_col=r.ec, hazard=r.hazard,
            capture_site=r.site, fixes=r.fixes, suppression=suppression_fix(src, r.sl, rule.id), via=r.chain,
            call_path=r.steps,
        ))
    out.sort(key=lambda f: (f.path, f.start_line, f.start_col, f.code))
    return out


def _owner_of(node: Node) -> Node | None:
    p = node.parent
    while p is not None and p.type != "function_definition":
        p = p.parent
    return p


def _region_ident(r: CaptureRegion) -> tuple[str, int, int, int, int]:
    return (r.kind, r.site.start_byte, r.site.end_byte, r.anchor.start_byte, r.end_byte)


_FACT_WORDS = ("cudaMallocAsync", "pin_memory=True", "Thread(", "threading", "register_generator_state")


def _file_facts(src: ParsedSource) -> tuple[object, ...]:
    """The answers the detectors read from the whole file's text (not from code ranges they record): an edit
    that changes one of them invalidates every reused result."""
    def has(w: str) -> bool:  # remembered occurrences, carried across edits: no search of the whole file
        return bool(src.occurrences(w.encode()))

    text = src.text
    spaceless = text.replace(" ", "") if has("register_generator_state") else None
    logging_low = (has("basicConfig(") or has("setLevel(")) and logging_level_low(text)
    names = tuple(fresh_name(text, b) if has(b) else b for b in ("warmup_stream", "capture_stream"))
    # after a load_state_dict, restores of capturable / state["step"] and state_dict() sources anywhere in the file
    optim = tuple(len(src.occurrences(w)) for w in _OPTIM_WORDS) if has("load_state_dict") else ()
    return (tuple(has(w) for w in _FACT_WORDS), logging_low, names, spaceless, optim)


_OPTIM_WORDS = (b"capturable", b'step"]', b"step']", b"state_dict(")


def _region_hits(ix: FileIndex, resolver: Resolver, config: ScanConfig, wrappers: set[str],
                 cached: dict[tuple[str, int, int, int, int], _RegionEntry] | None,
                 ) -> tuple[list[_Rec], list[_RegionEntry]]:
    """The hits of this file's own capture regions in this file, re-using the cached entries of every scope
    whose regions are all unchanged (the regions of one scope share which later statements were already
    reported, so they are analysed together)."""
    recs: list[_Rec] = []
    entries: list[_RegionEntry] = []
    regions = _regions(ix, config, wrappers, resolver)
    owners: list[Node | None] = [_owner_of(r.anchor) for r in regions]
    owner_keys = [o.start_byte if o is not None else -1 for o in owners]
    reuse: set[int] = set()
    if cached:
        groups: dict[int, list[tuple[str, int, int, int, int]]] = {}
        for r, k in zip(regions, owner_keys, strict=True):
            groups.setdefault(k, []).append(_region_ident(r))
        old_groups: dict[int, int] = {}
        for old in cached.values():
            old_groups[old.owner] = old_groups.get(old.owner, 0) + 1
        for k, idents in groups.items():
            # every region of the scope kept, and no kept region of the scope gone
            if old_groups.get(k, 0) == len(idents) and all(
                (found := cached.get(i)) is not None and found.owner == k for i in idents
            ):
                reuse.add(k)
    around: AroundIndex | None = None
    for region, owner, k in zip(regions, owners, owner_keys, strict=True):
        ident = _region_ident(region)
        if k in reuse:
            assert cached is not None
            entry = cached[ident]
        else:
            if around is None:
                around = AroundIndex(ix)  # the code after the captures, indexed once for all regions re-run
            around.start_region()
            resolver.values.forget()  # each region records what it consulted: no answers carried from another
            mark, emark = len(ix.touched), len(ix.attr_deps)
            watched_before = ix.watched
            ix.watched = set()
            hits: list[Hit] = []
            _detect(region, resolver, config, around, hits.append)
            touched = ix.touched[mark:] + ix.touched_classes(emark)
            touched.append((region.anchor.start_byte, region.end_byte))
            touched.append((region.site.start_byte, region.site.end_byte))
            p = owner
            while p is not None:
                touched.append((p.start_byte, p.end_byte))
                p = _owner_of(p)
            entry = _RegionEntry(ident, k, [_rec(h) for h in hits if h.ix.path == ix.path], _merged(touched),
                                 frozenset(ix.watched))
            ix.watched = watched_before | ix.watched
        recs.extend(entry.recs)
        entries.append(entry)
    return recs, entries


def _remote_hits(ix: FileIndex, other: FileIndex, text: str, resolver: Resolver, config: ScanConfig,
                 wrappers: set[str], old: RemoteEntry | None,
                 index: Callable[[str], FileIndex | None]) -> RemoteEntry:
    """The hits of `other`'s capture regions in `ix`'s file, region by region, recording what of that file they
    consulted (units.py): a region whose recorded walk `old` kept is not walked again, one whose entries into
    an edited function were marked has only those entries walked again."""
    resolver.values.forget()  # the ranges an answer consulted are recorded when it is computed, not when re-used
    mark, emark = len(ix.touched), len(ix.attr_deps)
    watched_before = ix.watched
    ix.watched = set()
    known = frozenset(wrappers)
    if old is not None and old.regions is not None and old.regions[0] is other and old.regions[1] == known:
        # found in the same tree of the importer, from nothing of this file an edit since changed (current())
        regions: list[CaptureRegion] = old.regions[2]
        head, head_watched = old.head, set(old.head_watched)
    else:
        regions = _regions(other, config, wrappers, resolver)
        head, head_watched = _merged(ix.touched[mark:] + ix.touched_classes(emark)), ix.watched
    kept = old.walks if old is not None else {}
    around: AroundIndex | None = None
    rec = Recorder(ix, resolver.values, _rec)
    walks: dict[tuple[str, int, int, int, int], Walk] = {}
    for region in regions:
        ident = _region_ident(region)
        walk = kept.get(ident)
        if walk is not None and not walk.root.pending():
            walks[ident] = walk
            continue
        if around is None:
            around = AroundIndex(other)
        around.start_region()
        resolver.values.forget()  # each region records what it consulted: no answers carried from another
        if walk is not None:
            if rewalk(walk, _walker(region, resolver, config, rec.sink), rec, index):
                walks[ident] = walk
                continue
            resolver.values.forget()
        root, log = Unit(-1, None), list[Write]()
        rec.start(root, log)
        _detect(region, resolver, config, around, rec.sink, rec)
        rec.finish()
        walks[ident] = Walk(ident, root, log)
    entry = RemoteEntry(text, head, head_watched, walks, regions=(other, known, regions))
    touched, watched = entry.consulted()
    ix.watched = watched_before | watched
    ix.touched[mark:] = touched
    return entry


def _analyse_doc(ix: FileIndex, *, config: ScanConfig, workspace: Workspace | None, book: RuleBook,
                 cached: dict[tuple[str, int, int, int, int], _RegionEntry] | None,
                 remote: dict[str, RemoteEntry] | None = None, carried: CarriedAnswers | None = None,
                 ) -> tuple[list[SourceFinding], list[_RegionEntry], dict[str, RemoteEntry]]:
    """`_analyse_index` for a Document: the same findings, with the per-region entries to re-use next time, and
    the hits of the importers' regions per importer (`remote`: the ones still valid after the edits since)."""
    ws = workspace
    resolver = Resolver(ws.lookup_module if ws is not None else (lambda _m: None),
                        ws.imported_elsewhere if ws is not None else None,
                        ws.importers if ws is not None else None)
    if ws is not None:
        values = resolver.values
        values.pinned = ix  # the words other files' call sites are found by are watched here
        if carried is not None:
            values.carried, values.current = carried, ws.indexed
    wrappers = _wrapper_names(config, ws, ix)
    recs, entries = _region_hits(ix, resolver, config, wrappers, cached)
    found: dict[str, RemoteEntry] = {}
    if ws is not None:
        # the files that import this one, directly or through others (a capture in train.py reaches
        # layers.py through model.py)
        for p in capturing_importers(ws, ix.path, frozenset(wrappers), config.capture_entry_points):
            text = ws.text(p) or ""
            hit = remote.get(p) if remote is not None else None
            if hit is None or hit.text is not text or not hit.complete:
                other = ws.index(p)
                if other is None:
                    continue
                hit = _remote_hits(ix, other, text, resolver, config, wrappers,
                                   hit if hit is not None and hit.text is text else None, ws.index)
            found[p] = hit
            recs.extend(hit.recs)
    return _recs_to_findings(recs, book, config, ix.src, ix.path), entries, found


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
        known = workspace.source(path) if workspace is not None and path in workspace else None
        # the file as the workspace already parsed it (the language server's didOpen): not parsed again
        doc = Document(path, text, known if known is not None and known.text == text else None)
        if len(_DOCS) >= 256:
            _DOCS.clear()
        _DOCS[key] = doc
    elif doc.text != text:
        doc.update_text(text)
    return doc.analyse(config, workspace, rulebook)


_DOCS: dict[tuple[str, int], Document] = {}


def analyse_workspace(workspace: Workspace, *, config: ScanConfig | None = None,
                      rulebook: RuleBook | None = None, jobs: int = 1) -> dict[str, list[SourceFinding]]:
    """`jobs` > 1: the capture files are analysed by that many forked processes (a workspace parsed whole, as
    `denpex scan` makes it; a lazily parsed one grows its trees as it is analysed, so it stays in this one)."""
    book = rulebook or _default_book()
    cfg = config or ScanConfig()
    return _settled(lambda: _analyse_workspace(workspace, cfg, book, 1 if workspace.lazy else jobs))


def _analyse_workspace(workspace: Workspace, cfg: ScanConfig, book: RuleBook,
                       jobs: int = 1) -> dict[str, list[SourceFinding]]:
    # the files in the order the workspace holds them now: parsing below reorders paths() (parsed files first),
    # and where the parsing happens (here or in a child) must not change the order of the result
    order = workspace.paths()
    resolver = Resolver(workspace.lookup_module, workspace.imported_elsewhere, workspace.importers)
    wrappers = {w.rsplit(".", 1)[-1] for w in cfg.capture_wrappers} | set(cfg.capture_wrappers)
    for p in workspace.paths():
        text = workspace.text(p) or ""
        if _may_wrap(text):
            ix = workspace.index(p)
            if ix is not None:
                wrappers |= contextmanager_wrappers(ix)
    # in the order of paths() here, the files the loop above parsed first: the first capture to reach a line is
    # the one its finding names
    todo = [p for p in workspace.paths() if may_open(text := workspace.text(p) or "", wrappers)
            or may_have_entries(text, cfg.capture_entry_points)]

    srcs: dict[str, ParsedSource] = {}  # the trees hits are in (filled where the files are analysed here)

    def recs_of(path: str) -> list[tuple[str, _Rec]]:
        ix = workspace.index(path)
        hits = _hits_for(ix, resolver, cfg, wrappers) if ix is not None else []
        for h in hits:
            srcs.setdefault(h.ix.path, h.ix.src)
        return [(h.ix.path, _rec(h)) for h in hits]

    by_file: dict[str, list[_Rec]] = {}
    for found in map_in_order(recs_of, todo, jobs):
        for path, rec in found:
            by_file.setdefault(path, []).append(rec)
    findings: list[SourceFinding] = []
    for path, recs in by_file.items():
        src = srcs.get(path) or workspace.source(path)  # a child's trees: the same text, parsed here
        if src is not None:
            findings.extend(_recs_to_findings(recs, book, cfg, src, path))
    findings.sort(key=lambda f: (f.path, f.start_line, f.start_col, f.code))
    out: dict[str, list[SourceFinding]] = {p: [] for p in order}
    for f in findings:
        out.setdefault(f.path, []).append(f)
    return out


_LOCAL_EDIT_BLOCKERS = ("def", "class", "lambda", "import", "global", "nonlocal", "graph", "capture", "compile",
                        "yield", "@", "replay", "contextmanager")


class Document:
    """One open file, reparsed incrementally on edits (tree-sitter reuses the unchanged subtrees).

    After an analysis, an edit that falls inside the body of a function the analysis never consulted (not
    reached from a capture, not a capture's scope, no definitions/imports/capture words in the old or new
    text) keeps the previous findings, shifted to their new positions, without re-running the analysis.
    Otherwise the results of each capture region are kept the same way when the edit is outside everything
    that region consulted (and the other regions of its scope are kept too): only the other regions re-run.
    Any syntax error before or after an edit, or a change of the file-wide facts the detectors read
    (`_file_facts`), re-runs everything."""

    def __init__(self, path: str, text: str, src: ParsedSource | None = None) -> None:
        self.path = path
        self.src = src if src is not None else parse(text, lazy=True)
        self._ix: FileIndex | None = None
        self._cached: _Cached | None = None
        self._regions: RegionCache | None = None
        self._facts: tuple[object, ...] | None = None
        self.last_was_incremental = False
        self.last_reused_regions = 0  # capture regions whose results the last analysis kept (not re-run)

    @property
    def text(self) -> str:
        return self.src.text

    @property
    def ix(self) -> FileIndex:
        if self._ix is None or self._ix.epoch != self.src.epoch:
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

    def _drop(self) -> None:
        self._cached = None
        self._regions = None

    def advance(self, new: ParsedSource, e: TextEdit | None) -> None:
        """Move to `new`, the current source after the one edit `e` (already parsed, e.g. by a workspace)."""
        if e is not None:
            if self._cached is not None or self._regions is not None:
                fn = self._edited_function(e)
                if fn is not None and not _same_function(fn, new, e, len(new.data) - len(self.src.data)):
                    fn = None
                if fn is None:
                    self._drop()
                else:
                    changed = self._changed_text(e)
                    s = self.src.byte_offset(e.start_line, e.start_col)
                    t = self.src.byte_offset(e.end_line, e.end_col)
                    delta = len(new.data) - len(self.src.data)
                    if self._cached is not None:
                        if _consulted(fn.start_byte, fn.end_byte, changed, self._cached.touched, self._cached.watched):
                            self._cached = None
                        else:
                            self._cached = _shift_cached(self._cached, self.src, new, e)
                    if self._regions is not None:  # carried across the edit when next needed (often never)
                        n = t - s + delta  # the inserted bytes
                        w0, a0, b0 = _statements_edited(self.src, s, t)
                        w1, a1, b1 = _statements_edited(new, s, s + n)
                        # the new statements' span in the old text (what the edit inserted lies at [s, t))
                        a1 = a1 if a1 <= s else (a1 - delta if a1 >= s + n else s)
                        b1 = b1 - delta if b1 >= s + n else t
                        self._regions.pending.append(_Pending(fn.start_byte, fn.end_byte, changed, s, t, delta, e,
                                                              w0 | w1, (min(a0, a1, s), max(b0, b1, t))))
        elif new.text != self.src.text:
            self._drop()
        self.src = new
        self._ix = None

    def _changed_text(self, e: TextEdit) -> str:
        """The edit's old and new text, each with the word characters around it: typing `e` after `self.nam`
        spells `name` (what an analysis watched) though the typed text does not."""
        src = self.src
        data = src.data
        s = src.byte_offset(e.start_line, e.start_col)
        t = src.byte_offset(e.end_line, e.end_col)
        a, b = s, t
        while a > 0 and _is_word_byte(data[a - 1]):
            a -= 1
        while b < len(data) and _is_word_byte(data[b]):
            b += 1
        before, after = data[a:s].decode("utf-8", "surrogatepass"), data[t:b].decode("utf-8", "surrogatepass")
        return data[a:b].decode("utf-8", "surrogatepass") + "\n" + before + e.new_text + after

    def _edited_function(self, e: TextEdit) -> Node | None:
        """The innermost function whose body holds the whole edit, when the edit spells none of the words that
        can change what a function is or what opens a capture (None otherwise: nothing is kept)."""
        src = self.src
        s = src.byte_offset(e.start_line, e.start_col)
        t = src.byte_offset(e.end_line, e.end_col)
        old_text = src.data[s:t].decode("utf-8", "surrogatepass")
        if any(w in old_text or w in e.new_text for w in _LOCAL_EDIT_BLOCKERS):
            return None
        found = _function_holding(src, src.root.descendant_for_byte_range(s, max(s, t)), s, t, None)
        if found is None and not old_text.strip(" \t") and not e.new_text.strip(" \t") and "\n" not in e.new_text:
            k = s  # blanks typed or deleted after a line's last token: the function that token ends
            while k > 0 and src.data[k - 1:k] in (b" ", b"\t"):
                k -= 1
            if k > 0 and src.data[k - 1:k] != b"\n":
                found = _function_holding(src, src.root.descendant_for_byte_range(k - 1, k), s, t, k)
        return found

    def analyse(self, config: ScanConfig | None = None, workspace: Workspace | None = None,
                rulebook: RuleBook | None = None) -> list[SourceFinding]:
        book = rulebook or _default_book()
        cfg = config or ScanConfig()
        key = (cfg, id(workspace), workspace.others_generation(self.path) if workspace is not None else 0, id(book))
        facts = _file_facts(self.src)
        if facts != self._facts:
            self._drop()
        if self._cached is not None and self._cached.key == key:
            self.last_was_incremental = True
            self.last_reused_regions = len(self._regions.entries) if self._regions is not None else 0
            return list(self._cached.findings)
        self.last_was_incremental = False
        cached = remote = None
        # resolver answers free of this file, carried from the last analysis (a fresh one carries none: it is the
        # reference an incremental one must equal)
        carried: CarriedAnswers | None = None
        if self._regions is not None and self._regions.key == key:
            cached = self._regions.current(self.path)
            remote = self._regions.remote
            carried = self._regions.carried

        def run() -> tuple[FileIndex, list[SourceFinding], list[_RegionEntry], dict[str, RemoteEntry]]:
            if workspace is not None:
                if workspace.source(self.path) is not self.src:
                    workspace.set_source(self.path, self.src)
                ix = workspace.index(self.path)
                assert ix is not None
                self._ix = ix
            ix = self.ix
            ix.record(True)
            ix.watched.clear()
            return ix, *_analyse_doc(ix, config=cfg, workspace=workspace, book=book, cached=cached, remote=remote,
                                     carried=carried)

        ix, findings, entries, found = _settled(run)
        touched = ix.touched + ix.touched_classes()
        ix.record(False)  # the file may be another document's import next
        watched = set(ix.watched)
        for c in entries:  # a re-used entry consulted what this run did not record
            touched.extend(c.touched)
            watched |= c.watched
        for r in found.values():
            r_touched, r_watched = r.consulted()
            touched.extend(r_touched)
            watched |= r_watched
        self._cached = _Cached(key, findings, _merged(touched), frozenset(watched))
        self._regions = RegionCache(key, {en.ident: en for en in entries}, remote=found,
                                    carried=carried if carried is not None else CarriedAnswers())
        self.last_reused_regions = sum(1 for en in entries if cached is not None and cached.get(en.ident) is en)
        self._facts = facts
        return list(findings)


_WORD = re.compile(r"\w+")
_SELF_ATTR = re.compile(r"\bself\s*\.\s*(\w+)")
# what may make a statement one of the writes that FileIndex.attr_deps stand for (callsites.self_writes, the
# first `self.x = v`): a plain or annotated `=` (not `==`, `<=`, `*=`, `:=`), or an append / extend / add_module
_MAY_WRITE = re.compile(r"(?<![=!<>+\-*/%&|^@:])=(?!=)|\.\s*(?:append|extend|add_module)\b")
# what may make a statement bind a local name (FileIndex.lookup's `=name` deps): any assignment, augmented or not,
# a loop or comprehension, `as`, an import, a declaration, a definition, `del`, a walrus
_MAY_BIND = re.compile(r"(?<![=!<>])=(?!=)|\b(?:for|as|import|global|nonlocal|def|class|del|lambda|case)\b")


def _statements_edited(src: ParsedSource, s: int, t: int) -> tuple[frozenset[str], int, int]:
    """The statements of `src` holding bytes [s, t) and the nearest token on their line before and after (what
    typed text joins): what they may write, and the byte span they cover. Taken before and after an edit, the span
    bounds what the edit changed (kept.Pending.span) and the words what it may write (kept.Pending.written):
    attributes `self.x` (as `x`) and local names (as `=x`). An edit changes the writes of `self.x` in a class, or the
    bindings of `x` in a function, only through a statement that may write it before or after the edit: typing in
    `if self.n > k:` writes neither, `self.n *= 2` no attribute. Over-approximated from the text: a word too many
    costs a re-walk, never a stale finding."""
    data = src.data
    probes: list[tuple[int, int]] = []
    if data[s:t].strip():
        probes.append((s, t))
    a = s
    while a > 0 and data[a - 1] in b" \t":
        a -= 1
    if a > 0 and data[a - 1] not in b"\r\n":
        probes.append((a - 1, a))
    b = t
    while b < len(data) and data[b] in b" \t":
        b += 1
    if b < len(data) and data[b] not in b"\r\n":
        probes.append((b, b + 1))
    out: set[str] = set()
    lo, hi = s, t
    for x, y in probes:
        node = src.root.descendant_for_byte_range(x, y)
        if node is not None:
            st = src.nav.statement_of(node)
            lo, hi = min(lo, st.start_byte), max(hi, st.end_byte)
            text = data[st.start_byte:st.end_byte].decode("utf-8", "surrogatepass")
            if _MAY_WRITE.search(text):
                out.update(_SELF_ATTR.findall(text))
            if _MAY_BIND.search(text):
                out.update("=" + w for w in _WORD.findall(text))
    return frozenset(out), lo, hi


def _is_word_byte(c: int) -> bool:
    return c >= 0x80 or c == 0x5F or 0x30 <= c <= 0x39 or 0x41 <= c <= 0x5A or 0x61 <= c <= 0x7A


def _function_holding(src: ParsedSource, node: Node | None, s: int, t: int, tail: int | None) -> Node | None:
    """The innermost function above `node` when edit [s, t) lies in its body (or in the comments between the
    header's colon and the body); with `tail`, when the body ends at byte `tail` and the edit only changes blanks
    after it on that line (see _trailing_blank)."""
    while node is not None:
        if node.type == "function_definition":
            colon = next((c for c in node.children if c.type == ":"), None)
            body = node.child_by_field_name("body")
            if colon is not None and body is not None and colon.end_byte <= s and t <= body.end_byte:
                return node
            if tail is not None and body is not None and body.end_byte == tail and _trailing_blank(
                    src.data, tail, s, t):
                return node
            return None
        node = node.parent
    return None


def _trailing_blank(data: bytes, end: int, s: int, t: int) -> bool:
    """Bytes [s, t) lie in the blanks after byte `end`, on the same line."""
    if s < end:
        return False
    line_end = data.find(b"\n", end)
    line_end = len(data) if line_end < 0 else line_end
    return t <= line_end and not data[end:t].strip(b" \t")


def _same_function(fn: Node, new: ParsedSource, e: TextEdit, delta: int) -> bool:
    """`fn` (of the tree before edit `e`) has no syntax error, and the new tree has it at the same place with no
    syntax error either: the edit changed nothing outside its body (error recovery can regroup code otherwise)."""
    if fn.has_error:
        return False
    s = new.byte_offset(e.start_line, e.start_col)
    # blanks typed or deleted after the body's last token (_trailing_blank): the function is found from its start
    tail = s >= fn.end_byte and not e.new_text.strip(" \t")
    a, b = (fn.start_byte, fn.start_byte) if tail else (s, s + len(e.new_text.encode("utf-8", "surrogatepass")))
    node: Node | None = new.root.descendant_for_byte_range(a, b)
    while node is not None and node.type != "function_definition":
        node = node.parent
    if node is None or node.has_error or node.start_byte != fn.start_byte:
        return False
    return node.end_byte == fn.end_byte + delta or (tail and node.end_byte == fn.end_byte)


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
