"""ParsedSource.edit reparses from the old tree, telling the parser the edit exactly or as the whole lines it spans
(whichever reparsed fast last time: each way costs a full reparse of some files for some edits): whatever the edit
and either way, the new tree is node for node, positions included,
the one the parser gives when told the edit exactly, and the one a fresh parse gives. (Nothing is compared once a
quote has been typed into code that holds strings: tree-sitter's incremental parse can then differ from a fresh one,
and between the two ways of telling, e.g. after a triple quote typed on line 6 and another on line 34 of SOURCE.)"""

from __future__ import annotations

from collections.abc import Iterator

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tree_sitter import Node

from denpex.source.syntax.parse import ParsedSource, _parser, parse

SOURCE = '''import torch


class Box:
    def grow(self, n):
        items = torch.ones(n, device="cuda")
        self.n *= 2
        return items  # é ünïcode


def f(x):
    if x:
        return (x +
                1)
    return x'''


def _nodes(n: Node) -> Iterator[tuple[str, int, int, tuple[int, int], tuple[int, int]]]:
    stack = [n]
    while stack:
        c = stack.pop()
        yield c.type, c.start_byte, c.end_byte, c.start_point, c.end_point
        stack.extend(reversed(c.children))


def _same_as_fresh(src: ParsedSource) -> None:
    fresh = parse(src.text)
    assert list(_nodes(src.tree.root_node)) == list(_nodes(fresh.tree.root_node))


def _told_exactly(old: ParsedSource, r: int, c: int, r2: int, c2: int, new: str) -> list[object]:
    """The tree the parser gives from `old`'s tree when told the edit itself (code points are bytes: ASCII rows)."""
    s, t = old.byte_offset(r, c), old.byte_offset(r2, c2)
    nb = new.encode()
    data = old.data[:s] + nb + old.data[t:]
    end = s + len(nb)
    tree = old.tree.copy()
    tree.edit(start_byte=s, old_end_byte=t, new_end_byte=end, start_point=(r, s - old.line_starts[r]),
              old_end_point=(r2, t - old.line_starts[r2]),
              new_end_point=(r + nb.count(b"\n"), end - (data.rfind(b"\n", 0, end) + 1)))
    return list(_nodes(_parser().parse(data, tree).root_node))


TEXTS = st.sampled_from(["", "q", " ", "\n", "(", ")", "'", '"""', "é", "\n    y = 2\n", "a\nb", "\t", "x = 1  # c\n"])


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 10_000), st.integers(0, 3), st.integers(0, 6),
                          TEXTS, st.booleans()), min_size=1, max_size=6),
       st.booleans())
def test_every_edit_reparses_to_the_tree_of_a_fresh_parse(edits: list[tuple[int, int, int, int, str, bool]],
                                                          trailing_newline: bool) -> None:
    src = parse(SOURCE + ("\n" if trailing_newline else ""))
    quoted = False  # a quote typed: from then on tree-sitter's own incremental parse may differ (module docstring)
    for row_seed, col_seed, rows, width, new, as_lines in edits:
        src._tell_lines = as_lines
        lines = src.text.split("\n")
        r = row_seed % len(lines)
        c = col_seed % (len(lines[r]) + 1)
        r2 = min(len(lines) - 1, r + rows)
        c2 = min(len(lines[r2]), (c if r2 == r else 0) + width)
        if r2 == r and c2 < c:
            c2 = c
        exact = _told_exactly(src, r, c, r2, c2, new) if src.text.isascii() and new.isascii() else None
        src = src.edit(r, c, r2, c2, new)
        assert src.text == "\n".join([*lines[:r], lines[r][:c] + new + lines[r2][c2:], *lines[r2 + 1:]])
        quoted = quoted or any(q in new for q in "'\"")
        if quoted:
            continue
        if exact is not None:
            assert list(_nodes(src.tree.root_node)) == exact
        _same_as_fresh(src)


def test_deleting_the_last_character_of_the_last_line_keeps_the_tree_right() -> None:
    for as_lines in (False, True):
        src = parse(SOURCE)  # no newline at the end
        last = len(SOURCE.split("\n")) - 1
        src._tell_lines = as_lines
        src = src.edit(last, 11, last, 12, "")
        assert src.text.endswith("    return ")
        _same_as_fresh(src)
        src._tell_lines = as_lines
        src = src.edit(last, 4, last, 4, "zz")
        _same_as_fresh(src)


def test_a_slow_reparse_tells_the_next_edit_the_other_way() -> None:
    big = "\n".join(f"def f{i}(x):\n    y = x + {i}\n    return y" for i in range(4000))
    src = parse(big)
    before = src._tell_lines
    src = src.edit(0, 0, 0, 0, "(")  # an open bracket before everything: the whole file reparsed
    assert src._tell_lines is not before
