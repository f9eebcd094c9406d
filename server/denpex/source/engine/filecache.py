"""What the analysis remembers of each workspace file between analyses (issue 20): the capture openers a file
defines for others and whether an importer's text can capture at all. Each answer is kept while the file's text
object is the same (an edit or a reload replaces it), so a keystroke reads again only the file it changed."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from weakref import WeakKeyDictionary

from denpex.source.capture.entrypoints import may_have_entries
from denpex.source.capture.regions import contextmanager_wrappers
from denpex.source.config import ScanConfig
from denpex.source.resolve.index import FileIndex
from denpex.source.resolve.workspace import Workspace
from denpex.source.syntax.chunks import SEED_WORDS

# the capture words of lazy parsing, but `compile`: alone it is too common (re.compile) for a file prefilter,
# see may_open
_OPENER_WORDS = tuple(w.decode() for w in SEED_WORDS if w != b"compile")


def may_open(text: str, extra: Iterable[str]) -> bool:
    """Cheap text prefilter: can this file open a capture at all?"""
    if any(w in text for w in _OPENER_WORDS) or any(w in text for w in extra):
        return True
    # a torch.compile whose mode comes from a variable or **kwargs (reported at a lower severity)
    return "compile" in text and "torch" in text and ("mode" in text or "**" in text)


def may_wrap(text: str) -> bool:
    """Text that may define a capture opener for other files (regions.contextmanager_wrappers)."""
    return ("graph(" in text and ("contextmanager" in text or "return" in text)) or (
        "capture_begin(" in text and "contextmanager" in text)


# per file: the text it was read from, and the capture openers it defines for other files (None: it cannot
# define one, no parse needed) with the index epoch they were read at. Valid while the file's text object is the
# same (an edit or a reload replaces it) and, for a parsed file, its tree has not grown (lazy parsing).
_WRAPS: dict[str, tuple[str, int, frozenset[str] | None]] = {}


def file_wrappers(ws: Workspace, p: str) -> frozenset[str]:
    text = ws.text(p) or ""
    hit = _WRAPS.get(p)
    if hit is not None and hit[0] is text and hit[2] is None:
        return frozenset()
    if (hit is None or hit[0] is not text) and not may_wrap(text):
        _WRAPS[p] = (text, -1, None)
        return frozenset()
    other = ws.index(p)
    if other is None:
        return frozenset()
    if hit is not None and hit[0] is text and hit[1] == other.epoch and hit[2] is not None:
        return hit[2]
    names = frozenset(contextmanager_wrappers(other))
    if len(_WRAPS) >= 50_000:
        _WRAPS.clear()
    _WRAPS[p] = (text, other.epoch, names)
    return names


@dataclass
class _Known:
    """Per workspace: the files whose text may define a capture opener (`may_wrap`), as of `generation`, and the
    importers of a file that may capture, per file, with what they were found for."""

    generation: int = -1
    may_wrap: set[str] = field(default_factory=set)
    importers: dict[str, tuple[tuple[object, ...], list[str]]] = field(default_factory=dict)


_KNOWN: WeakKeyDictionary[Workspace, _Known] = WeakKeyDictionary()


def _known(ws: Workspace) -> _Known:
    """`ws`'s `_Known`, brought up to date from the files changed since (all files after a removal)."""
    k = _KNOWN.get(ws)
    if k is None:
        k = _KNOWN[ws] = _Known()
    if k.generation == ws.generation:
        return k
    changed = ws.changes_since(k.generation) if k.generation >= 0 else None
    if changed is None:
        k.may_wrap = {p for p in ws.paths() if may_wrap(ws.text(p) or "")}
    else:
        for p in dict.fromkeys(changed):
            if may_wrap(ws.text(p) or ""):
                k.may_wrap.add(p)
            else:
                k.may_wrap.discard(p)
    k.generation = ws.generation
    return k


def wrapper_names(config: ScanConfig, ws: Workspace | None, ix: FileIndex) -> set[str]:
    """The configured capture wrappers and the capture openers other workspace files define (each file read
    again only when it changed, see `_WRAPS`; only the files whose text may define one are asked: the pass over
    every file was per keystroke)."""
    names = {w.rsplit(".", 1)[-1] for w in config.capture_wrappers} | set(config.capture_wrappers)
    if ws is not None:
        for p in sorted(_known(ws).may_wrap):
            if p != ix.path:
                names |= file_wrappers(ws, p)
    return names


def capturing_importers(ws: Workspace, path: str, wrappers: frozenset[str], entries: frozenset[str]) -> list[str]:
    """The files importing `path`, directly or through others, whose text may capture (`may_capture`), in the
    workspace's order; kept while no other file changes (then neither their texts nor the closure can)."""
    known = _known(ws)
    key = (ws.others_generation(path), wrappers, entries)
    hit = known.importers.get(path)
    if hit is not None and hit[0] == key:
        return hit[1]
    closure = ws.importers_closure(path)
    found = [p for p in ws.paths()
             if p != path and p in closure and may_capture(p, ws.text(p) or "", wrappers, entries)]
    known.importers[path] = (key, found)
    return found


# per file: the text, wrappers and entry points `may_capture` answered for, and its answer
_PREFILTER: dict[str, tuple[str, frozenset[str], frozenset[str], bool]] = {}


def may_capture(path: str, text: str, wrappers: frozenset[str], entries: frozenset[str]) -> bool:
    """`may_open` or `may_have_entries` of an importer's text, remembered while its text object is the same (the
    importers of a file deep in the import graph are hundreds, searched on every keystroke otherwise)."""
    hit = _PREFILTER.get(path)
    if hit is not None and hit[0] is text and hit[1] == wrappers and hit[2] == entries:
        return hit[3]
    found = may_open(text, wrappers) or may_have_entries(text, entries)
    if len(_PREFILTER) >= 50_000:
        _PREFILTER.clear()
    _PREFILTER[path] = (text, wrappers, entries, found)
    return found
