"""Map file paths named in tracebacks to files in the workspace folders.

A traceback from a container or another machine names `/workspace/train.py` or
`/home/ci/proj/pkg/model.py`; the editor has the same file at `<folder>/train.py` or
`<folder>/pkg/model.py`. Absolute paths that exist inside a folder win, then relative paths
resolved against each folder, then the longest path *suffix* shared with a workspace file.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path, PurePosixPath, PureWindowsPath

# directories never worth indexing: VCS, virtual environments, caches, build output
SKIP_DIRS = frozenset({
    ".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "node_modules", "__pycache__",
    ".mypy_cache", ".ruff_cache", ".pytest_cache", "site-packages", "dist-packages", "build",
    "dist", ".eggs",
})
MAX_FILES = 50_000


def split_parts(path: str) -> tuple[str, ...]:
    """Path components of a POSIX or Windows path, without the root or drive."""
    if "\\" in path or (len(path) > 1 and path[1] == ":"):
        parts = PureWindowsPath(path).parts
        if parts and (parts[0].endswith("\\") or parts[0].endswith(":")):
            parts = parts[1:]
        return tuple(parts)
    parts = PurePosixPath(path).parts
    if parts and parts[0] == "/":
        parts = parts[1:]
    return tuple(p for p in parts if p not in (".", ""))


class PathIndex:
    """Python files of the workspace folders, indexed by file name (built lazily)."""

    def __init__(self, folders: Iterable[str] = ()) -> None:
        self._folders: list[Path] = [Path(f) for f in folders]
        self._by_name: dict[str, list[tuple[str, ...]]] | None = None

    @property
    def folders(self) -> list[Path]:
        return list(self._folders)

    def set_folders(self, folders: Iterable[str]) -> None:
        self._folders = [Path(f) for f in folders]
        self._by_name = None

    def invalidate(self) -> None:
        self._by_name = None

    def _build(self) -> dict[str, list[tuple[str, ...]]]:
        index: dict[str, list[tuple[str, ...]]] = {}
        count = 0
        for folder in self._folders:
            for root, dirs, files in os.walk(folder):
                dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info")]
                for name in files:
                    if not name.endswith((".py", ".pyi")):
                        continue
                    full = Path(root, name)
                    index.setdefault(name, []).append(full.parts)
                    count += 1
                    if count >= MAX_FILES:
                        return index
        return index

    def resolve(self, frame_path: str, extra: Iterable[str] = ()) -> Path | None:
        """The workspace file that `frame_path` (from a traceback) most likely names.

        `extra` are paths known to the editor (open documents) that may lie outside the folders.
        """
        if not frame_path or frame_path.startswith("<"):
            return None  # <frozen importlib._bootstrap>, <string>, <stdin>
        candidate = Path(frame_path)
        if candidate.is_absolute() and candidate.is_file() and self._inside_folders(candidate):
            return candidate
        parts = split_parts(frame_path)
        if not parts:
            return None
        if not candidate.is_absolute():
            for folder in self._folders:
                p = folder.joinpath(*parts)
                if p.is_file():
                    return p
        pool: list[tuple[str, ...]] = [Path(e).parts for e in extra if Path(e).name == parts[-1]]
        if self._by_name is None:
            self._by_name = self._build()
        pool.extend(self._by_name.get(parts[-1], ()))
        best: tuple[int, int, tuple[str, ...]] | None = None
        for cand in pool:
            shared = _shared_suffix(cand, parts)
            key = (shared, -len(cand), cand)
            if best is None or key[:2] > best[:2]:
                best = key
        if best is None:
            return None
        return Path(*best[2])

    def _inside_folders(self, path: Path) -> bool:
        if not self._folders:
            return True
        return any(path.is_relative_to(f) for f in self._folders)


def _shared_suffix(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    n = 0
    for x, y in zip(reversed(a), reversed(b), strict=False):
        if x != y:
            break
        n += 1
    return n
