"""Logs and tracebacks over LSP: the `denpex.diagnose` command and `.log` documents.

`denpex.diagnose` takes text (an editor or terminal selection) and returns

    {"diagnosis": <denpex.diagnosis/1>, "markdown": str,
     "locations": [{"uri", "path", "line" (0-based), "frame"}]}

and publishes diagnostics on the mapped source lines of the initiating exception's frames.
A log opened as a document gets diagnostics on its initiating and collateral lines.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls import uris
from pygls.workspace.position_codec import PositionCodec

from denpex.logs import Diagnosis, diagnose_text
from denpex.logs.render import render_markdown
from denpex.lsp.capabilities import ClientCaps
from denpex.lsp.diagnostics import SOURCE, rule_link
from denpex.lsp.documents import to_lsp_range
from denpex.lsp.paths import PathIndex
from denpex.lsp.settings import Settings
from denpex.rulebook import RuleBook

COMMAND = "denpex.diagnose"
MAX_TEXT = 64 * 1024 * 1024

ROLE_SEVERITY = {
    "initiating": types.DiagnosticSeverity.Warning,
    "collateral": types.DiagnosticSeverity.Information,
}


@dataclass(frozen=True)
class MappedFrame:
    uri: str
    path: str
    line: int  # 0-based
    frame: dict[str, Any]
    innermost: bool


def parse_arguments(args: Sequence[Any]) -> tuple[str, str | None]:
    """`("text")`, `({"text": ..., "uri": ...})` or `("text", "uri")` -> (text, log uri)."""
    if not args:
        raise ValueError("denpex.diagnose needs the text to diagnose as its first argument")
    first = args[0]
    if isinstance(first, dict):
        text = first.get("text")
        uri = first.get("uri")
    else:
        text = first
        uri = args[1] if len(args) > 1 else None
    if not isinstance(text, str):
        raise ValueError("denpex.diagnose: the text argument must be a string")
    if len(text) > MAX_TEXT:
        raise ValueError("denpex.diagnose: text larger than 64 MiB")
    return text, uri if isinstance(uri, str) else None


def diagnose(text: str, book: RuleBook | None) -> Diagnosis:
    return diagnose_text(text, book)


def map_frames(d: dict[str, Any], index: PathIndex, open_paths: Sequence[str]) -> list[MappedFrame]:
    """The initiating exception's user frames that resolve to workspace files."""
    verdict = d.get("verdict") or {}
    frames = [f for f in verdict.get("frames") or [] if not f.get("library")]
    out: list[MappedFrame] = []
    for i, fr in enumerate(frames):
        path = index.resolve(str(fr.get("path", "")), open_paths)
        line = fr.get("line")
        if path is None or not isinstance(line, int) or line < 1:
            continue
        out.append(MappedFrame(uris.from_fs_path(str(path)) or str(path), str(path), line - 1, fr,
                               innermost=i == len(frames) - 1))
    return out


def _line_range(lines: Sequence[str], codec: PositionCodec, line: int) -> types.Range:
    if 0 <= line < len(lines):
        text = lines[line].rstrip("\r\n")
        start = len(text) - len(text.lstrip())
        return to_lsp_range(lines, codec, line, start, line, len(text))
    return types.Range(start=types.Position(line=line, character=0), end=types.Position(line=line, character=0))


