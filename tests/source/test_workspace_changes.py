"""What the workspace answers per keystroke without a pass over every file (issue 20): the files changed since a
generation, the last change to the other files, whether a file spells a word, the capture openers other files
define and the importers that may capture. Each is checked against the answer computed from scratch, over a
random series of adds, edits and removals."""

from __future__ import annotations

import random
import re

from denpex.lsp.analysis import IndexedWorkspace
from denpex.source.config import ScanConfig
from denpex.source.engine import filecache
from denpex.source.resolve.index import FileIndex
from denpex.source.resolve.workspace import Workspace

_OPENER = "import contextlib\nimport torch\n\n\n@contextlib.contextmanager\ndef cap_{n}(g):\n    with torch.cuda.graph(g):\n        yield\n"
_CAPTURES = "import torch\nfrom lib{k} import f\n\ng = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    f()\n"
_PLAIN = "from lib{k} import f\n\n\ndef h{n}(x):\n    return f(x) + wörd_{n}\n"


def _random_text(rng: random.Random, n: int) -> str:
    k = rng.randrange(3)
    return rng.choice([_OPENER, _CAPTURES, _PLAIN]).format(n=n, k=k)


def _series(ws: Workspace, rng: random.Random, steps: int) -> list[tuple[int, set[str]]]:
    """Random changes; after each, the generation and the files changed at it."""
    out: list[tuple[int, set[str]]] = []
    for i in range(steps):
        paths = ws.paths()
        roll = rng.random()
        if roll < 0.1 and paths:
            p = rng.choice(paths)
            ws.remove_file(p)
            out.append((ws.generation, {""}))
            continue
        p = rng.choice(paths) if paths and roll < 0.6 else f"lib{rng.randrange(3)}.py" if roll < 0.7 else f"m{i}.py"
        before = ws.generation
        if rng.random() < 0.5:
            ws.add_text(p, _random_text(rng, i))
        else:
            ws.add_file(p, _random_text(rng, i))
        if ws.generation != before:  # the same text again is no change
            out.append((ws.generation, {p}))
    return out


def test_changes_since_and_others_generation_equal_a_full_recount() -> None:
    for seed in range(20):
        rng = random.Random(seed)
        ws = Workspace([])
        changes = _series(ws, rng, 60)
        removals = [g for g, ps in changes if ps == {""}]
        for since in range(0, ws.generation + 1):
            got = ws.changes_since(since)
            if any(g > since for g in removals):
                assert got is None  # a file was removed since: every file is read again
                continue
            want = [next(iter(ps)) for g, ps in changes if g > since]
            assert got == want, (seed, since)
        latest: dict[str, int] = {}
        for g, ps in changes:
            for q in ps - {""}:
                latest[q] = g
        removed = max([0, *removals])
        for p in [*ws.paths(), "never.py"]:
            # the newest change of a file there now that is not `p`, or a removal
            want = max([removed, *(g for q, g in latest.items() if q != p and q in ws)])
            assert ws.others_generation(p) == want, (seed, p)


def test_has_word_answers_as_the_set_of_the_files_words() -> None:
    rng = random.Random(3)
    ws = Workspace([])
    words = ["f", "h1", "wörd_1", "torch", "cuda", "x", "ff", "graph(", "a.b", "", "yield", "lib1", "cap_2"]
    for step in range(80):
        _series(ws, rng, 1)
        for p in ws.paths():
            text = ws.text(p) or ""
            spelled = set(re.findall(r"\w+", text))
            for w in rng.sample(words, 6):  # a few per text, some past the searches before the set is read
                assert ws.has_word(p, w) == (w in spelled), (step, p, w)
                assert ws.has_word(p, w, call=True) == (w in spelled and re.search(
                    rf"(?<!\w){re.escape(w)}\s*\(", text) is not None), (step, p, w)


def test_wrapper_names_and_capturing_importers_follow_every_change() -> None:
    cfg = ScanConfig()
    for seed in range(8):
        rng = random.Random(100 + seed)
        ws = IndexedWorkspace([])
        ws.add_file("lib0.py", "def f():\n    return 1\n")
        for _ in range(30):
            _series(ws, rng, rng.randrange(1, 4))
            for p in ws.paths():
                ix = FileIndex(p, ws.source(p))  # type: ignore[arg-type]
                fresh = {w.rsplit(".", 1)[-1] for w in cfg.capture_wrappers} | set(cfg.capture_wrappers)
                for q in ws.paths():
                    if q != p:
                        fresh |= filecache.file_wrappers(ws, q)
                assert filecache.wrapper_names(cfg, ws, ix) == fresh
                frozen = frozenset(fresh)
                closure = ws.importers_closure(p)
                want = [q for q in ws.paths() if q != p and q in closure
                        and filecache.may_capture(q, ws.text(q) or "", frozen, cfg.capture_entry_points)]
                assert filecache.capturing_importers(ws, p, frozen, cfg.capture_entry_points) == want


def test_importers_remembered_per_generation_equal_a_fresh_workspace() -> None:
    """`importers` answers from what it found earlier in the same generation; after any change its answer is
    the one a workspace built from scratch over the same texts gives."""
    sizes = set()
    for seed in range(10):
        rng = random.Random(200 + seed)
        ws = Workspace([])
        for _ in range(25):
            _series(ws, rng, rng.randrange(1, 3))
            fresh = Workspace([])
            for p in ws.paths():
                fresh.add_text(p, ws.text(p) or "")
            for p in ws.paths():
                for name, also, called in (("f", None, True), ("f", None, False), ("h1", None, False),
                                           ("f", "x", True)):
                    want = [ix.path for ix in fresh.importers(p, name, also, called)]
                    for _twice in range(2):  # the second answer is the remembered one
                        assert [ix.path for ix in ws.importers(p, name, also, called)] == want, (seed, p, name)
                    sizes.add(len(want))
    assert len(sizes) > 2 and max(sizes) > 1  # the answers are not all empty
