"""The server's settings for one document: the editor's options and the analyser's configuration,
from the one resolver `denpex scan` uses too (`denpex.config`).

Layers, later wins key by key:

1. defaults (`denpex.config.keys.KEYS`);
2. the editor's global settings: `initializationOptions` (either the settings object itself or
   `{"settings": {...}}` / `{"denpex": {...}}`), then `workspace/didChangeConfiguration`;
3. the editor's per-folder settings: `initializationOptions.workspaceSettings`, a map from folder
   URI to a settings object, or `workspace/configuration` (section `denpex`, scoped to the folder)
   when the client supports it;
4. `[tool.denpex]` in the folder's `pyproject.toml`.

A problem is reported with the text `denpex scan` prints for it (the server reports it as an error
and uses the lower layer's value, or the default, instead).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, cast

from denpex.config import ConfigError, Layer, Resolved, RuleSeverity, read_layer, resolve
from denpex.rulebook import RuleBook
from denpex.source.config import ScanConfig

RunMode = Literal["onType", "onSave"]
EDITOR = "editor settings"


@dataclass(frozen=True)
class Settings:
    """Effective options for one document (its folder's view)."""

    run: RunMode = "onType"
    debounce_ms: int = 0
    fix_violation: bool = True
    disable_rule_comment: bool = True
    fix_all: bool = True
    unsafe_fixes: bool = False
    log_documents: bool = True
    max_file_bytes: int = 4_000_000
    docs_url: str = ""
    config: ScanConfig = field(default_factory=ScanConfig)
    """What the analyser runs with: rules selected, wrappers, guards, graphed callables, max depth."""
    severity: Mapping[str, RuleSeverity] = field(default_factory=dict)
    """Rule id -> severity the configuration asks for (hint included)."""

    @classmethod
    def of(cls, r: Resolved) -> Settings:
        o = r.options
        return cls(run=cast(RunMode, o["run"]), debounce_ms=r.int("debounce_ms"),
                   fix_violation=r.bool("fix_violation"), disable_rule_comment=r.bool("disable_rule_comment"),
                   fix_all=r.bool("fix_all"), unsafe_fixes=r.bool("unsafe_fixes"),
                   log_documents=r.bool("log_documents"), max_file_bytes=r.int("max_file_bytes"),
                   docs_url=str(o["docs_url"]), config=r.scan, severity=r.severity)


def unwrap_editor_settings(options: object) -> tuple[dict[str, object], dict[str, dict[str, object]]]:
    """Split initializationOptions / didChangeConfiguration settings into (global, per-folder)."""
    if not isinstance(options, Mapping):
        return {}, {}
    per_folder_raw = options.get("workspaceSettings") or {}
    if isinstance(options.get("denpex"), Mapping):
        options = options["denpex"]
    elif isinstance(options.get("settings"), Mapping):
        options = options["settings"]
    per_folder: dict[str, dict[str, object]] = {}
    if isinstance(per_folder_raw, Mapping):
        per_folder = {str(k): dict(v) for k, v in per_folder_raw.items() if isinstance(v, Mapping)}
    elif isinstance(per_folder_raw, list):  # [{"workspace": uri, ...settings}]
        for item in per_folder_raw:
            if isinstance(item, Mapping) and isinstance(item.get("workspace"), str):
                per_folder[item["workspace"]] = {k: v for k, v in item.items() if k != "workspace"}
    assert isinstance(options, Mapping)
    glob = {str(k): v for k, v in options.items() if k != "workspaceSettings"}
    return glob, per_folder


class SettingsStore:
    """Global and per-folder settings; resolves the effective Settings for a path."""

    def __init__(self, book: Callable[[], RuleBook]) -> None:
        self._book = book
        self.global_values: dict[str, object] = {}
        self.folder_values: dict[str, dict[str, object]] = {}  # folder path -> editor values
        self.project_layers: dict[str, Layer | None] = {}  # folder path -> [tool.denpex]
        self.folders: list[str] = []
        self._cache: dict[str | None, Settings] = {}
        self.errors: list[str] = []  # drained and reported by the server (as errors)
        self.warnings: list[str] = []  # drained and logged by the server
        self._reported: set[str] = set()  # each problem once until the settings change

    def set_folders(self, folders: list[str]) -> None:
        self.folders = sorted(folders, key=len, reverse=True)
        for f in self.folders:
            self.reload_project(f)
        self._changed()

    def reload_project(self, folder: str) -> None:
        path = Path(folder) / "pyproject.toml"
        layer = None
        if path.is_file():
            try:
                layer = read_layer(path)
            except ConfigError as exc:
                self._report(str(exc))
        self.project_layers[folder] = layer
        self._changed()

    def _changed(self) -> None:
        self._cache.clear()
        self._reported.clear()

    def _report(self, message: str, warning: bool = False) -> None:
        if message not in self._reported:
            self._reported.add(message)
            (self.warnings if warning else self.errors).append(message)

    def set_global(self, values: Mapping[str, object]) -> None:
        self.global_values = dict(values)
        self._changed()

    def set_folder(self, folder: str, values: Mapping[str, object]) -> None:
        self.folder_values[folder] = dict(values)
        self._changed()

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
        layers = [Layer(EDITOR, self.global_values)]
        if folder is not None:
            layers.append(Layer(f"{EDITOR} for {folder}", self.folder_values.get(folder, {})))
            project = self.project_layers.get(folder)
            if project is not None:
                layers.append(project)
        resolved = resolve(layers, self._book(), strict=False)
        for e in resolved.errors:
            self._report(e)
        for w in resolved.warnings:
            self._report(w, warning=True)
        s = Settings.of(resolved)
        self._cache[folder] = s
        return s
