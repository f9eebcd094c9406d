"""`workspace/didChangeWorkspaceFolders`: new folder set, re-indexed and re-analysed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from denpex.lsp.documents import path_of
from denpex.lsp.handlers.guard import guarded

if TYPE_CHECKING:
    from denpex.lsp.server import DenpexLanguageServer

METHOD = types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS


@guarded(None)
def handle(ls: DenpexLanguageServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
    svc = ls.service
    current = set(svc.settings.folders)
    for f in params.event.removed:
        current.discard(path_of(f.uri) or "")
    for f in params.event.added:
        p = path_of(f.uri)
        if p:
            current.add(p)
    svc.set_folders(sorted(current))
    ls.spawn(ls.populate_index())
    svc.generation += 1
    ls.reanalyse_all()
