"""`initialize`: the client's capabilities, its settings and workspace folders; pull diagnostics are
registered only for a client that pulls."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from denpex.lsp.capabilities import ClientCaps
from denpex.lsp.documents import path_of
from denpex.lsp.handlers import diagnostic
from denpex.lsp.handlers.guard import guarded
from denpex.lsp.settings import unwrap_editor_settings

if TYPE_CHECKING:
    from denpex.lsp.server import DenpexLanguageServer

METHOD = types.INITIALIZE


@guarded(None)
def handle(ls: DenpexLanguageServer, params: types.InitializeParams) -> None:
    svc = ls.service
    svc.caps = ClientCaps.resolve(params.capabilities)
    glob, per_folder = unwrap_editor_settings(params.initialization_options)
    svc.settings.set_global(glob)
    folders = [p for p in (path_of(f.uri) for f in params.workspace_folders or []) if p]
    if not folders and params.root_uri:
        root = path_of(params.root_uri)
        folders = [root] if root else []
    svc.set_folders(folders)
    for uri, values in per_folder.items():
        p = path_of(uri) if "://" in uri else uri
        if p is not None:
            svc.settings.set_folder(p, values)
    if svc.caps.pull_diagnostics:
        ls.feature(diagnostic.METHOD, diagnostic.OPTIONS)(diagnostic.handle)
