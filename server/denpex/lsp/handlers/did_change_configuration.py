"""`workspace/didChangeConfiguration`: new editor settings (pushed, or fetched through
`workspace/configuration` when the notification carries none); everything is re-analysed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from denpex.lsp.documents import path_of
from denpex.lsp.handlers.guard import guarded_async
from denpex.lsp.settings import unwrap_editor_settings

if TYPE_CHECKING:
    from denpex.lsp.server import DenpexLanguageServer

METHOD = types.WORKSPACE_DID_CHANGE_CONFIGURATION


@guarded_async(None)
async def handle(ls: DenpexLanguageServer, params: types.DidChangeConfigurationParams) -> None:
    svc = ls.service
    glob, per_folder = unwrap_editor_settings(params.settings)
    if glob or per_folder:
        svc.settings.set_global(glob)
        for uri, values in per_folder.items():
            p = path_of(uri) if "://" in uri else uri
            if p is not None:
                svc.settings.set_folder(p, values)
    else:
        await ls.fetch_configuration()
    svc.settings.for_path(None)  # validate now, so errors are reported even with no document open
    svc.settings_changed()
    ls.reanalyse_all()
