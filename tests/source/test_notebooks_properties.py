"""Properties of the .ipynb reader and writer on generated notebooks (any text in the cells, any JSON layout):
rewriting one cell's source changes nothing else in the file, and every file position given for a cell
character points at that character's JSON encoding."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from denpex.notebook import Notebook

line = st.text(st.characters(codec="utf-8", exclude_characters="\n"), max_size=12)
source = st.lists(line, max_size=5).map("\n".join)
layout = st.fixed_dictionaries({"indent": st.sampled_from([None, 1, 2, 4]), "ensure_ascii": st.booleans()})


def build(sources: list[str], as_list: list[bool], kinds: list[str]) -> dict[str, Any]:
    cells = []
    for src, listed, kind in zip(sources, as_list, kinds, strict=True):
        value: Any = src.splitlines(keepends=True) if listed else src
        if listed:  # nbformat's layout: one string per line ("\n"-terminated), as splitlines would not do for \r
            value = [x for x in _split(src)]
        cell: dict[str, Any] = {"cell_type": kind, "metadata": {"k": src[:3]}, "source": value}
        if kind == "code":
            cell |= {"execution_count": None, "outputs": [{"output_type": "stream", "name": "stdout", "text": [src]}]}
        cells.append(cell)
    return {"cells": cells, "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}


def _split(s: str) -> list[str]:
    out, start = [], 0
    for i, ch in enumerate(s):
        if ch == "\n":
            out.append(s[start:i + 1])
            start = i + 1
    if start < len(s):
        out.append(s[start:])
    return out


notebooks = st.integers(1, 4).flatmap(lambda n: st.tuples(
    st.lists(source, min_size=n, max_size=n), st.lists(st.booleans(), min_size=n, max_size=n),
    st.lists(st.sampled_from(["code", "code", "markdown"]), min_size=n, max_size=n), layout))


@settings(max_examples=150, deadline=None)
@given(notebooks, st.data())
def test_rewriting_one_cell_changes_only_its_source(nb_args: Any, data: st.DataObject) -> None:
    sources, as_list, kinds, dump = nb_args
    raw = json.dumps(build(sources, as_list, kinds), **dump) + ("\n" if dump["indent"] else "")
    nb = Notebook(raw)
    code = [n for n, _s in nb.code_cells]
    assert nb.with_sources({}) == raw
    if not code:
        return
    cell = data.draw(st.sampled_from(code))
    new = data.draw(source)
    out = nb.with_sources({cell: new})
    before, after = json.loads(raw), json.loads(out)
    got = after["cells"][cell - 1]["source"]
    assert ("".join(got) if isinstance(got, list) else got) == new
    after["cells"][cell - 1]["source"] = before["cells"][cell - 1]["source"]
    assert after == before  # nothing else changed, outputs and metadata included
    # and byte for byte: the file around the cell's source value is the original text
    sv = nb._spans[cell - 1]
    assert sv is not None
    assert out.startswith(raw[:sv.start]) and out.endswith(raw[sv.end:])
    if isinstance(got, list) and dump["indent"] is not None and len(got) > 1:
        assert "\n" in out[sv.start:len(out) - (len(raw) - sv.end)]  # one string per line, as the file had


@settings(max_examples=150, deadline=None)
@given(notebooks)
def test_file_positions_point_at_the_character(nb_args: Any) -> None:
    sources, as_list, kinds, dump = nb_args
    raw = json.dumps(build(sources, as_list, kinds), **dump)
    nb = Notebook(raw)
    lines = raw.split("\n")
    for n, src in nb.code_cells:
        for li, text in enumerate(src.split("\n")):
            for col, ch in enumerate(text):
                fl, fc = nb.file_position(n, li, col)
                assert lines[fl][fc:].startswith(json.dumps(ch, ensure_ascii=dump["ensure_ascii"])[1:-1]), (
                    n, li, col, ch, lines[fl])
