"""`denpex scan`: find CUDA-graph capture hazards in Python source.

Exit 0 when clean, 1 with findings (after --fix: findings that remain), 2 on error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pathspec

from denpex import __version__
from denpex.config.project import load_project, with_cli
from denpex.errors import DenpexError
from denpex.notebook import CellPosition, Notebook, NotebookError
from denpex.notebook.fixes import fixed_cells
from denpex.rulebook import RuleBook, load_rulebook
from denpex.source.config import ScanConfig
from denpex.source.engine.analyse import analyse_workspace, apply_fixes
from denpex.source.engine.jobs import default_jobs
from denpex.source.model import SourceFinding
from denpex.source.resolve.workspace import Workspace

SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache", ".tox", ".nox",
             "node_modules", ".venv", "venv", ".eggs", ".ipynb_checkpoints"}
SOURCE_SUFFIXES = (".py", ".pyi", ".ipynb")


def register(subparsers: Any) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "scan", help="find CUDA-graph capture hazards in Python source and Jupyter notebooks",
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
    p.add_argument("--jobs", "-j", type=_jobs, default=0, metavar="N",
                   help="processes that analyse the capture files (default 0: one per core, at most 8; 1: this "
                        "process only)")
    p.set_defaults(handler=run)


def _jobs(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of processes: {text!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"not a number of processes: {text!r}")
    return n


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
                if name.endswith(SOURCE_SUFFIXES) and not _ignored_by_git(specs, d / name, False):
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


def is_notebook(p: Path | str) -> bool:
    return str(p).endswith(".ipynb")


def scan(files: list[Path], config: ScanConfig, book: RuleBook,
         notebooks: dict[str, Notebook] | None = None,
         errors: list[str] | None = None, jobs: int = 1) -> tuple[Workspace, dict[str, list[SourceFinding]]]:
    """Analyse the files as one workspace. A notebook's code cells are one program under the notebook's path
    (kept in `notebooks`); a notebook that does not read is left out, with its one-line reason in `errors`
    (raised when no list is given). `jobs`: processes for the capture files (engine/jobs.py)."""
    # whole files: on a real tree the lazy parse's extra analysis rounds cost more than parsing everything
    # (Megatron-LM: 16.2 s lazy, 9.1 s whole; bench/ecosystem/README.md)
    ws = Workspace(roots=[str(Path.cwd())], lazy=False)
    for f in files:
        shown = _display(f)
        if not is_notebook(f):
            ws.add_text(shown, _read(f))
            continue
        try:
            nb = Notebook.read(f, shown)
        except NotebookError as exc:
            if errors is None:
                raise
            errors.append(str(exc))
            continue
        if notebooks is not None:
            notebooks[shown] = nb
        ws.add_text(shown, nb.program.text)
    return ws, analyse_workspace(ws, config=config, rulebook=book, jobs=jobs)


def _fix_notebook(ws: Workspace, path: str, nb: Notebook, findings: list[SourceFinding], config: ScanConfig,
                  book: RuleBook, unsafe: bool) -> Notebook | None:
    """Apply fixes to the notebook's cells (rounds as for a Python file); write it when a cell changed and
    return it as written."""
    sources: dict[int, str] = {}
    current = nb
    for _round in range(4):
        changed = fixed_cells(current.program, findings, unsafe=unsafe)
        if not changed:
            break
        sources.update(changed)
        current = Notebook(nb.with_sources(sources), nb.name)
        ws.update_file(path, current.program.text)
        findings = analyse_workspace_file(ws, path, config, book)
    if not sources:
        return None
    Path(path).write_bytes(current.stored.encode("utf-8"))
    return current


def run(args: argparse.Namespace) -> int:
    book = load_rulebook(args.rules)
    start = Path(args.paths[0]) if args.paths else Path.cwd()
    project = load_project(book, start=start if start.exists() else Path.cwd(),
                           pyproject=Path(args.config) if args.config else None)
    config = with_cli(project.scan, book, args.select, args.ignore)
    if args.unsafe_fixes and not args.fix:
        raise DenpexError("--unsafe-fixes needs --fix")
    args.unsafe_fixes = args.unsafe_fixes or (args.fix and project.bool("unsafe_fixes"))  # [tool.denpex] unsafe-fixes
    files = collect_files(args.paths)
    notebooks: dict[str, Notebook] = {}
    errors: list[str] = []
    ws, results = scan(files, config, book, notebooks, errors, args.jobs or default_jobs())
    for line in errors:
        print(f"denpex: error: {line}", file=sys.stderr)
    fixed_files = 0
    if args.fix:
        for path, findings in results.items():
            if not findings:
                continue
            if path in notebooks:
                fixed = _fix_notebook(ws, path, notebooks[path], findings, config, book, args.unsafe_fixes)
                if fixed is not None:
                    notebooks[path] = fixed
                    fixed_files += 1
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
    emit(all_findings, args.format, book, len(files) - len(errors), fixed_files if args.fix else None, notebooks)
    if errors:
        return 2
    return 1 if all_findings else 0


def analyse_workspace_file(ws: Workspace, path: str, config: ScanConfig, book: RuleBook) -> list[SourceFinding]:
    return analyse_workspace(ws, config=config, rulebook=book).get(path, [])


class Where:
    """Positions as the output shows them: a notebook's as cell and line within the cell (`nb.ipynb:cell 3:2:9`,
    the way ruff writes them), or as line and column of the .ipynb text where a format points into the file."""

    def __init__(self, notebooks: Mapping[str, Notebook] | None = None) -> None:
        self.notebooks = notebooks or {}

    def cell(self, path: str, line: int, col: int = 0) -> CellPosition | None:
        nb = self.notebooks.get(path)
        return nb.program.position(line, col) if nb is not None else None

    def label(self, path: str, line: int, col: int | None = None) -> str:
        c = self.cell(path, line, col or 0)
        if c is not None:
            line, path = c.line, f"{path}:cell {c.cell}"
        return f"{path}:{line + 1}" + (f":{col + 1}" if col is not None else "")

    def in_file(self, path: str, line: int, col: int) -> tuple[int, int]:
        """0-based line and column in the file as stored (a notebook's JSON text)."""
        c = self.cell(path, line, col)
        nb = self.notebooks.get(path)
        if c is None or nb is None:
            return line, col
        return nb.file_position(c.cell, c.line, c.col)


def _json_site(where: Where, path: str, line: int) -> dict[str, Any]:
    c = where.cell(path, line)
    if c is None:
        return {"path": path, "line": line + 1}
    return {"path": path, "line": c.line + 1, "cell": c.cell}


def _json_obj(f: SourceFinding, where: Where) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "path": f.path, "line": f.start_line + 1, "column": f.start_col + 1,
        "end_line": f.end_line + 1, "end_column": f.end_col + 1, "rule": f.rule,
        "severity": f.severity, "message": f.message,
        "capture_site": _json_site(where, f.capture_site.path, f.capture_site.line) if f.capture_site else None,
        "fixes": [{"title": x.title, "safety": x.safety} for x in f.fixes],
        # how the line runs under capture: capture site -> each call followed -> the line
        "call_path": [{**_json_site(where, st.path, st.line), "column": st.col + 1, "reaches": st.label}
                      for st in f.call_path],
    }
    start, end = where.cell(f.path, f.start_line, f.start_col), where.cell(f.path, f.end_line, f.end_col)
    if start is not None and end is not None:  # a notebook: lines within the cell, as ruff's JSON has them
        obj.update(line=start.line + 1, end_line=end.line + 1 if end.cell == start.cell else start.line + 1,
                   end_column=end.col + 1 if end.cell == start.cell else obj["end_column"], cell=start.cell)
    return obj


