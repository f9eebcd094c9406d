"""A branch on an environment variable read with a default is decided for the run a program makes with the
variable unset, as an option's default is (issue 19, ecosystem review: flashinfer's FLASHINFER_VALIDATE_INPUTS
checks, off by default, whose `.item()` calls were reported under capture)."""

from __future__ import annotations

from tests.source.helpers import capture_program, workspace_flags

LIB = '''import os

import torch


def validate(lens):
    if {cond}:
        return
    if (lens < 0).any().item():
        raise ValueError("negative length")
'''


def _flags(cond: str) -> set[tuple[str, int, str]]:
    main = capture_program("from lib import validate", "validate(x)")
    return {f for f in workspace_flags({"lib.py": LIB.format(cond=cond), "main.py": main}) if f[0] == "lib.py"}


def test_a_switch_off_by_default_leaves_its_checks_out() -> None:
    assert _flags('os.environ.get("VALIDATE_INPUTS", "0") in ("0", "")') == set()
    assert _flags('os.getenv("VALIDATE_INPUTS", "0") == "0"') == set()
    assert _flags('os.environ.get("VALIDATE_INPUTS", default="off") != "on"') == set()


def test_a_switch_on_by_default_or_without_a_default_keeps_them() -> None:
    hit = ("lib.py", 9, "capture-item-sync")
    assert hit in _flags('os.environ.get("VALIDATE_INPUTS", "1") == "0"')  # on by default: the checks run
    assert hit in _flags('os.environ.get("VALIDATE_INPUTS") == "0"')  # unset is None, not "0"
    assert hit in _flags('os.environ["VALIDATE_INPUTS"] == "0"')  # no default: not decided
