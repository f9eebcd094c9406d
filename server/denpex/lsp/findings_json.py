"""Source findings -> LSP diagnostics as JSON: filtering, severities, links, related information, data.

This is the one conversion. The start-up path (boot.py) publishes its output before pygls and
lsprotocol are imported; `diagnostics.to_diagnostic` structures the same JSON into lsprotocol's type.

`Diagnostic.data` carries everything a code action needs (ruff's habit), so code actions never
re-run the analysis:

    {"rule": id, "code": code, "version": int | null,
     "fixes": [{"title", "safety", "edits": [{"range", "newText"}]}],
     "suppression": {"title", "safety", "edits": [...]} | null}

Positions inside Denpex are 0-based lines and code-point columns; the client's are in the negotiated
encoding (utf-16 unless it offered utf-8 or utf-32), clamped to the document as pygls' codec does.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pygls import uris

from denpex.lsp.capabilities import ClientCaps
from denpex.rulebook import Rule, RuleBook
from denpex.source.model import Fix, SourceFinding, TextEdit

if TYPE_CHECKING:
    from denpex.lsp.settings import Settings

SOURCE = "denpex"
SEVERITY = {"error": 1, "warning": 2, "info": 3, "hint": 4}  # LSP DiagnosticSeverity

Json = dict[str, object]

# test hook: rule ids whose findings fail to convert (proves one bad rule loses only its findings)
_FAULT_RULES = frozenset(filter(None, os.environ.get("DENPEX_LSP_FAULT_RULES", "").split(",")))


def units(text: str, encoding: str) -> int:
    """Length of `text` in the client's code units (pygls' PositionCodec.client_num_units)."""
    if encoding == "utf-32":
        return len(text)
    if encoding == "utf-8":
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def position_json(lines: Sequence[str], encoding: str, line: int, col: int) -> Json:
    """Code-point (line, col) -> client position, clamped to the document."""
    if not lines:
        return {"line": 0, "character": 0}
    if line >= len(lines):
        last = len(lines) - 1
        return {"line": last, "character": units(lines[last].rstrip("\r\n"), encoding)}
    line = max(line, 0)
    text = lines[line].rstrip("\r\n")
    col = min(max(col, 0), len(text))
    return {"line": line, "character": units(lines[line][:col], encoding)}


def range_json(lines: Sequence[str], encoding: str, sl: int, sc: int, el: int, ec: int) -> Json:
    start = position_json(lines, encoding, sl, sc)
    end = position_json(lines, encoding, el, ec)
    if (end["line"], end["character"]) < (start["line"], start["character"]):  # type: ignore[operator]
        end = start
    return {"start": start, "end": end}


def edit_json(e: TextEdit, lines: Sequence[str], encoding: str) -> Json:
    return {"range": range_json(lines, encoding, e.start_line, e.start_col, e.end_line, e.end_col),
            "newText": e.new_text}


def fix_json(fix: Fix, lines: Sequence[str], encoding: str) -> Json:
    return {"title": fix.title, "safety": fix.safety, "edits": [edit_json(e, lines, encoding) for e in fix.edits]}


def rule_link(settings: Settings, rule: Rule | None, rule_id: str, code: str) -> str | None:
    if settings.docs_url:
        return settings.docs_url.replace("{id}", rule_id).replace("{code}", code)
    if rule is not None and rule.path:
        p = Path(rule.path)
        return uris.from_fs_path(str(p.resolve())) if p.exists() else None
    return None


def diagnostic_json(f: SourceFinding, *, lines: Sequence[str], encoding: str, caps: ClientCaps,
                    settings: Settings, book: RuleBook | None, version: int | None) -> Json | None:
    """One finding as a Diagnostic; None when the settings turn it off (the analyser already ran
    with the settings' selection: this is for a finding of a rule switched off since)."""
    if f.rule in _FAULT_RULES:
        raise RuntimeError(f"injected fault in rule {f.rule}")
    if not settings.config.enabled(f.rule):
        return None
    sev = settings.severity.get(f.rule, f.severity)
    if sev == "off":
        return None
    rule = book.get(f.rule) if book is not None else None
    out: Json = {
        "range": range_json(lines, encoding, f.start_line, f.start_col, f.end_line, f.end_col),
        "message": f.message,
        "severity": SEVERITY.get(sev, 2),
        "code": f.code,
        "source": SOURCE,
    }
    link = rule_link(settings, rule, f.rule, f.code) if caps.code_description else None
    if link:
        out["codeDescription"] = {"href": link}
    if caps.related_information and f.capture_site is not None:
        site = f.capture_site
        via = f" via {' -> '.join(f.via)}" if f.via else ""
        site_range = (range_json(lines, encoding, site.line, 0, site.line, 10_000) if site.path == f.path
                      else {"start": {"line": site.line, "character": 0}, "end": {"line": site.line, "character": 0}})
        related: list[Json] = [{"location": {"uri": uris.from_fs_path(site.path) or site.path, "range": site_range},
                                "message": f"capture opened here ({site.kind}){via}"}]
        # the way from the capture to this line: each call followed, where it is
        n = len(f.call_path)
        for i, st in enumerate(f.call_path, 1):
            at = (range_json(lines, encoding, st.line, st.col, st.line, st.col + 1) if st.path == f.path
                  else {"start": {"line": st.line, "character": st.col}, "end": {"line": st.line, "character": st.col}})
            related.append({"location": {"uri": uris.from_fs_path(st.path) or st.path, "range": at},
                            "message": f"call {i} of {n} on the way from the capture: {st.label}"})
        out["relatedInformation"] = related
    out["data"] = {
        "rule": f.rule,
        "code": f.code,
        "version": version,
        "fixes": [fix_json(x, lines, encoding) for x in f.fixes],
        "suppression": fix_json(f.suppression, lines, encoding) if f.suppression else None,
        "call_path": [[st.path, st.line, st.col, st.label] for st in f.call_path],
        "capture_site": [f.capture_site.path, f.capture_site.line] if f.capture_site is not None else None,
    }
    return out


def for_client_json(diags: Sequence[Json], caps: ClientCaps) -> list[Json]:
    """Drop fields the client did not declare (data) before sending; the server keeps them."""
    if caps.diagnostic_data:
        return list(diags)
    return [{k: v for k, v in d.items() if k != "data"} for d in diags]
