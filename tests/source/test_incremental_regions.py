"""Document re-analysis keeps the results of the capture regions an edit cannot change (the others re-run), and
always equals a fresh analysis of the same text."""

from __future__ import annotations

from denpex.source import Document, TextEdit
from denpex.source.syntax.parse import parse

TWO = '''import torch


def first():
    g = torch.cuda.CUDAGraph()
    x = torch.randn(4, device="cuda")
    with torch.cuda.graph(g):
        y = x * 2
        v = y.item()
    g.replay()


def second():
    h = torch.cuda.CUDAGraph()
    a = torch.randn(4, device="cuda")
    with torch.cuda.graph(h):
        b = a + 1
        print(b)
    h.replay()
'''


def _fresh(doc: Document) -> list[object]:
    return list(Document(doc.path, doc.text).analyse())


def test_edit_inside_one_capture_keeps_the_other_region() -> None:
    doc = Document("two.py", TWO)
    assert {f.start_line for f in doc.analyse()} >= {8, 17}
    row = TWO.split("\n").index("        y = x * 2")
    for text in ("  # typing", " + 1", "x"):
        col = len(doc.text.split("\n")[row])
        doc.apply_edits([TextEdit(row, col, row, col, text)])
        assert doc.analyse() == _fresh(doc)
        assert not doc.last_was_incremental
        assert doc.last_reused_regions == 1  # second()'s capture is not re-run


def test_edit_before_a_kept_region_moves_its_findings() -> None:
    doc = Document("two.py", TWO)
    doc.analyse()
    row = TWO.split("\n").index("        y = x * 2")
    doc.apply_edits([TextEdit(row, 0, row, 0, "        z = 1\n        w = 2\n")])
    found = doc.analyse()
    assert doc.last_reused_regions == 1
    assert found == _fresh(doc)
    assert any(f.start_line == 19 for f in found)  # print(b), two lines lower


def test_file_wide_facts_invalidate_kept_results() -> None:
    # `pin_memory=True` anywhere in the file changes a capture's findings: removing it inside another function
    # must not keep the old result
    text = TWO + '''

def consume(dataset):
    import threading
    for batch in DataLoader(dataset, num_workers=2, pin_memory=True):
        pass
'''
    doc = Document("three.py", text)
    doc.analyse()
    row = text.split("\n").index("    for batch in DataLoader(dataset, num_workers=2, pin_memory=True):")
    line = text.split("\n")[row]
    col = line.index("pin_memory=True")
    doc.apply_edits([TextEdit(row, col, row, col + len("pin_memory=True"), "z")])
    assert doc.analyse() == _fresh(doc)


def test_occurrences_follow_edits() -> None:
    src = parse("def f():\n    return 1\n")
    assert src.occurrences(b"def", word_end=True) == [0]
    src2 = src.edit(0, 0, 0, 0, "def g(): pass\n")
    assert src2.occurrences(b"def", word_end=True) == [0, 14]
    src3 = src2.edit(1, 0, 1, 3, "xdefy")
    assert src3.occurrences(b"def", word_end=True) == [0]
    assert src3.occurrences(b"def") == [0, 15]


FACTORY = """import torch


class Monitor:
    def update(self, t):
        return t.cpu()


class Quiet:
    def update(self, t):
        return t * 2


def make_helper():
    return Monitor()


class Runner:
    def __init__(self):
        self.helper = make_helper()

    def first(self, x):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = self.helper.update(x)
        return y

    def second(self, x):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            z = self.helper.update(x)
        return z
"""


def test_a_region_reading_another_regions_answer_still_records_what_it_read() -> None:
    """Both captures resolve `self.helper` through the factory's return (values.py). Answers are not carried from
    one region to the next, so the second records the factory as read too: editing the factory to return the
    harmless class must drop the finding, as a fresh analysis does (a carried answer kept the second region's
    stale finding)."""
    doc = Document("runner.py", FACTORY)
    assert [(f.start_line, f.rule) for f in doc.analyse()] == [(5, "capture-host-copy")]
    row = FACTORY.split("\n").index("    return Monitor()")
    doc.apply_edits([TextEdit(row, 11, row, 18, "Quiet")])
    fresh = Document("runner.py", doc.text).analyse()
    assert fresh == []
    assert doc.analyse() == fresh
