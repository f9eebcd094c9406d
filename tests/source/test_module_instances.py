"""An instance bound once at the top of another module and imported by name (`from tensordict.base import
_device_recorder`): its methods are that instance's class's (issue 19, the oracle's tensordict `module_attr`
misses)."""

from __future__ import annotations

from tests.source.helpers import capture_program, workspace_flags

LIB = '''import torch


class Recorder:
    def mark(self, t):
        return t.max().item()


recorder = Recorder()
{extra}'''


def _flagged(extra: str = "") -> set[tuple[str, int, str]]:
    main = capture_program("from lib import recorder", "y = recorder.mark(x)")
    return {f for f in workspace_flags({"lib.py": LIB.format(extra=extra), "main.py": main}) if f[0] == "lib.py"}


def test_an_imported_module_level_instance_calls_its_class_method() -> None:
    assert ("lib.py", 6, "capture-item-sync") in _flagged()


def test_a_name_bound_twice_at_module_level_is_not_taken_for_either() -> None:
    assert _flagged("recorder = None\n") == set()
