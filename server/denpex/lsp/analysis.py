"""The one place the language server touches the source analyser (`denpex.source`).

Everything else in `denpex.lsp` sees `SourceFinding` (from `denpex.source.model`) and the small
`RegionSummary` below. While the analyser's entry point (`denpex.source.analyse_source`) is not
importable, a deliberately small stand-in (`.item()` reached from `with torch.cuda.graph`) keeps
the server usable; `Analyzer.real` says which one runs.
"""

from __future__ import annotations

import ast
import importlib
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from denpex.lsp.settings import Settings
from denpex.source.model import CaptureSite, Fix, SourceFinding, TextEdit

Log = Callable[[str], None]


@dataclass(frozen=True)
class RegionSummary:
    """A capture opener: where it is, what kind, what it reaches, what was found in it."""

    line: int  # 0-based
    start_col: int
    end_col: int
    kind: str
    callees: tuple[str, ...] = ()
    findings: tuple[SourceFinding, ...] = field(default=())


_OPENER = re.compile(
    r"(?P<graph>\b(?:cuda\.)?graph\s*\()|(?P<begin>\.capture_begin\s*\()"
    r"|(?P<mgc>\bmake_graphed_callables\s*\()|(?P<compile>\bcompile\s*\()"
)


def find_openers(text: str, line: int) -> list[tuple[int, int, str]]:
    """Capture openers on one line of `text`: (start, end, kind) in code points."""
    lines = text.splitlines()
    if not 0 <= line < len(lines):
        return []
    src = lines[line].split("#", 1)[0]
    out: list[tuple[int, int, str]] = []
    for m in _OPENER.finditer(src):
        kind = m.lastgroup or "graph"
        if kind == "compile" and not re.search(r"reduce-overhead|max-autotune|cudagraphs", lines[line]):
            continue
        if kind == "graph" and "CUDAGraph" in m.group(0):
            continue
        out.append((m.start(), m.end() - 1, {"graph": "graph", "begin": "capture_begin",
                                              "mgc": "graphed_callables", "compile": "compile"}[kind]))
    return out


def _load(module: str, name: str) -> Any:
    try:
        return getattr(importlib.import_module(module), name, None)
    except ImportError:
        return None


