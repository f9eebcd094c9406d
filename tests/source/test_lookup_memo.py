"""FileIndex.lookup remembers its answers with what they read (issue 20: the same names are looked up at the same
nodes many times per keystroke). A remembered answer must record the same reads as a new one, or an edit that
changes what it read would keep a stale finding."""

from __future__ import annotations

from pathlib import Path

from tree_sitter import Node

from denpex.source.resolve import index as index_module
from denpex.source.resolve.index import FileIndex
from denpex.source.syntax.parse import parse, walk

SMALL = """import torch

LIMIT = 3


def outer(x, n):
    y = x * 2
    for i in range(n):
        y = y + i

    def inner(z):
        return z + y + LIMIT

    return inner(x)
"""


def _identifiers(ix: FileIndex) -> list[Node]:
    return [n for n in walk(ix.src.root) if n.type == "identifier"]


def _reads_of(ix: FileIndex, name: str, at: Node) -> tuple[object, list[object], list[object]]:
    t0, a0 = len(ix.touched), len(ix.attr_deps)
    found = ix.lookup(name, at)
    return found, list(ix.touched[t0:]), list(ix.attr_deps[a0:])


def test_the_reads_of_a_parameter_and_of_a_local_are_recorded_narrowly() -> None:
    ix = FileIndex("m.py", parse(SMALL))
    ix.record(True)
    data = ix.src.data
    z = next(n for n in _identifiers(ix) if ix.text(n) == "z" and n.parent is not None
             and n.parent.type == "binary_operator")
    found, touched, deps = _reads_of(ix, "z", z)
    assert found[0] is None and found[2] is True  # a parameter of inner
    ret = data.index(b"return z")
    params = data.index(b"(z)")
    assert touched == [(ret, data.index(b"\n", ret)), (params, params + 3)]
    inner = data.index(b"def inner")
    assert [d[2] for d in deps] == ["=z"] and deps[0][0] == inner
    # `y` is passed through inner's scope to outer's, where its last assignment before the def is found
    y = next(n for n in walk(ix.src.root) if n.type == "identifier" and ix.text(n) == "y"
             and n.start_byte > inner)
    found, touched, deps = _reads_of(ix, "y", y)
    assert found[0] is not None and ix.text(found[0].stmt) == "y = y + i"
    assert [d[2] for d in deps] == ["=y", "=y"]


def test_a_remembered_answer_records_what_a_new_one_does() -> None:
    texts = [SMALL, Path(index_module.__file__).read_text(), Path(__file__).read_text()]
    for text in texts:
        fresh_reads = []
        remembered_reads = []
        ix = FileIndex("m.py", parse(text))
        ix.record(True)
        nodes = _identifiers(ix)[:3000]
        for n in nodes:
            name = ix.text(n)
            new = FileIndex("m.py", ix.src)  # nothing remembered yet
            new.record(True)
            fresh_reads.append(_reads_of(new, name, n))
            ix.lookup(name, n)  # remembered now
            ix.touched.append((-1, -1))  # (a read again at once is recorded once: _append_once)
            ix.attr_deps.append((-1, -1, ""))
            remembered_reads.append(_reads_of(ix, name, n))
        assert len(ix._lookups) > 0  # the second lookups were answered from memory
        for (f0, t0, a0), (f1, t1, a1) in zip(fresh_reads, remembered_reads, strict=True):
            assert (f0[0] is None) == (f1[0] is None) and f0[2] == f1[2]
            if f0[0] is not None and f1[0] is not None:
                assert f0[0].stmt == f1[0].stmt
            assert (t0, a0) == (t1, a1)


def test_nothing_is_recorded_while_reads_are_off_and_answers_stay_bounded() -> None:
    ix = FileIndex("m.py", parse(SMALL))
    for n in _identifiers(ix):
        ix.lookup(ix.text(n), n)
    assert list(ix.touched) == [] and list(ix.attr_deps) == []
    before = index_module._LOOKUPS.MAX
    index_module._LOOKUPS.MAX = 5
    try:
        other = FileIndex("o.py", parse(SMALL))
        for n in _identifiers(other):
            other.lookup(other.text(n), n)
        assert len(other._lookups) <= 5 and len(ix._lookups) <= 5
    finally:
        index_module._LOOKUPS.MAX = before
