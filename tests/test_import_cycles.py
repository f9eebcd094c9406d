"""Denpex's modules import each other without circles.

Every `import` counts, the lazy ones inside functions too (a lazy import hides a circle from Python, not
from the reader), except those under `if TYPE_CHECKING:`. `from pkg import name` depends on the module
`pkg.name` where there is one (a native extension counts), else on `pkg` itself.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

from tests.conftest import REPO

PACKAGE = REPO / "server" / "denpex"

# Circles not yet taken apart, named so that a new one fails and a removed one must leave this list.
KNOWN: list[list[str]] = []


def modules(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for the .py files and native extensions under `root`."""
    out: dict[str, Path] = {}
    for p in sorted(root.rglob("*")):
        if "__pycache__" in p.parts or not (p.suffix == ".py" or p.suffix == ".so"):
            continue
        parts = list(p.relative_to(root.parent).parts)
        parts[-1] = parts[-1].split(".")[0]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return skip


def imports(name: str, path: Path, known: Mapping[str, Path]) -> set[str]:
    """The modules of `known` that module `name` (file `path`) imports."""
    if path.suffix != ".py":
        return set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_nodes(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            targets.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([node.module] if node.module else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                targets.add(sub if sub in known else base)
    out: set[str] = set()
    for target in targets:
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != name:
            out.add(target)
    return out


def cycles(graph: Mapping[str, set[str]]) -> Iterator[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp: list[str] = []
                while True:
                    x = stack.pop()
                    on_stack.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    yield sorted(comp)


def test_the_finder_sees_a_circle(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from pkg.b import g\n")
    (pkg / "b.py").write_text("from pkg import a\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import f\n")
    known = modules(pkg)
    graph = {m: imports(m, p, known) for m, p in known.items()}
    assert list(cycles(graph)) == [["pkg.a", "pkg.b"]]


def test_denpex_has_no_import_circles() -> None:
    known = modules(PACKAGE)
    graph = {m: imports(m, p, known) for m, p in known.items()}
    found = [c for c in cycles(graph) if c not in KNOWN]
    gone = [c for c in KNOWN if c not in list(cycles(graph))]
    assert not gone, f"no longer a circle, take it out of KNOWN: {gone}"
    assert not found, "\n".join(
        " <-> ".join(c) + "\n  " + "\n  ".join(f"{m} -> {sorted(graph[m] & set(c))}" for m in c) for c in found
    )
