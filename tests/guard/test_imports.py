"""The guard runs inside the user's job, in whatever interpreter has torch: `denpex run --guard` puts its
folder on the job's path without installing Denpex there. So server/denpex/guard imports the standard
library, torch and itself, nothing else of Denpex and nothing else third-party. One documented exception:
explain.py (compare mode's "explained by") imports Denpex's analyser lazily, inside its function, and its
caller catches the ImportError. (And the `pytest -p denpex.guard` plugin's hooks in __init__.py import pytest:
they only run under pytest.)

Read from the import statements of the source (every one, at any depth), not from a run: a lazy import
that a test never reaches still counts."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.guard.fake_graph import child_env

GUARD = REPO / "server" / "denpex" / "guard"
STDLIB = set(sys.stdlib_module_names) | {"__future__"}
LAZY_EXCEPTION = {"explain.py"}  # may import the rest of Denpex inside a function


def imports(tree: ast.Module, package: str) -> Iterator[tuple[str, int, str]]:
    """(absolute module name, line, the enclosing function's name or "" at module or class level) of every
    import statement."""

    def walk(node: ast.AST, function: str) -> Iterator[tuple[str, int, str]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                for alias in child.names:
                    yield alias.name, child.lineno, function
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")
                    base = base[:len(base) - child.level + 1]
                    name = ".".join([*base, child.module] if child.module else base)
                else:
                    name = child.module or ""
                yield name, child.lineno, function
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            yield from walk(child, inner)

    yield from walk(tree, "")


def guard_files() -> list[Path]:
    files = sorted(GUARD.rglob("*.py"))
    assert GUARD / "hook" / "sitecustomize.py" in files and len(files) >= 12, files
    return files


def package_of(path: Path) -> str:
    """denpex.guard for guard/*.py, denpex.guard.hook for guard/hook/*.py."""
    return ".".join(("denpex", "guard", *path.relative_to(GUARD).parent.parts))


def problems(text: str, rel: str, package: str = "denpex.guard") -> list[str]:
    """What a guard file at `rel` (relative to the guard's folder) imports that it must not."""
    out = []
    for name, line, function in imports(ast.parse(text), package):
        top = name.split(".")[0]
        if top in STDLIB or top == "torch" or name == "denpex.guard" or name.startswith("denpex.guard."):
            continue
        if top == "denpex" and function and rel in LAZY_EXCEPTION:
            continue
        if top == "pytest" and function.startswith("pytest_") and rel == "__init__.py":
            continue  # the `pytest -p denpex.guard` plugin's hooks run only under pytest
        where = f"in {function}()" if function else "at module level"
        out.append(f"{rel}:{line}: imports {name} {where}")
    return out


@pytest.mark.parametrize("path", guard_files(), ids=lambda p: str(p.relative_to(GUARD)))
def test_guard_imports_only_stdlib_torch_and_itself(path: Path) -> None:
    assert problems(path.read_text(encoding="utf-8"), str(path.relative_to(GUARD)), package_of(path)) == []


@pytest.mark.parametrize(("rel", "text"), [
    ("a.py", "import yaml\n"),
    ("a.py", "from denpex.rulebook import load_rulebook\n"),
    ("a.py", "import denpex.logs.diagnose\n"),
    ("a.py", "def f():\n    import regex\n"),
    ("a.py", "def f():\n    from denpex.source.engine.analyse import analyse_workspace\n"),
    ("explain.py", "from denpex.source.engine.analyse import analyse_workspace\n"),  # the exception is lazy only
    ("a.py", "from .. import cli\n"),
    ("hook/sitecustomize.py", "from ...errors import DenpexError\n"),
    ("a.py", "class A:\n    import numpy\n"),
    ("a.py", "def pytest_configure(config):\n    import pytest\n"),  # only the plugin's __init__.py
    ("__init__.py", "import pytest\n"),
    ("__init__.py", "def enable():\n    import pytest\n"),
])
def test_the_check_refuses(rel: str, text: str) -> None:
    package = ".".join(("denpex", "guard", *Path(rel).parent.parts))
    assert problems(text, rel, package), (rel, text)


def test_the_check_allows() -> None:
    text = "from . import report\nfrom .report import say\nimport os.path\ndef f():\n    import torch.cuda\n"
    assert problems(text, "a.py") == []
    assert [n for n, _l, _f in imports(ast.parse(text), "denpex.guard")] == [
        "denpex.guard", "denpex.guard.report", "os.path", "torch.cuda"]
    assert problems("from .. import report\n", "hook/x.py", "denpex.guard.hook") == []
    assert problems("def f():\n    from denpex.rulebook import load_rulebook\n", "explain.py") == []
    assert problems("def pytest_runtest_call(item):\n    import pytest\n", "__init__.py") == []


def test_explain_imports_the_analyser_only_inside_its_function() -> None:
    lazy = [(n, f) for n, _l, f in imports(ast.parse((GUARD / "explain.py").read_text()), "denpex.guard")
            if n.startswith("denpex.")]
    assert lazy and all(f for _n, f in lazy), lazy


def test_importing_the_guard_does_not_import_torch() -> None:
    # the pytest plugin and the job's hook import denpex.guard; torch is imported only when enable() runs
    code = ("import sys, denpex.guard; from denpex.guard import parse_mode; parse_mode('warn'); "
            "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env=child_env(), check=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
