"""Source findings -> lsprotocol Diagnostics: the JSON of `findings_json` (the one conversion),
structured into lsprotocol's type for the handlers that read them back (hover, code actions)."""

from __future__ import annotations

from collections.abc import Sequence

from lsprotocol import types
from lsprotocol.converters import get_converter
from pygls.workspace.position_codec import PositionCodec

from denpex.lsp.capabilities import ClientCaps
from denpex.lsp.findings_json import SOURCE, diagnostic_json, rule_link
from denpex.lsp.settings import Settings
from denpex.rulebook import RuleBook
from denpex.source.model import SourceFinding

__all__ = ["SOURCE", "for_client", "rule_link", "same_diagnostic", "to_diagnostic"]

_CONVERTER = get_converter()


def to_diagnostic(
    f: SourceFinding,
    *,
    lines: Sequence[str],
    codec: PositionCodec,
    caps: ClientCaps,
    settings: Settings,
    book: RuleBook | None,
    version: int | None,
) -> types.Diagnostic | None:
    """One finding as a Diagnostic; None when the settings turn it off."""
    d = diagnostic_json(f, lines=lines, encoding=str(codec.encoding), caps=caps, settings=settings, book=book,
                        version=version)
    return None if d is None else _CONVERTER.structure(d, types.Diagnostic)


def for_client(diags: Sequence[types.Diagnostic], caps: ClientCaps) -> list[types.Diagnostic]:
    """Drop fields the client did not declare (data) before sending; the server keeps them."""
    if caps.diagnostic_data:
        return list(diags)
    out = []
    for d in diags:
        out.append(types.Diagnostic(
            range=d.range, message=d.message, severity=d.severity, code=d.code,
            code_description=d.code_description, source=d.source, tags=d.tags,
            related_information=d.related_information,
        ))
    return out


def same_diagnostic(a: types.Diagnostic, b: types.Diagnostic) -> bool:
    return a.range == b.range and str(a.code) == str(b.code) and a.message == b.message
