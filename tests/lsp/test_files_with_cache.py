"""`_frozen.files_with` keeps each file's regex answer by text: an edited file is searched again, others not."""

from __future__ import annotations

import pytest

from denpex.source.resolve.callgraph import Resolver
from denpex.source.resolve.workspace import Workspace
from denpex.source.rules import _frozen


def _resolver(ws: Workspace) -> Resolver:
    return Resolver(ws.lookup_module, ws.imported_elsewhere, ws.importers)


def test_an_edit_changes_the_answer_for_that_file_only() -> None:
    ws = Workspace()
    ws.add_text("/w/a.py", "g.replay()\n")
    ws.add_text("/w/b.py", "x = 1\n")
    rx = r"\.replay\("
    assert [ix.path for ix in _frozen.files_with(_resolver(ws), rx)] == ["/w/a.py"]
    ws.add_file("/w/b.py", "x = 1\ng.replay()\n")
    assert sorted(ix.path for ix in _frozen.files_with(_resolver(ws), rx)) == ["/w/a.py", "/w/b.py"]
    ws.add_file("/w/a.py", "pass\n")
    assert [ix.path for ix in _frozen.files_with(_resolver(ws), rx)] == ["/w/b.py"]
    ws.remove_file("/w/b.py")
    assert _frozen.files_with(_resolver(ws), rx) == []


def test_an_unchanged_text_is_not_searched_again(monkeypatch: pytest.MonkeyPatch) -> None:
    ws = Workspace()
    for i in range(5):
        ws.add_text(f"/w/m{i}.py", f"v{i} = {i}\n")
    rx = r"unique_pattern_for_this_test\("
    assert _frozen.files_with(_resolver(ws), rx) == []
    searched: list[str] = []
    real = _frozen.re.compile

    class Spy:
        def __init__(self, pattern: str) -> None:
            self.rx = real(pattern)

        def search(self, text: str) -> object:
            searched.append(text)
            return self.rx.search(text)

    ws.add_file("/w/m2.py", "unique_pattern_for_this_test()\n")
    monkeypatch.setattr(_frozen.re, "compile", Spy)
    found = _frozen.files_with(_resolver(ws), rx)
    monkeypatch.undo()
    assert [ix.path for ix in found] == ["/w/m2.py"]
    assert searched == ["unique_pattern_for_this_test()\n"]
