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


NEW_AND_POST = '''import dataclasses
from dataclasses import dataclass

import torch


class Wrapped(torch.Tensor):
    def __new__(cls, data):
        if bool(data.isnan().any()):
            raise ValueError("nan")
        return torch.Tensor._make_subclass(cls, data)


class Both:
    def __new__(cls, t):
        cls.first = t.min().item()
        return super().__new__(cls)

    def __init__(self, t):
        self.last = float(t.max())


@dataclass(repr=False)
class Recipe:
    margin: int = 0

    def __post_init__(self):
        assert self.margin >= 0


@dataclass
class Scaling(Recipe):
    amax: object = None

    def __post_init__(self):
        self.peak = self.amax.max().item()


@dataclasses.dataclass(init=False)
class Manual:
    amax: object = None

    def __post_init__(self):
        self.peak = self.amax.max().item()
'''


def _flagged_new(call: str) -> set[tuple[str, int, str]]:
    main = capture_program("from helpers import Both, Manual, Recipe, Scaling, Wrapped", call)
    return workspace_flags({"helpers.py": NEW_AND_POST, "main.py": main})


def test_a_class_with_a_new_runs_it() -> None:
    assert ("helpers.py", 9, "capture-item-sync") in _flagged_new("w = Wrapped(x)")  # bool(... .any())


def test_a_class_with_both_runs_new_and_init() -> None:
    flagged = _flagged_new("b = Both(x)")
    assert ("helpers.py", 16, "capture-item-sync") in flagged  # __new__: t.min().item()
    assert ("helpers.py", 20, "capture-item-sync") in flagged  # __init__: float(t.max())


def test_a_dataclass_runs_its_post_init_with_none_of_the_call_arguments_bound() -> None:
    flagged = _flagged_new("s = Scaling(amax=x)")
    assert ("helpers.py", 36, "capture-item-sync") in flagged  # the first __post_init__ of its bases: Scaling's
    assert not any(line == 28 for p, line, _r in flagged if p == "helpers.py")  # Recipe's is not the one run


def test_a_pydantic_dataclass_runs_its_post_init() -> None:
    helpers = NEW_AND_POST.replace("from dataclasses import dataclass", "from pydantic.dataclasses import dataclass")
    main = capture_program("from helpers import Scaling", "s = Scaling(amax=x)")
    assert ("helpers.py", 36, "capture-item-sync") in workspace_flags({"helpers.py": helpers, "main.py": main})


def test_a_dataclass_with_init_false_runs_no_post_init() -> None:
    assert not any(p == "helpers.py" for p, _l, _r in _flagged_new("m = Manual(amax=x)"))
