"""A workspace class constructed under capture runs its `__init__` there (issue 19, reach: the oracle's `constructor`
misses, e.g. Megatron-LM's `FineGrainedActivationOffloadingInterface(...)`, TransformerEngine's storage classes).
A class passed on rather than called (`isinstance(x, C)`) runs nothing."""

from __future__ import annotations

from tests.source.helpers import capture_program, workspace_flags

HELPERS = '''import torch


class Base:
    def __init__(self, t):
        self.peak = t.max().item()


class Scaled(Base):
    pass


class Plain:
    def __init__(self, t):
        self.scale = float(t.sum())
        self.seen = []
        self.seen.append(t)
'''


def _flagged(call: str) -> set[tuple[str, int, str]]:
    main = capture_program("from helpers import Base, Plain, Scaled", call)
    return workspace_flags({"helpers.py": HELPERS, "main.py": main})


def test_a_class_constructed_under_capture_runs_its_init() -> None:
    assert ("helpers.py", 15, "capture-item-sync") in _flagged("h = Plain(x)")  # float(t.sum())


def test_a_class_without_an_init_runs_its_workspace_base_init() -> None:
    assert ("helpers.py", 6, "capture-item-sync") in _flagged("h = Scaled(x)")  # t.max().item()


def test_a_class_passed_on_is_not_constructed() -> None:
    assert not any(p == "helpers.py" for p, _l, _r in _flagged("ok = isinstance(x, Plain)"))


def test_appending_to_the_new_objects_own_list_is_not_a_lost_side_effect() -> None:
    """`self.seen.append(t)` in `__init__`: the list belongs to an object built during the capture."""
    flagged = _flagged("h = Plain(x)")
    assert not any(r == "replay-python-side-effects" for _p, _l, r in flagged)
    assert ("helpers.py", 15, "capture-item-sync") in flagged  # the constructor was walked