class Analyzer:
    """Source analysis for the server: the real analyser when present, the stand-in otherwise."""

    MAX_INDEX_FILES = 5_000
    MAX_INDEX_BYTES = 1_000_000

    def __init__(self, log: Log) -> None:
        self._log = log
        self._real: Callable[..., Any] | None = (
            _load("denpex.source", "analyse_source") or _load("denpex.source.analyse", "analyse_source"))
        self._ws_factory: Callable[..., Any] | None = (
            _load("denpex.source", "Workspace") or _load("denpex.source.workspace", "Workspace"))
        self._workspace: Any = None
        self._folders: list[str] = []
        self._config_key: tuple[Any, ...] | None = None
        self._config: Any = None
        if self._real is None:
            log("denpex.source.analyse_source not found: using the built-in stand-in analyser")

    @property
    def real(self) -> bool:
        return self._real is not None

    # workspace index -------------------------------------------------------------------------

    def set_folders(self, folders: Iterable[str]) -> None:
        self._folders = list(folders)
        if self._ws_factory is None or self._real is None:
            return
        try:
            self._workspace = self._ws_factory(self._folders)
        except Exception as exc:
            self._log(f"workspace index failed: {exc!r}")
            self._workspace = None

    def workspace_files(self, skip: Iterable[str] = ()) -> list[str]:
        """Python files of the folders to index (bounded), minus `skip`."""
        from denpex.lsp.paths import SKIP_DIRS

        skipped = set(skip)
        out: list[str] = []
        for folder in self._folders:
            for root, dirs, files in os.walk(folder):
                dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info"))
                for name in sorted(files):
                    if name.endswith(".py"):
                        p = os.path.join(root, name)
                        if p not in skipped:
                            out.append(p)
                            if len(out) >= self.MAX_INDEX_FILES:
                                return out
        return out

    def index_file(self, path: str) -> None:
        """Add a file from disk to the workspace index (if small enough and readable)."""
        try:
            if os.path.getsize(path) > self.MAX_INDEX_BYTES:
                return
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
        except (OSError, UnicodeDecodeError):
            return
        self.update_file(path, text)

    def update_file(self, path: str, text: str | None) -> None:
        ws = self._workspace
        if ws is None:
            return
        try:
            if text is None:
                ws.remove_file(path)
            else:
                ws.add_file(path, text)
        except Exception as exc:
            self._log(f"workspace index update failed for {path}: {exc!r}")

    def edit_file(self, path: str, edits: list[TextEdit]) -> None:
        """Incremental re-parse of an indexed file (edits in didChange order, code points)."""
        ws = self._workspace
        if ws is None or path not in ws:
            return
        try:
            ws.edit_file(path, edits)
        except Exception as exc:  # the next analysis re-adds the file from the full text
            self._log(f"incremental index update failed for {path}: {exc!r}")
            ws.remove_file(path)

    # analysis ----------------------------------------------------------------------------------

    def analyse(self, text: str, path: str, settings: Settings) -> list[SourceFinding]:
        if self._real is not None:
            findings = self._real(text, path, config=self._scan_config(settings), workspace=self._workspace)
            return [f for f in findings if f.path == path]
        return _fallback_analyse(text, path, settings)

    def _scan_config(self, settings: Settings) -> Any:
        key = (settings.select, settings.ignore, tuple(sorted(settings.severity.items())),
               settings.capture_wrappers, settings.graphed_callables, settings.guards)
        if key != self._config_key:
            self._config = _real_config(settings, self._log)
            self._config_key = key
        return self._config

    def regions(self, text: str, path: str, findings: list[SourceFinding], line: int) -> list[RegionSummary]:
        """Capture openers on `line`, each with the callees and findings it reaches."""
        out: list[RegionSummary] = []
        for start, end, kind in find_openers(text, line):
            mine = tuple(f for f in findings if f.capture_site is not None and f.capture_site.line == line)
            callees: list[str] = []
            for f in mine:
                for name in f.via:
                    if name not in callees:
                        callees.append(name)
            out.append(RegionSummary(line, start, end, kind, tuple(callees), mine))
        return out


def _real_config(settings: Settings, log: Log) -> Any:
    """The analyser's ScanConfig built from the server's settings (ids, codes, prefixes resolved)."""
    cls = _load("denpex.source.config", "ScanConfig")
    resolve = _load("denpex.source.config", "resolve_rules")
    if cls is None or resolve is None:
        return None
    from denpex.rulebook import load_rulebook

    book = load_rulebook()

    def ids(keys: Iterable[str]) -> set[str]:
        out: set[str] = set()
        for key in keys:
            try:
                out |= resolve(book, [key])
            except Exception as exc:  # an unknown rule in the settings costs only that entry
                log(f"settings: {exc}")
        return out

    severity: dict[str, str] = {}
    # least specific first, so exact ids/codes override prefixes
    for key, sev in sorted(settings.severity.items(), key=lambda kv: len(kv[0])):
        if sev in ("error", "warning", "info"):
            for rule_id in ids([key]):
                severity[rule_id] = sev
    return cls(
        select=frozenset(ids(settings.select)) if settings.select else None,
        ignore=frozenset(ids(settings.ignore)),
        severity=severity,
        capture_wrappers=frozenset(settings.capture_wrappers),
        guards=frozenset(settings.guards),
        graphed_callables=frozenset(settings.graphed_callables),
    )


# --- stand-in analyser -------------------------------------------------------------------------

