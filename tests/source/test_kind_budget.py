"""One kind question reads at most KIND_BUDGET kinds (resolve/kinds.py): a call's kind reads its callee's returns
with the arguments bound, and each of those reads its own callees' again, a tree that grows as the fan-out to
the power of the depth. Past the budget the answer is unknown; below it, the answer is the one without a bound."""

from __future__ import annotations

from typing import Any

import pytest

from denpex.source.resolve import kinds
from denpex.source.resolve.index import FileIndex
from denpex.source.syntax.parse import parse, walk


def _chain(levels: int, fan: int) -> str:
    """f0 returns one of `fan` calls of f1 with other arguments, f1 of f2, ...; the last returns a tensor."""
    lines = ["import torch", "", ""]
    for i in range(levels):
        lines.append(f"def f{i}(a, b):")
        for k in range(fan):
            lines.append(f"    if a > {k}:")
            lines.append(f"        return f{i + 1}(b, a + {k})")
        lines.append(f"    return f{i + 1}(a, b)")
        lines += ["", ""]
    lines.append(f"def f{levels}(a, b):")
    lines.append("    return torch.zeros(2, device='cuda')")
    lines += ["", "", "y = f0(1, 2)", ""]
    return "\n".join(lines)


def _counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    n = [0]
    real = kinds._kind

    def counting(*a: Any) -> kinds.Kind:
        n[0] += 1
        return real(*a)

    monkeypatch.setattr(kinds, "_kind", counting)
    return n


def _kind_of_y(text: str) -> kinds.Kind:
    ix = FileIndex("chain.py", parse(text, lazy=False))
    call = next(n for n in walk(ix.src.root) if n.type == "call" and ix.text(n) == "f0(1, 2)")
    return kinds.kind(ix, call)


def test_a_small_tree_gets_its_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    n = _counted(monkeypatch)
    k = _kind_of_y(_chain(3, 2))
    assert k.cat == "tensor" and 0 < n[0] < kinds.KIND_BUDGET


def test_a_wide_deep_tree_stops_at_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _chain(6, 6)
    monkeypatch.setattr(kinds, "KIND_BUDGET", 10**9)
    n = _counted(monkeypatch)
    assert _kind_of_y(text).cat == "tensor"
    unbounded = n[0]
    monkeypatch.setattr(kinds, "KIND_BUDGET", 2000)
    n[0] = 0
    assert _kind_of_y(text).cat == "unknown"  # spent: no answer rather than a late one
    assert unbounded > 20 * 2000 and n[0] <= 2001, (unbounded, n[0])
    n[0] = 0
    assert _kind_of_y(_chain(2, 2)).cat == "tensor" and n[0] < 2000  # the next question has its own budget
