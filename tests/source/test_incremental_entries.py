"""A keystroke in a file that another file's capture reaches re-walks only the capture's entries into the edited
function (engine/units.py), and the findings always equal a fresh analysis."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from denpex.source import TextEdit, Workspace
from denpex.source.engine import walker
from denpex.source.engine.analyse import Document, analyse_source

LIB = '''import torch


def scale(t):
    m = t.abs()
    return m * 2


def shift(t):
    k = t + 1
    return k


def both(t):
    return shift(t)
'''

TRAIN = '''import torch

from lib import scale, shift


def prepare(x):
    a = x * 3
    b = a - 1
    return b


def run():
    x = torch.randn(8, device="cuda")
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = prepare(x)
        z = scale(y)
        w = shift(z)
    g.replay()
'''


@pytest.fixture
def walked(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The functions whose bodies the walker walks (None: a region's own statements)."""
    names: list[str] = []
    real = walker.CaptureWalker._walk

    def spy(self: walker.CaptureWalker, roots: list[Any], frame: Any) -> None:
        names.append(frame.func.name if frame.func is not None else "<region>")
        real(self, roots, frame)

    monkeypatch.setattr(walker.CaptureWalker, "_walk", spy)
    yield names


def _ws(files: dict[str, str]) -> Workspace:
    ws = Workspace()
    for path, text in files.items():
        ws.add_file(path, text)
    return ws


def _workspace() -> Workspace:
    return _ws({"lib.py": LIB, "train.py": TRAIN})


def _edit(ws: Workspace, row_text: str, new: str, path: str = "lib.py") -> str:
    """Type `new` in `path`'s first line starting with `row_text` (less its `|`), at the `|` (else at the line's end)."""
    lines = (ws.text(path) or "").split("\n")
    row = next(i for i, line in enumerate(lines) if line.startswith(row_text.replace("|", "")))
    col = row_text.index("|") if "|" in row_text else len(lines[row])
    ws.edit_file(path, [TextEdit(row, col, row, col, new)])
    return ws.text(path) or ""


def _fresh(ws: Workspace, text: str, path: str = "lib.py") -> list[object]:
    return [f for f in Document(path, text).analyse(workspace=ws) if f.path == path]


def test_an_edit_inside_one_function_rewalks_only_the_entries_into_it(walked: list[str]) -> None:
    ws = _workspace()
    assert analyse_source(LIB, "lib.py", workspace=ws) == []
    assert {"<region>", "prepare", "scale", "shift"} <= set(walked)
    for new in (" ", "  # note"):
        walked.clear()
        text = _edit(ws, "    m = t.abs()", new)
        found = analyse_source(text, "lib.py", workspace=ws)
        assert walked == ["scale"]  # not the region, prepare() or shift(): their walks are kept
        assert found == _fresh(ws, text)


def test_a_hazard_typed_into_a_reached_function_is_found_and_moves(walked: list[str]) -> None:
    ws = _workspace()
    analyse_source(LIB, "lib.py", workspace=ws)
    walked.clear()
    text = _edit(ws, "    m = t.abs()", "\n    v = m.item()")
    found = analyse_source(text, "lib.py", workspace=ws)
    assert walked == ["scale"]
    assert [f.rule for f in found] == ["capture-item-sync"]
    assert found == _fresh(ws, text)
    walked.clear()
    text = _edit(ws, "    k = t + 1", "\n    print(k)")  # in shift(), below: scale()'s finding is kept, moved
    found = analyse_source(text, "lib.py", workspace=ws)
    assert walked == ["shift"]
    assert found == _fresh(ws, text)
    assert len(found) == 2


def test_an_entry_that_changes_what_the_walk_visits_rewalks_the_region(walked: list[str]) -> None:
    # scale() now calls shift() first: the capture's later call of shift() finds it visited, so keeping the rest
    # of the recorded walk would be wrong; the region is walked again
    ws = _workspace()
    analyse_source(LIB, "lib.py", workspace=ws)
    walked.clear()
    text = _edit(ws, "    m = t.abs()", "\n    m = both(m)")
    found = analyse_source(text, "lib.py", workspace=ws)
    assert "<region>" in walked
    assert found == _fresh(ws, text)


