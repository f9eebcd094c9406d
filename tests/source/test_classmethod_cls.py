"""`cls` in a `@classmethod` is the class (issue 19, reach: the oracle's `cls_method` misses, e.g. TransformerEngine's
`cls.get_key_in_buffer(...)` in quantization.py, Megatron-LM's `cls._create_cudagraphs()` in cuda_graphs.py)."""

from __future__ import annotations

from tests.source.helpers import capture_program, workspace_flags

MANAGER = '''class Manager:
    @classmethod
    def reduce(cls, t):
        return cls.peak(t)

    @classmethod
    def peak(cls, t):
        return t.max().item()

    def plain(cls, t):
        return cls.peak(t)

    @staticmethod
    def static(cls, t):
        return cls.peak(t)
'''


def _flagged(call: str) -> set[tuple[str, int, str]]:
    main = capture_program("from manager import Manager", f"y = {call}")
    return workspace_flags({"manager.py": MANAGER, "main.py": main})


def test_cls_in_a_classmethod_is_its_class() -> None:
    assert ("manager.py", 8, "capture-item-sync") in _flagged("Manager.reduce(x)")


def test_a_parameter_named_cls_elsewhere_is_a_parameter() -> None:
    """A method that is no classmethod (or a staticmethod) with a parameter spelled `cls`: no class is assumed."""
    assert ("manager.py", 8, "capture-item-sync") not in _flagged("Manager.static(None, x)")


CONFIGS = '''from functools import lru_cache

from manager import Manager


class Configs(Manager):
    kernel = "moe"

    @classmethod
    @lru_cache(maxsize=200)
    def best(cls, t):
        return cls.peak(t)
'''


def test_an_inherited_method_through_the_class_or_cls_is_the_bases() -> None:
    """`Sub.m(...)` and `cls.m(...)` in a subclass's classmethod take `m` from the first base that defines it
    (lightllm's kernel configs: `cls.get_the_config(...)` defined on KernelConfigs)."""
    for call in ("Configs.best(x)", "Configs.peak(x)"):
        main = capture_program("from configs import Configs", f"y = {call}")
        flagged = workspace_flags({"manager.py": MANAGER, "configs.py": CONFIGS, "main.py": main})
        assert ("manager.py", 8, "capture-item-sync") in flagged, call
