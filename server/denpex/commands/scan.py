"""`denpex scan`: find CUDA-graph capture hazards in Python source.

Exit 0 when clean, 1 with findings (after --fix: findings that remain), 2 on error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import pathspec

from denpex import __version__
from denpex.errors import DenpexError
from denpex.rulebook import RuleBook, load_rulebook
from denpex.source.analyse import analyse_workspace, apply_fixes
from denpex.source.config import ScanConfig, load_config
from denpex.source.model import SourceFinding
from denpex.source.workspace import Workspace

SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache", ".tox", ".nox",
             "node_modules", ".venv", "venv", ".eggs"}


def register(subparsers: Any) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "scan", help="find CUDA-graph capture hazards in Python source",
        description=("Scan Python files for lines inside CUDA-graph capture regions that fail during capture or "
                     "silently compute wrong results on replay. Directories are walked respecting .gitignore; "
                     "[tool.denpex] in pyproject.toml configures rules, severities, wrappers and guards."),
    )
    p.add_argument("paths", nargs="*", default=["."], metavar="PATH", help="files or directories (default: .)")
    p.add_argument("--format", choices=("text", "json", "sarif", "github"), default="text", help="output format")
    p.add_argument("--select", action="append", default=[], metavar="RULES",
                   help="only these rules (ids, codes or code prefixes, comma-separated; repeatable)")
    p.add_argument("--ignore", action="append", default=[], metavar="RULES", help="skip these rules")
    p.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    p.add_argument("--unsafe-fixes", action="store_true", help="with --fix, also apply behaviour-changing fixes")
    p.add_argument("--config", metavar="PYPROJECT", help="read [tool.denpex] from this file")
    p.add_argument("--rules", action="append", default=[], metavar="DIR", help="also load the rule files in DIR")
    p.set_defaults(handler=run)


def _ignored_by_git(specs: list[tuple[Path, pathspec.PathSpec[Any]]], path: Path, is_dir: bool) -> bool:
    for base, spec in specs:
        try:
            rel = path.relative_to(base).as_posix()
        except ValueError:
            continue
        if spec.match_file(rel + "/" if is_dir else rel):
            return True
    return False


def _load_gitignore(d: Path) -> pathspec.PathSpec[Any] | None:
    gi = d / ".gitignore"
    if not gi.is_file():
        return None
    try:
        lines = gi.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return pathspec.PathSpec.from_lines("gitwildmatch", lines)


def collect_files(paths: list[str]) -> list[Path]:
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if not p.exists():
            raise DenpexError(f"{raw}: no such file or directory")
        if p.is_file():
            out.append(p)
            continue
        specs: list[tuple[Path, pathspec.PathSpec[Any]]] = []
        # .gitignore files of the parents up to the repository root apply too
        for parent in [p.resolve(), *p.resolve().parents]:
            spec = _load_gitignore(parent)
            if spec is not None:
                specs.append((parent, spec))
            if (parent / ".git").exists():
                break
        root = p.resolve()
        if _ignored_by_git(specs, root, True):
            specs = []  # a directory named explicitly is scanned even if a parent .gitignore lists it
        for dirpath, dirnames, filenames in os.walk(root):
            d = Path(dirpath)
            if d != root:
                spec = _load_gitignore(d)
                if spec is not None:
                    specs.append((d, spec))
            keep = []
            for name in sorted(dirnames):
                sub = d / name
                if name in SKIP_DIRS or (sub / "pyvenv.cfg").exists() or _ignored_by_git(specs, sub, True):
                    continue
                keep.append(name)
            dirnames[:] = keep
            for name in sorted(filenames):
                if name.endswith((".py", ".pyi")) and not _ignored_by_git(specs, d / name, False):
                    out.append(d / name)
    seen: set[Path] = set()
    uniq = []
    for f in out:
        r = f.resolve()
        if r not in seen:
            seen.add(r)
            uniq.append(f)
    return uniq


def _display(p: Path) -> str:
    try:
        return os.path.relpath(p)
    except ValueError:
        return str(p)


def _read(p: Path) -> str:
    try:
        return p.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError as exc:
        raise DenpexError(f"{p}: cannot read: {exc}") from None


def scan(files: list[Path], config: ScanConfig, book: RuleBook) -> tuple[Workspace, dict[str, list[SourceFinding]]]:
    ws = Workspace(roots=[str(Path.cwd())])
    for f in files:
        ws.add_text(_display(f), _read(f))
    return ws, analyse_workspace(ws, config=config, rulebook=book)


def run(args: argparse.Namespace) -> int:
    book = load_rulebook(args.rules)
    start = Path(args.paths[0]) if args.paths else Path.cwd()
    config = load_config(book, start=start if start.exists() else Path.cwd(),
                         pyproject=Path(args.config) if args.config else None)
    config = config.with_cli(book, args.select, args.ignore)
    if args.unsafe_fixes and not args.fix:
        raise DenpexError("--unsafe-fixes needs --fix")
    files = collect_files(args.paths)
    ws, results = scan(files, config, book)
    fixed_files = 0
    if args.fix:
        for path, findings in results.items():
            if not findings:
                continue
            src = ws.source(path)
            assert src is not None
            new = src.text
            for _round in range(4):  # later rounds pick up fixes that overlapped earlier ones
                new2 = apply_fixes(new, [f for f in findings], unsafe=args.unsafe_fixes)
                if new2 == new:
                    break
                new = new2
                ws.update_file(path, new)
                findings = analyse_workspace_file(ws, path, config, book)
            if new != src.text:
                Path(path).write_text(new, encoding="utf-8", errors="surrogateescape")
                fixed_files += 1
        results = analyse_workspace(ws, config=config, rulebook=book)
    all_findings = [f for p in results for f in results[p]]
    emit(all_findings, args.format, book, len(files), fixed_files if args.fix else None)
    return 1 if all_findings else 0


def analyse_workspace_file(ws: Workspace, path: str, config: ScanConfig, book: RuleBook) -> list[SourceFinding]:
    return analyse_workspace(ws, config=config, rulebook=book).get(path, [])


def _json_obj(f: SourceFinding) -> dict[str, Any]:
    return {
        "path": f.path, "line": f.start_line + 1, "column": f.start_col + 1,
        "end_line": f.end_line + 1, "end_column": f.end_col + 1, "rule": f.rule,
        "severity": f.severity, "message": f.message,
        "capture_site": {"path": f.capture_site.path, "line": f.capture_site.line + 1} if f.capture_site else None,
        "fixes": [{"title": x.title, "safety": x.safety} for x in f.fixes],
    }


def emit(findings: list[SourceFinding], fmt: str, book: RuleBook, nfiles: int, fixed: int | None) -> None:
    out = sys.stdout
    if fmt == "json":
        out.write(json.dumps({"schema": "denpex.scan/1", "diagnostics": [_json_obj(f) for f in findings]}, indent=2) + "\n")
        return
    if fmt == "sarif":
        out.write(json.dumps(sarif(findings, book), indent=2) + "\n")
        return
    if fmt == "github":
        level = {"error": "error", "warning": "warning", "info": "notice"}
        for f in findings:
            msg = f.message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
            title = f"{f.code} {f.rule}".replace(",", "%2C").replace("::", "%3A%3A")
            out.write(f"::{level[f.severity]} file={f.path},line={f.start_line + 1},col={f.start_col + 1},"
                      f"endLine={f.end_line + 1},endColumn={f.end_col + 1},title={title}::{msg}\n")
        return
    for f in findings:
        site = ""
        if f.capture_site is not None and (f.capture_site.path != f.path or f.capture_site.line != f.start_line):
            site = f" (captured at {f.capture_site.path}:{f.capture_site.line + 1})"
        fx = " [fix]" if any(x.safety == "safe" for x in f.fixes) else (" [unsafe fix]" if f.fixes else "")
        out.write(f"{f.path}:{f.start_line + 1}:{f.start_col + 1}: {f.code} [{f.severity}] {f.message}{site}{fx}\n")
    n = len(findings)
    tail = f"Found {n} finding{'s' if n != 1 else ''} in {nfiles} file{'s' if nfiles != 1 else ''}."
    if fixed is not None:
        tail += f" Fixed {fixed} file{'s' if fixed != 1 else ''}."
    out.write(tail + "\n")


def sarif(findings: list[SourceFinding], book: RuleBook) -> dict[str, Any]:
    used = sorted({f.rule for f in findings})
    rules = []
    for rid in used:
        r = book.get(rid)
        if r is None:
            continue
        rules.append({
            "id": r.code, "name": r.id, "shortDescription": {"text": r.title},
            "fullDescription": {"text": r.root_cause}, "help": {"text": r.fix},
            "defaultConfiguration": {"level": {"error": "error", "warning": "warning", "info": "note"}[r.severity]},
        })
    index = {r["id"]: i for i, r in enumerate(rules)}
    results = []
    for f in findings:
        res: dict[str, Any] = {
            "ruleId": f.code, "ruleIndex": index.get(f.code, 0),
            "level": {"error": "error", "warning": "warning", "info": "note"}[f.severity],
            "message": {"text": f.message},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": Path(f.path).as_posix()},
                "region": {"startLine": f.start_line + 1, "startColumn": f.start_col + 1,
                           "endLine": f.end_line + 1, "endColumn": f.end_col + 1},
            }}],
        }
        if f.capture_site is not None:
            res["relatedLocations"] = [{"id": 1, "message": {"text": "capture site"}, "physicalLocation": {
                "artifactLocation": {"uri": Path(f.capture_site.path).as_posix()},
                "region": {"startLine": f.capture_site.line + 1}}}]
        results.append(res)
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0",
        "runs": [{"tool": {"driver": {"name": "denpex", "version": __version__, "rules": rules}},
                  "results": results}],
    }