_SUPPRESS = re.compile(r"#\s*denpex:\s*ignore(?:\[(?P<ids>[^\]]*)\])?")
_RULE, _CODE = "capture-item-sync", "DPX101"
_MESSAGE = "`.item()` inside a CUDA-graph capture synchronises with the GPU and fails (CUDA 900)"


def _cp(line: str, byte_col: int) -> int:
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", "replace"))


def _dotted(node: ast.expr) -> str:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _suppressed(line: str, rule: str, code: str) -> bool:
    m = _SUPPRESS.search(line)
    if m is None:
        return False
    ids = m.group("ids")
    return ids is None or any(s.strip() in (rule, code) for s in ids.split(","))


def _fallback_analyse(text: str, path: str, settings: Settings) -> list[SourceFinding]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    lines = text.splitlines()
    funcs: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            funcs.setdefault(node.name, node)
    openers = {"torch.cuda.graph", "cuda.graph", "graph", "torch.cuda.graphs.graph", *settings.capture_wrappers}
    out: list[SourceFinding] = []
    seen: set[tuple[int, int]] = set()

    def visit(body: list[ast.stmt], site: CaptureSite, header: tuple[ast.With, ast.withitem],
              via: tuple[str, ...], depth: int) -> None:
        for stmt in body:
            for node in ast.walk(stmt):
                if not isinstance(node, ast.Call):
                    continue
                fn = node.func
                if isinstance(fn, ast.Attribute) and fn.attr == "item" and not node.args:
                    add(node, fn, site, header, via)
                name = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else ""
                if name in funcs and depth < 4 and name not in via:
                    visit(funcs[name].body, site, header, (*via, name), depth + 1)

    def add(call: ast.Call, fn: ast.Attribute, site: CaptureSite, header: tuple[ast.With, ast.withitem],
            via: tuple[str, ...]) -> None:
        ln = call.lineno - 1
        if (ln, call.col_offset) in seen or ln >= len(lines) or call.end_lineno != call.lineno:
            return
        seen.add((ln, call.col_offset))
        text_line = lines[ln]
        if _suppressed(text_line, _RULE, _CODE):
            return
        sc, ec = _cp(text_line, call.col_offset), _cp(text_line, call.end_col_offset or 0)
        vend = _cp(lines[fn.value.end_lineno - 1], fn.value.end_col_offset or 0) if fn.value.end_lineno else sc
        drop = Fix("Keep the value on the device: drop .item()", "unsafe",
                   (TextEdit(ln, vend, ln, ec, ""),))
        _with, item = header
        hl = item.context_expr.lineno - 1
        hs = _cp(lines[hl], item.context_expr.col_offset)
        he = _cp(lines[hl], item.context_expr.end_col_offset or 0)
        edits = [TextEdit(hl, hs, hl, he, "contextlib.nullcontext()")]
        if "import contextlib" not in text:
            edits.insert(0, TextEdit(0, 0, 0, 0, "import contextlib\n"))
        eager = Fix("Eager fallback: run without CUDA graph capture", "unsafe", tuple(edits))
        end = len(text_line)
        suppression = Fix(f"Disable {_CODE} for this line", "safe",
                          (TextEdit(ln, end, ln, end, f"  # denpex: ignore[{_RULE}]"),))
        out.append(SourceFinding(
            rule=_RULE, code=_CODE, severity="error", message=_MESSAGE, path=path,
            start_line=ln, start_col=sc, end_line=ln, end_col=ec, hazard="item-call",
            capture_site=site, fixes=(drop, eager), suppression=suppression, via=via,
        ))

    for node in ast.walk(tree):
        if isinstance(node, ast.With | ast.AsyncWith):
            for item in node.items:
                ce = item.context_expr
                if isinstance(ce, ast.Call) and _dotted(ce.func) in openers:
                    site = CaptureSite(path, ce.lineno - 1, "graph")
                    visit(node.body, site, (node, item), (), 0)  # type: ignore[arg-type]
    out.sort(key=lambda f: (f.start_line, f.start_col))
    return out
