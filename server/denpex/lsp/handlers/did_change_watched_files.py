"""`workspace/didChangeWatchedFiles`: a pyproject.toml reloads settings; a Python file on disk updates
the workspace index (an open document's buffer stays the truth); open documents are re-analysed."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from denpex.lsp.documents import path_of
from denpex.lsp.handlers.guard import guarded

if TYPE_CHECKING:
    from denpex.lsp.server import DenpexLanguageServer

METHOD = types.WORKSPACE_DID_CHANGE_WATCHED_FILES


@guarded(None)
def handle(ls: DenpexLanguageServer, params: types.DidChangeWatchedFilesParams) -> None:
    svc = ls.service
    settings_changed = False
    for change in params.changes:
        path = path_of(change.uri)
        if path is None:
            continue
        if Path(path).name == "pyproject.toml":
            folder = svc.settings.folder_of(path)
            if folder is not None:
                svc.settings.reload_project(folder)
                settings_changed = True
            continue
        if change.type != types.FileChangeType.Changed:
            svc.paths.invalidate()
        if change.uri in svc.documents.docs:
            continue  # the open buffer is the truth
        if change.type == types.FileChangeType.Deleted:
            svc.analyzer.update_file(path, None)
        else:
            with contextlib.suppress(OSError, UnicodeDecodeError):
                svc.analyzer.update_file(path, Path(path).read_text(encoding="utf-8"))
    if settings_changed:
        svc.settings_changed()
    ls.reanalyse_python()  # callees in other files may have changed
