"""Loaded by every Python process of a `denpex run --guard` job (this folder is put first on PYTHONPATH):
turns the guard on as soon as the process imports torch, then hands over to any sitecustomize the job's
environment already had. A process that never imports torch pays one finder lookup."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
_DENPEX = os.path.dirname(os.path.dirname(_HERE))


def _guard_on() -> None:
    try:
        if importlib.util.find_spec("denpex") is None:
            # an interpreter without Denpex installed (the job's own venv): expose just this package's
            # folder, without running denpex/__init__ or importing Denpex's dependencies
            pkg = types.ModuleType("denpex")
            pkg.__path__ = [_DENPEX]
            sys.modules["denpex"] = pkg
        import denpex.guard

        denpex.guard.enable(quiet_without_cuda=True)
    except Exception as exc:
        sys.stderr.write(f"denpex-guard: off: could not start: {type(exc).__name__}: {exc}\n")


class _TorchWatch(importlib.abc.MetaPathFinder):
    """Finds nothing itself; when `torch` is about to be imported, wraps its loader so the guard is
    installed right after torch has finished importing."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec("torch")
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader: Any = spec.loader
        original = loader.exec_module

        def exec_module(module: types.ModuleType) -> None:
            original(module)
            _guard_on()

        loader.exec_module = exec_module
        return spec


def _chain() -> None:
    """Import the sitecustomize this one shadows, if the environment has one."""
    rest = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


if "torch" in sys.modules:
    _guard_on()
elif importlib.util.find_spec("torch") is None:
    if os.environ.get("DENPEX_GUARD_MAIN") == str(os.getppid()):
        sys.stderr.write("denpex-guard: off: PyTorch is not installed in this interpreter; nothing is checked\n")
else:
    sys.meta_path.insert(0, _TorchWatch())
_chain()
