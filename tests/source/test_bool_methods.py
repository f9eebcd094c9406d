"""A tensor's `has_*` / `is_*` methods (and a tensor subclass's `_has_*`) answer a Python bool: testing one under
capture reads nothing from the device (issue 19, ecosystem review: tensordict's `if value._has_names():`)."""

from __future__ import annotations

from tests.source.helpers import capture_program, workspace_flags

LIB = '''import torch


def check(t):
    if t.{method}():
        return t * 2
    return t
'''


def _flagged(method: str) -> set[tuple[str, int, str]]:
    main = capture_program("from lib import check", "y = check(x)")
    return {f for f in workspace_flags({"lib.py": LIB.format(method=method), "main.py": main}) if f[0] == "lib.py"}


def test_a_bool_method_of_a_tensor_is_a_python_bool() -> None:
    for method in ("has_names", "_has_names", "is_contiguous", "_is_view"):
        assert _flagged(method) == set(), method


def test_a_tensor_valued_test_is_still_reported() -> None:
    assert ("lib.py", 5, "capture-implicit-bool") in _flagged("any")