def frame_diagnostics(
    d: dict[str, Any],
    mapped: Sequence[MappedFrame],
    text_of: Callable[[str, str], list[str] | None],
    codec: PositionCodec,
    caps: ClientCaps,
    settings: Settings,
    book: RuleBook | None,
    log_uri: str | None,
) -> dict[str, list[types.Diagnostic]]:
    """Diagnostics on the source lines named by the traceback, by document URI."""
    verdict = d.get("verdict") or {}
    rule_id, code, title = str(verdict.get("rule", "")), str(verdict.get("code", "")), str(verdict.get("title", ""))
    rule = book.get(rule_id) if book is not None else None
    link = rule_link(settings, rule, rule_id, code) if caps.code_description else None
    out: dict[str, list[types.Diagnostic]] = {}
    for m in mapped:
        lines = text_of(m.uri, m.path) or []
        rng = _line_range(lines, codec, m.line)
        related = None
        if caps.related_information and log_uri is not None:
            log_line = max(int(m.frame.get("log_line") or verdict.get("line") or 1) - 1, 0)
            pos = types.Position(line=log_line, character=0)
            related = [types.DiagnosticRelatedInformation(
                location=types.Location(uri=log_uri, range=types.Range(start=pos, end=pos)),
                message="traceback frame in the log",
            )]
        if m.innermost:
            sev = types.DiagnosticSeverity.Error if verdict.get("asynchronous") is not True else types.DiagnosticSeverity.Warning
            msg = f"{title} (from traceback: {str(verdict.get('text', '')).strip()[:160]})"
        else:
            sev = types.DiagnosticSeverity.Information
            msg = f"On the call path to the failure ({code}: {title})"
        out.setdefault(m.uri, []).append(types.Diagnostic(
            range=rng, message=msg, severity=sev, code=code or None,
            code_description=types.CodeDescription(href=link) if link else None,
            source=SOURCE, related_information=related,
            data={"rule": rule_id, "code": code, "origin": "traceback", "fixes": [], "suppression": None},
        ))
    return out


def command_result(diag: Diagnosis, mapped: Sequence[MappedFrame]) -> dict[str, Any]:
    return {
        "diagnosis": diag.to_json(),
        "markdown": render_markdown(diag),
        "locations": [{"uri": m.uri, "path": m.path, "line": m.line, "frame": m.frame} for m in mapped],
    }


def log_document_diagnostics(
    d: dict[str, Any],
    lines: Sequence[str],
    codec: PositionCodec,
    caps: ClientCaps,
    settings: Settings,
    book: RuleBook | None,
    mapped: Sequence[MappedFrame],
) -> list[types.Diagnostic]:
    """Diagnostics on a log document's initiating (verdict: error) and collateral lines."""
    verdict = d.get("verdict") or {}
    vline = verdict.get("line")
    out: list[types.Diagnostic] = []
    seen: set[int] = set()
    entries: list[tuple[int, str, str, str]] = []  # (1-based line, rule, role, text)
    if isinstance(vline, int):
        entries.append((vline, str(verdict.get("rule")), "verdict", str(verdict.get("text", ""))))
    for f in d.get("findings") or []:
        if f.get("role") in ROLE_SEVERITY and isinstance(f.get("line"), int):
            entries.append((f["line"], str(f["rule"]), str(f["role"]), str(f.get("text", ""))))
    for line, rule_id, role, _text in entries:
        if line in seen or line < 1:
            continue
        seen.add(line)
        rule = book.get(rule_id) if book is not None else None
        code = rule.code if rule is not None else rule_id
        title = rule.title if rule is not None else rule_id
        if role == "verdict":
            sev = types.DiagnosticSeverity.Error
            msg = f"First failure: {verdict.get('title') or title} (confidence {verdict.get('confidence')})"
            related = None
            if caps.related_information and mapped:
                related = [types.DiagnosticRelatedInformation(
                    location=types.Location(uri=m.uri, range=types.Range(
                        start=types.Position(line=m.line, character=0),
                        end=types.Position(line=m.line, character=0))),
                    message=f"{m.frame.get('function', '')}: {m.frame.get('code', '')}",
                ) for m in mapped]
        else:
            sev = ROLE_SEVERITY[role]
            msg = f"{role.capitalize()}: {title}"
            related = None
        link = rule_link(settings, rule, rule_id, code) if caps.code_description else None
        out.append(types.Diagnostic(
            range=_line_range(lines, codec, line - 1), message=msg, severity=sev, code=code,
            code_description=types.CodeDescription(href=link) if link else None,
            source=SOURCE, related_information=related,
            data={"rule": rule_id, "code": code, "origin": "log", "role": role, "fixes": [], "suppression": None},
        ))
    return out


def read_lines(path: str) -> list[str] | None:
    try:
        p = Path(path)
        if p.stat().st_size > 16 * 1024 * 1024:
            return None
        return p.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
    except OSError:
        return None