def _cell_note(where: Where, f: SourceFinding) -> str:
    c = where.cell(f.path, f.start_line, f.start_col)
    return f" (cell {c.cell}, line {c.line + 1})" if c is not None else ""


def emit(findings: list[SourceFinding], fmt: str, book: RuleBook, nfiles: int, fixed: int | None,
         notebooks: Mapping[str, Notebook] | None = None) -> None:
    out = sys.stdout
    where = Where(notebooks)
    if fmt == "json":
        out.write(json.dumps({"schema": "denpex.scan/1", "diagnostics": [_json_obj(f, where) for f in findings]},
                             indent=2) + "\n")
        return
    if fmt == "sarif":
        out.write(json.dumps(sarif(findings, book, where), indent=2) + "\n")
        return
    if fmt == "github":
        level = {"error": "error", "warning": "warning", "info": "notice"}
        for f in findings:
            msg = (f.message + _cell_note(where, f)).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
            title = f"{f.code} {f.rule}".replace(",", "%2C").replace("::", "%3A%3A")
            (sl, sc), (el, ec) = where.in_file(f.path, f.start_line, f.start_col), where.in_file(f.path, f.end_line, f.end_col)
            out.write(f"::{level[f.severity]} file={f.path},line={sl + 1},col={sc + 1},"
                      f"endLine={el + 1},endColumn={ec + 1},title={title}::{msg}\n")
        return
    for f in findings:
        site = ""
        if f.capture_site is not None and (f.capture_site.path != f.path or f.capture_site.line != f.start_line):
            site = f" (captured at {where.label(f.capture_site.path, f.capture_site.line)})"
        fx = " [fix]" if any(x.safety == "safe" for x in f.fixes) else (" [unsafe fix]" if f.fixes else "")
        out.write(f"{where.label(f.path, f.start_line, f.start_col)}: {f.code} [{f.severity}] {f.message}{site}{fx}\n")
    n = len(findings)
    tail = f"Found {n} finding{'s' if n != 1 else ''} in {nfiles} file{'s' if nfiles != 1 else ''}."
    if fixed is not None:
        tail += f" Fixed {fixed} file{'s' if fixed != 1 else ''}."
    out.write(tail + "\n")


