"""Typed server options, from the editor and from `[tool.denpex]` in pyproject.toml.

Sources, later wins:

1. defaults below;
2. the editor's global settings: `initializationOptions` (either the settings object itself or
   `{"settings": {...}}` / `{"denpex": {...}}`), then `workspace/didChangeConfiguration`;
3. the editor's per-folder settings: `initializationOptions.workspaceSettings`, a map from folder
   URI to a settings object, or `workspace/configuration` (section `denpex`, scoped to the folder)
   when the client supports it;
4. `[tool.denpex]` in the folder's `pyproject.toml`, for the analysis keys it shares with
   `denpex scan` (select, ignore, severity, capture-wrappers, graphed-callables, guards, unsafe-fixes).

Editor keys are camelCase; pyproject keys are kebab-case; both spellings (and snake_case) are
accepted everywhere. Invalid values are reported (logged once by the server) and ignored.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

RunMode = Literal["onType", "onSave"]
SEVERITIES = ("error", "warning", "info", "hint", "off")


def _norm(key: str) -> str:
    return key.replace("-", "").replace("_", "").lower()


@dataclass(frozen=True)
class Settings:
    """Effective options for one document (its folder's view)."""

    run: RunMode = "onType"
    """Analyse on every change (`onType`, which implies on save) or only on save (`onSave`)."""
    debounce_ms: int = 0
    """Delay before analysing after a change; later changes restart it. 0 = coalesce only."""
    select: tuple[str, ...] = ()
    """Rule ids, codes or code prefixes to report (empty: all rules)."""
    ignore: tuple[str, ...] = ()
    """Rule ids, codes or code prefixes never to report."""
    severity: Mapping[str, str] = field(default_factory=dict)
    """Severity overrides keyed by rule id, code or code prefix: error|warning|info|hint|off."""
    capture_wrappers: tuple[str, ...] = ()
    """Extra qualified names that open a capture region (project context managers)."""
    graphed_callables: tuple[str, ...] = ()
    """Extra qualified names of calls that capture the callable passed as their first argument."""
    guards: tuple[str, ...] = ()
    """Extra qualified names of predicates that mean "we are capturing" (guarded code skipped)."""
    fix_violation: bool = True
    """Offer one quick fix per fix of a finding (`codeAction.fixViolation.enable`)."""
    disable_rule_comment: bool = True
    """Offer "Disable RULE for this line" (`codeAction.disableRuleComment.enable`)."""
    fix_all: bool = True
    """Offer `source.fixAll.denpex` (safe fixes only unless `unsafeFixes`)."""
    unsafe_fixes: bool = False
    """Let fix-all apply unsafe (behaviour-changing) fixes too."""
    log_documents: bool = True
    """Diagnose `.log`/`.out`/`.err`/plain-text documents."""
    max_file_bytes: int = 4_000_000
    """Skip analysing documents larger than this."""
    docs_url: str = ""
    """`codeDescription` link template with {id}/{code}; empty: the rule file itself."""

    def with_values(self, values: Mapping[str, Any], errors: list[str], origin: str) -> Settings:
        """A copy with the recognised keys of `values` applied; problems go to `errors`."""
        changes: dict[str, Any] = {}
        flat = _flatten(values)
        for key, raw in flat.items():
            name = _KEYS.get(_norm(key))
            if name is None:
                continue
            try:
                changes[name] = _coerce(name, raw)
            except (TypeError, ValueError) as exc:
                errors.append(f"{origin}: ignoring {key!r}: {exc}")
        return dataclasses.replace(self, **changes) if changes else self


# accepted spellings -> field name
_KEYS: dict[str, str] = {_norm(f.name): f.name for f in dataclasses.fields(Settings)}
_KEYS.update({
    _norm("codeAction.fixViolation.enable"): "fix_violation",
    _norm("codeAction.disableRuleComment.enable"): "disable_rule_comment",
    _norm("lint.run"): "run",
    _norm("captureWrappers"): "capture_wrappers",
    _norm("extraCaptureWrappers"): "capture_wrappers",
    _norm("wrappers"): "capture_wrappers",
    _norm("guardNames"): "guards",
    _norm("severities"): "severity",
})


def _flatten(values: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """`{"codeAction": {"fixViolation": {"enable": false}}}` -> `{"codeAction.fixViolation.enable": false}`.

    The severity table stays a table.
    """
    out: dict[str, Any] = {}
    for key, value in values.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and _KEYS.get(_norm(name)) != "severity":
            out.update(_flatten(value, f"{name}."))
        else:
            out[name] = value
    return out


def _str_tuple(raw: Any) -> tuple[str, ...]:
    if isinstance(raw, str):
        raw = [s.strip() for s in raw.split(",") if s.strip()]
    if not isinstance(raw, list | tuple) or not all(isinstance(s, str) for s in raw):
        raise TypeError("expected a list of strings")
    return tuple(raw)


def _coerce(name: str, raw: Any) -> Any:
    if name == "run":
        if raw not in ("onType", "onSave"):
            raise ValueError("expected 'onType' or 'onSave'")
        return raw
    if name in ("debounce_ms", "max_file_bytes"):
        if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
            raise TypeError("expected a non-negative integer")
        return raw
    if name in ("select", "ignore", "capture_wrappers", "graphed_callables", "guards"):
        return _str_tuple(raw)
    if name == "severity":
        if not isinstance(raw, Mapping):
            raise TypeError("expected a table of rule -> severity")
        out: dict[str, str] = {}
        for k, v in raw.items():
            v = str(v).lower()
            v = {"warn": "warning", "information": "info", "none": "off"}.get(v, v)
            if v not in SEVERITIES:
                raise ValueError(f"{k}: severity must be one of {', '.join(SEVERITIES)}")
            out[str(k)] = v
        return out
    if name in ("fix_violation", "disable_rule_comment", "fix_all", "unsafe_fixes", "log_documents"):
        if not isinstance(raw, bool):
            raise TypeError("expected true or false")
        return raw
    if name == "docs_url":
        if not isinstance(raw, str):
            raise TypeError("expected a string")
        return raw
    raise ValueError("unknown key")  # pragma: no cover


# keys `[tool.denpex]` may set (shared with `denpex scan`)
PROJECT_KEYS = frozenset({
    "select", "ignore", "severity", "capture_wrappers", "graphed_callables", "guards", "unsafe_fixes",
})


def read_pyproject(folder: Path, errors: list[str]) -> dict[str, Any]:
    """The `[tool.denpex]` table of `folder/pyproject.toml`, restricted to PROJECT_KEYS."""
    path = folder / "pyproject.toml"
    if not path.is_file():
        return {}
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ModuleNotFoundError:
            errors.append(f"{path}: no TOML parser (Python 3.10 without tomli); ignored")
            return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        errors.append(f"{path}: {exc}; [tool.denpex] ignored")
        return {}
    table = data.get("tool", {}).get("denpex", {})
    if not isinstance(table, dict):
        return {}
    return {k: v for k, v in table.items() if _KEYS.get(_norm(k)) in PROJECT_KEYS}


def unwrap_editor_settings(options: Any) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Split initializationOptions / didChangeConfiguration settings into (global, per-folder)."""
    if not isinstance(options, Mapping):
        return {}, {}
    per_folder_raw = options.get("workspaceSettings") or {}
    if isinstance(options.get("denpex"), Mapping):
        options = options["denpex"]
    elif isinstance(options.get("settings"), Mapping):
        options = options["settings"]
    per_folder: dict[str, dict[str, Any]] = {}
    if isinstance(per_folder_raw, Mapping):
        per_folder = {str(k): dict(v) for k, v in per_folder_raw.items() if isinstance(v, Mapping)}
    elif isinstance(per_folder_raw, list):  # [{"workspace": uri, ...settings}]
        for item in per_folder_raw:
            if isinstance(item, Mapping) and isinstance(item.get("workspace"), str):
                per_folder[item["workspace"]] = {k: v for k, v in item.items() if k != "workspace"}
    glob = {k: v for k, v in options.items() if k not in ("workspaceSettings",)}
    return dict(glob), per_folder


class SettingsStore:
    """Global and per-folder settings; resolves the effective Settings for a path."""

    def __init__(self) -> None:
        self.global_values: dict[str, Any] = {}
        self.folder_values: dict[str, dict[str, Any]] = {}  # folder path -> editor values
        self.project_values: dict[str, dict[str, Any]] = {}  # folder path -> [tool.denpex]
        self.folders: list[str] = []
        self._cache: dict[str | None, Settings] = {}
        self.errors: list[str] = []  # drained and logged by the server

    def set_folders(self, folders: list[str]) -> None:
        self.folders = sorted(folders, key=len, reverse=True)
        for f in self.folders:
            self.reload_project(f)
        self._cache.clear()

    def reload_project(self, folder: str) -> None:
        self.project_values[folder] = read_pyproject(Path(folder), self.errors)
        self._cache.clear()

    def set_global(self, values: Mapping[str, Any]) -> None:
        self.global_values = dict(values)
        self._cache.clear()

    def set_folder(self, folder: str, values: Mapping[str, Any]) -> None:
        self.folder_values[folder] = dict(values)
        self._cache.clear()

    def folder_of(self, path: str | None) -> str | None:
        if path is None:
            return None
        for f in self.folders:
            if path == f or path.startswith(f.rstrip("/\\") + ("/" if "/" in f else "\\")):
                return f
        return None

    def for_path(self, path: str | None) -> Settings:
        folder = self.folder_of(path)
        cached = self._cache.get(folder)
        if cached is not None:
            return cached
        s = Settings().with_values(self.global_values, self.errors, "settings")
        if folder is not None:
            s = s.with_values(self.folder_values.get(folder, {}), self.errors, f"settings for {folder}")
            s = s.with_values(self.project_values.get(folder, {}), self.errors,
                              f"{folder}/pyproject.toml [tool.denpex]")
        self._cache[folder] = s
        return s
