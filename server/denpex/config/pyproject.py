"""Reading `[tool.denpex]` from pyproject.toml, for `denpex scan` and the language server alike."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from denpex.config.resolve import ConfigError, Layer


def _toml() -> ModuleType | None:
    try:
        import tomllib
        found: ModuleType = tomllib
        return found
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli
        except ModuleNotFoundError:
            return None
        mod: ModuleType = tomli
        return mod


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above `start` (a file or a directory)."""
    p = start.resolve()
    if p.is_file():
        p = p.parent
    for d in (p, *p.parents):
        cand = d / "pyproject.toml"
        if cand.is_file():
            return cand
    return None


def origin(path: Path) -> str:
    return f"{path}: [tool.denpex]"


def read_layer(path: Path) -> Layer | None:
    """`[tool.denpex]` of `path` as a layer; None when the file has no such table. ConfigError when the
    file cannot be read or parsed, or the table is not a table."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    toml = _toml()
    if toml is None:
        if "tool.denpex" not in text:
            return None
        raise ConfigError(f"{path}: cannot read [tool.denpex]: no TOML parser (Python 3.10 needs tomli)")
    try:
        data = toml.loads(text)
    except toml.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    tool = data.get("tool")
    section = tool.get("denpex") if isinstance(tool, dict) else None
    if section is None:
        return None
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: [tool.denpex] must be a table")
    return Layer(origin(path), section, project=True)
