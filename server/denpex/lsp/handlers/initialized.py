"""`initialized`: fetch per-folder settings, start indexing the workspace, register file watching."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from lsprotocol import types

from denpex import __version__
from denpex.lsp import boot
from denpex.lsp.handlers.guard import guarded_async

if TYPE_CHECKING:
    from denpex.lsp.server import DenpexLanguageServer

METHOD = types.INITIALIZED

WATCHERS = [types.FileSystemWatcher(glob_pattern="**/*.py"),
            types.FileSystemWatcher(glob_pattern="**/pyproject.toml")]


@guarded_async(None)
async def handle(ls: DenpexLanguageServer, params: types.InitializedParams) -> None:
    svc = ls.service
    await ls.fetch_configuration()
    svc.drain_setting_errors()
    ls.spawn(ls.populate_index())
    ls.log(
        f"denpex {__version__} on Python {sys.version.split()[0]} ({sys.executable}); "
        f"diagnostics: {'pull' if svc.caps.pull_diagnostics else 'push'}; "
        f"folders: {svc.settings.folders or '-'}"
    )
    for line in boot.REPORT:
        ls.log(line, types.MessageType.Log)
    boot.REPORT.clear()
    if svc.caps.watched_files_dynamic:
        try:
            await ls.client_register_capability_async(types.RegistrationParams(registrations=[
                types.Registration(
                    id="denpex-watch",
                    method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                    register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=WATCHERS),
                )
            ]))
        except Exception as exc:
            ls.log(f"file watching not registered: {exc!r}", types.MessageType.Log)
