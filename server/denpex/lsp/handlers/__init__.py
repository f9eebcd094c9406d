"""One module per LSP method (the layout of ruff's `server/api/requests/`): each holds `METHOD`,
`handle` and, where the method has them, its registration `OPTIONS`.

To add a method: write its module, add it to ROUTES. `diagnostic` (pull) is not in ROUTES: it is
registered at `initialize`, and only for a client that pulls diagnostics.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from denpex.lsp.handlers import (
    code_action,
    code_action_resolve,
    did_change,
    did_change_configuration,
    did_change_watched_files,
    did_change_workspace_folders,
    did_close,
    did_open,
    did_save,
    execute_command,
    hover,
    initialize,
    initialized,
    notebook_did_change,
    notebook_did_close,
    notebook_did_open,
    notebook_did_save,
    shutdown,
)


@dataclass(frozen=True)
class Route:
    method: str
    handler: Callable[..., object]
    options: object = None


ROUTES: tuple[Route, ...] = (
    Route(initialize.METHOD, initialize.handle),
    Route(initialized.METHOD, initialized.handle),
    Route(shutdown.METHOD, shutdown.handle),
    Route(did_open.METHOD, did_open.handle),
    Route(did_change.METHOD, did_change.handle),
    Route(did_save.METHOD, did_save.handle, did_save.OPTIONS),
    Route(did_close.METHOD, did_close.handle),
    Route(did_change_configuration.METHOD, did_change_configuration.handle),
    Route(did_change_watched_files.METHOD, did_change_watched_files.handle),
    Route(did_change_workspace_folders.METHOD, did_change_workspace_folders.handle),
    Route(hover.METHOD, hover.handle),
    Route(code_action.METHOD, code_action.handle, code_action.OPTIONS),
    Route(code_action_resolve.METHOD, code_action_resolve.handle),
    Route(notebook_did_open.METHOD, notebook_did_open.handle),
    Route(notebook_did_change.METHOD, notebook_did_change.handle),
    Route(notebook_did_save.METHOD, notebook_did_save.handle),
    Route(notebook_did_close.METHOD, notebook_did_close.handle),
)

COMMANDS = execute_command.COMMANDS