def test_edits_in_a_row_equal_fresh_analyses() -> None:
    ws = _workspace()
    analyse_source(LIB, "lib.py", workspace=ws)
    steps = [("    m = t.abs()", "\n    q = float(m.sum())"), ("    k = t + 1", " "), ("    return m * 2", " "),
             ("    k = t + 1", "\n    k.cpu()"), ("    return k", "  # done")]
    for row_text, new in steps:
        text = _edit(ws, row_text, new)
        assert analyse_source(text, "lib.py", workspace=ws) == _fresh(ws, text)


HOLDER = '''import torch


def good(t):
    return t * 2


def bad(t):
    return t.item()


class Holder:
    def __init__(self):
        self.fn = bad
        self.buf = torch.zeros(4, device="cuda")

    def run(self, x):
        return self.fn(x) + self.buf

    def resize(self, n):
        self.f = good
        self.size = n
        self.count = 0
'''

CAPTURE = '''import torch

from holder import Holder


def main():
    h = Holder()
    x = torch.randn(4, device="cuda")
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = h.run(x)
    g.replay()
'''


def _holder() -> Workspace:
    return _ws({"holder.py": HOLDER, "capture.py": CAPTURE})


def test_an_edit_in_a_method_that_spells_none_of_the_attributes_read_walks_nothing(walked: list[str]) -> None:
    # run() reads self.fn and self.buf: what the class's methods assign them was consulted, not resize()
    ws = _holder()
    first = analyse_source(HOLDER, "holder.py", workspace=ws)
    assert [f.rule for f in first] == ["capture-item-sync"]
    walked.clear()
    text = _edit(ws, "        self.size = n", " + 1", "holder.py")
    found = analyse_source(text, "holder.py", workspace=ws)
    assert walked == []
    assert found == _fresh(ws, text, "holder.py")


def test_typing_the_last_letter_of_an_attribute_read_is_seen(walked: list[str]) -> None:
    # `self.f = good` becomes `self.fn = good` by typing one letter: the typed text is only "n", but the word it
    # completes is one that run() read, so run()'s entry is walked again
    ws = _holder()
    analyse_source(HOLDER, "holder.py", workspace=ws)
    walked.clear()
    text = _edit(ws, "        self.f| = good", "n", "holder.py")
    found = analyse_source(text, "holder.py", workspace=ws)
    assert "run" in walked and "<region>" not in walked
    assert found == _fresh(ws, text, "holder.py")


BOX = '''import torch


class Box:
    def __init__(self):
        self.n = 4

    def grow(self):
        items = [1.0]
        self.n *= 2
        self.vals = items

    def peek(self):
        return self.vals.item()
'''

PEEK = '''import torch

from box import Box


def main():
    b = Box()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = b.peek()
    g.replay()
'''


def _box() -> Workspace:
    return _ws({"box.py": BOX, "peek.py": PEEK})


def test_an_edit_of_a_statement_the_walk_did_not_read_keeps_the_entry(walked: list[str]) -> None:
    # peek() read the value grow() assigns to self.vals (the statements `self.vals = items` and `items = [1.0]`),
    # not grow()'s other statements: typing in `self.n *= 2` writes no attribute read and binds no name read
    ws = _box()
    assert analyse_source(BOX, "box.py", workspace=ws) == []
    for new in (" ", " + 1"):
        walked.clear()
        text = _edit(ws, "        self.n *= 2", new, "box.py")
        found = analyse_source(text, "box.py", workspace=ws)
        assert walked == []
        assert found == _fresh(ws, text, "box.py")


def test_a_new_binding_of_a_local_the_walk_read_rewalks_the_entry(walked: list[str]) -> None:
    # `items` now names a tensor where `self.vals = items` reads it: peek()'s `.item()` becomes a sync
    ws = _box()
    analyse_source(BOX, "box.py", workspace=ws)
    walked.clear()
    text = _edit(ws, "        items = [1.0]", '\n        items = torch.ones(4, device="cuda")', "box.py")
    found = analyse_source(text, "box.py", workspace=ws)
    assert walked == ["peek"]
    assert [(f.rule, f.start_line) for f in found] == [("capture-item-sync", 14)]
    assert found == _fresh(ws, text, "box.py")


