"""`workspace/executeCommand`: `denpex.diagnose` (text -> diagnosis JSON + Markdown; the traceback's
frames become diagnostics on the workspace source lines they name)."""

from __future__ import annotations

from lsprotocol import types

from denpex.lsp import logs
from denpex.lsp.server import (
    DenpexLanguageServer,  # at run time: pygls reads the command's type hints
)

METHOD = types.WORKSPACE_EXECUTE_COMMAND


def diagnose(ls: DenpexLanguageServer, *args: object) -> dict[str, object]:
    svc = ls.service
    text, log_uri = logs.parse_arguments(args)
    try:
        diagnosis = logs.diagnose(text, svc.book)
        d = diagnosis.to_json()
        mapped = logs.map_frames(d, svc.paths, svc.open_paths())
        settings = svc.settings.for_path(mapped[0].path if mapped else None)

        def text_of(uri: str, path: str) -> list[str] | None:
            doc = svc.text_document(uri)
            return list(doc.lines) if doc is not None else logs.read_lines(path)

        codec = ls.workspace.position_codec
        per_uri = logs.frame_diagnostics(d, mapped, text_of, codec, svc.caps, settings, svc.book, log_uri)
    except Exception:
        ls.log_exception("denpex.diagnose failed")
        raise
    old = set(svc.traceback_diags)
    svc.traceback_diags = per_uri
    svc.traceback_generation += 1
    pulls = svc.caps.pull_diagnostics and svc.caps.diagnostic_refresh
    for uri in old | set(per_uri):
        if pulls and uri in svc.documents.docs:
            continue
        ls.publish(uri)
    if pulls:
        ls.spawn(ls.refresh_pull())
    return logs.command_result(diagnosis, mapped)


COMMANDS = {logs.COMMAND: diagnose}