def _sarif_region(where: Where, path: str, sl: int, sc: int, el: int, ec: int) -> dict[str, Any]:
    (sl, sc), (el, ec) = where.in_file(path, sl, sc), where.in_file(path, el, ec)
    return {"startLine": sl + 1, "startColumn": sc + 1, "endLine": el + 1, "endColumn": ec + 1}


def _flow_location(where: Where, path: str, line: int, col: int, text: str) -> dict[str, Any]:
    sl, sc = where.in_file(path, line, col)
    return {"location": {"physicalLocation": {"artifactLocation": {"uri": Path(path).as_posix()},
                                              "region": {"startLine": sl + 1, "startColumn": sc + 1}},
                         "message": {"text": text}}}


def _code_flow(f: SourceFinding, where: Where, site_text: str, site_line: int) -> dict[str, Any]:
    """The way from the capture site through each call followed to the finding (SARIF codeFlows)."""
    assert f.capture_site is not None
    locs = [{"location": {"physicalLocation": {"artifactLocation": {"uri": Path(f.capture_site.path).as_posix()},
                                               "region": {"startLine": site_line + 1}},
                          "message": {"text": site_text}}}]
    locs += [_flow_location(where, st.path, st.line, st.col, f"calls {st.label}") for st in f.call_path]
    locs.append(_flow_location(where, f.path, f.start_line, f.start_col, f.rule))
    return {"threadFlows": [{"locations": locs}]}


def sarif(findings: list[SourceFinding], book: RuleBook, where: Where | None = None) -> dict[str, Any]:
    """SARIF 2.1.0. A notebook finding's region points into the .ipynb file as stored (where code scanning
    shows it); its cell and the line within the cell are in the message and in the location's properties."""
    where = where or Where()
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
            "message": {"text": f.message + _cell_note(where, f)},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": Path(f.path).as_posix()},
                "region": _sarif_region(where, f.path, f.start_line, f.start_col, f.end_line, f.end_col),
            }}],
        }
        c = where.cell(f.path, f.start_line, f.start_col)
        if c is not None:
            res["locations"][0]["properties"] = {"notebookCell": c.cell, "cellLine": c.line + 1,
                                                 "cellColumn": c.col + 1}
        if f.capture_site is not None:
            site = f.capture_site
            sline = where.in_file(site.path, site.line, 0)[0]
            sc = where.cell(site.path, site.line)
            text = "capture site" + (f" (cell {sc.cell}, line {sc.line + 1})" if sc is not None else "")
            res["relatedLocations"] = [{"id": 1, "message": {"text": text}, "physicalLocation": {
                "artifactLocation": {"uri": Path(site.path).as_posix()},
                "region": {"startLine": sline + 1}}}]
            if f.call_path:
                res["codeFlows"] = [_code_flow(f, where, text, sline)]
        results.append(res)
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0",
        "runs": [{"tool": {"driver": {"name": "denpex", "version": __version__, "rules": rules}},
                  "results": results}],
    }