def test_an_edit_inside_the_statement_read_rewalks_the_entry(walked: list[str]) -> None:
    ws = _box()
    analyse_source(BOX, "box.py", workspace=ws)
    lines = BOX.split("\n")
    row = next(i for i, line in enumerate(lines) if line == "        items = [1.0]")
    walked.clear()
    ws.edit_file("box.py", [TextEdit(row, 16, row, 21, 'torch.ones(4, device="cuda")')])
    text = ws.text("box.py") or ""
    found = analyse_source(text, "box.py", workspace=ws)
    assert walked == ["peek"]
    assert [f.rule for f in found] == ["capture-item-sync"]
    assert found == _fresh(ws, text, "box.py")


CHAIN = '''import torch


def outer(t):
    k = t * 2
    return inner(k, t)


def inner(a, b):
    c = a + b
    return c
'''

RUNS = '''import torch

from chain import outer


x = torch.randn(8, device="cuda")
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = outer(x)
g.replay()
'''


def _chain() -> Workspace:
    return _ws({"chain.py": CHAIN, "runs.py": RUNS})


def test_an_edit_in_a_function_called_from_the_same_file_rewalks_that_call_alone(walked: list[str]) -> None:
    # outer() is entered from runs.py and calls inner() with its own local `k`: an edit in inner() walks inner()
    # again from outer()'s call, found again in the edited tree, not outer() and what else it calls
    ws = _chain()
    assert analyse_source(CHAIN, "chain.py", workspace=ws) == []
    walked.clear()
    text = _edit(ws, "    c = a + b", "\n    v = a.item()", "chain.py")
    found = analyse_source(text, "chain.py", workspace=ws)
    assert walked == ["inner"]
    assert [(f.rule, f.start_line) for f in found] == [("capture-item-sync", 10)]
    assert found == _fresh(ws, text, "chain.py")
    walked.clear()
    text = _edit(ws, "    k = t * 2", "\n    pass", "chain.py")  # above inner(): its call and its finding move
    found = analyse_source(text, "chain.py", workspace=ws)
    assert walked == ["outer", "inner"]
    assert [(f.rule, f.start_line) for f in found] == [("capture-item-sync", 11)]
    assert found == _fresh(ws, text, "chain.py")
    walked.clear()
    text = _edit(ws, "    v = a.item()", "  # still", "chain.py")
    found = analyse_source(text, "chain.py", workspace=ws)
    assert walked == ["inner"]
    assert found == _fresh(ws, text, "chain.py")


def test_an_edit_of_the_calling_line_walks_the_caller_again(walked: list[str]) -> None:
    # the call inner() was entered from is itself edited: inner()'s entry is walked again through outer()
    ws = _ws({"chain.py": CHAIN.replace("    return inner(k, t)", "    inner(k, t)\n    return k"), "runs.py": RUNS})
    analyse_source(ws.text("chain.py") or "", "chain.py", workspace=ws)
    walked.clear()
    text = _edit(ws, "    inner(k, t)", " ", "chain.py")
    found = analyse_source(text, "chain.py", workspace=ws)
    assert walked == ["outer", "inner"]
    assert found == _fresh(ws, text, "chain.py")


def test_what_an_analysis_read_is_kept_for_the_analysed_file_alone() -> None:
    # the reads of every file an analysis passed through used to be kept, and grew with each keystroke for as long
    # as the server ran; only the analysed file's are used, and only while it is analysed
    ws = _workspace()
    analyse_source(LIB, "lib.py", workspace=ws)
    for new in (" ", "  # note"):
        text = _edit(ws, "    m = t.abs()", new)
        analyse_source(text, "lib.py", workspace=ws)
    for path in ("train.py", "lib.py"):
        ix = ws.index(path)
        assert ix is not None
        assert (list(ix.touched), list(ix.attr_deps)) == ([], [])
    assert analyse_source(ws.text("lib.py") or "", "lib.py", workspace=ws) == _fresh(ws, ws.text("lib.py") or "")
