"""Resolver answers carried across keystrokes (resolve/values.py CarriedAnswers, issue 20): a parameter's values from
its callers in other files, when asking them read nothing of the edited file, are not asked again on the next
keystroke. Each check compares the language server's incremental analysis with a fresh one of the same text."""

from __future__ import annotations

from pathlib import Path

import pytest

from denpex.lsp.analysis import Analyzer
from denpex.source.config import ScanConfig
from denpex.source.engine.analyse import Document
from denpex.source.model import SourceFinding, TextEdit
from denpex.source.resolve import values as values_mod
from denpex.source.resolve.value_types import Value

MAIN = '''import torch
from block import Block


def build(c):
    return Block(c)


def main():
    blk = build(torch.ones(1, device="cuda"))
    x = torch.zeros(4, device="cuda")
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = blk.forward(x)
    g.replay()
'''
BLOCK = '''from layer import offset


class Block:
    def __init__(self, cfg):
        self.cfg = cfg

    def forward(self, x):
        return x * offset(self.cfg)
'''
# the edited file: `offset` is reached from the capture in main.py; `cfg` is a tensor only through Block's and build's
# callers, two files away
LAYER = '''import main


def offset(cfg):
    if cfg > 0:
        return 1
    return 0


def other():
    return 2
'''


class _Session:
    def __init__(self, root: Path) -> None:
        for name, text in (("main.py", MAIN), ("block.py", BLOCK), ("layer.py", LAYER)):
            (root / name).write_text(text, encoding="utf-8")
        self.an = Analyzer(lambda _m: None)
        self.an.set_folders([str(root)])
        for p in self.an.workspace_files():
            self.an.index_file(p)
        self.path = str(root / "layer.py")
        self.cfg = ScanConfig()
        self.an.update_file(self.path, LAYER)
        self.first = self.an.analyse(LAYER, self.path, self.cfg)

    def type(self, e: TextEdit) -> tuple[list[SourceFinding], list[SourceFinding]]:
        """The incremental findings after edit `e`, and a fresh analysis's of the same text."""
        self.an.edit_file(self.path, [e])
        ws = self.an._workspace
        assert ws is not None
        text = ws.text(self.path) or ""
        inc = self.an.analyse(text, self.path, self.cfg)
        fresh = [f for f in Document(self.path, text).analyse(self.cfg, ws) if f.path == self.path]
        return inc, fresh


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How often a carried answer was used, and how often one was computed and kept."""
    seen = {"used": 0, "kept": 0}
    orig = values_mod.Values._carried_from_callers

    def counting(self: values_mod.Values, key: tuple[int, int, str], *a: object) -> list[Value]:
        assert self.carried is not None
        before = key in self.carried.answers
        out = orig(self, key, *a)  # type: ignore[arg-type]
        if before:
            seen["used"] += 1
        elif key in self.carried.answers:
            seen["kept"] += 1
        return out
    monkeypatch.setattr(values_mod.Values, "_carried_from_callers", counting)
    return seen


def test_a_keystroke_uses_the_answer_the_last_one_carried(tmp_path: Path, counted: dict[str, int]) -> None:
    s = _Session(tmp_path)
    assert [f.rule for f in s.first] == ["capture-implicit-bool"]  # `if cfg > 0` with a tensor cfg
    assert counted == {"used": 0, "kept": 0}  # a fresh analysis carries nothing
    inc, fresh = s.type(TextEdit(4, 15, 4, 15, " "))
    assert inc == fresh
    assert [f.rule for f in inc] == ["capture-implicit-bool"]
    assert counted["kept"] >= 1
    inc, fresh = s.type(TextEdit(4, 15, 4, 16, ""))
    assert inc == fresh
    assert [f.rule for f in inc] == ["capture-implicit-bool"]
    assert counted["used"] >= 1


def test_a_call_site_typed_into_the_edited_file_drops_the_answer(tmp_path: Path, counted: dict[str, int]) -> None:
    """`main.build(2.0)` typed into `other()`: build's `c` is no longer only a tensor, so `cfg` is not known to be
    one. The edit is local (inside a function no capture reaches), yet it changes who calls `build`: the edited file
    watches the words call sites were found by, and the carried answer found through them is dropped."""
    s = _Session(tmp_path)
    s.type(TextEdit(4, 15, 4, 15, " "))
    assert counted["kept"] >= 1
    inc, fresh = s.type(TextEdit(10, 11, 10, 11, "main.build(2.0) + "))
    assert inc == fresh
    assert not any(f.rule == "capture-implicit-bool" and f.severity == "error" for f in fresh)
    inc, fresh = s.type(TextEdit(10, 11, 10, 29, ""))  # and deleted again: a tensor once more
    assert inc == fresh
    assert [f.rule for f in inc] == ["capture-implicit-bool"]
