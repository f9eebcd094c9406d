"""What the client can do, resolved once at `initialize` (ruff's ResolvedClientCapabilities).

Read from the capabilities' JSON, so the start-up path (boot.py) can resolve them before pygls and
lsprotocol are imported; `resolve` does the same for pygls' structured value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lsprotocol import types


def _get(caps: Mapping[str, object], path: str) -> object:
    node: object = caps
    for part in path.split("."):
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return node


@dataclass(frozen=True)
class ClientCaps:
    pull_diagnostics: bool = False
    diagnostic_refresh: bool = False
    code_action_literals: bool = False
    code_action_resolve: bool = False
    code_action_preferred: bool = False
    document_changes: bool = False
    code_description: bool = False
    diagnostic_data: bool = False
    related_information: bool = False
    hover_markdown: bool = False
    workspace_configuration: bool = False
    watched_files_dynamic: bool = False
    apply_edit: bool = False
    work_done_progress: bool = False  # window/workDoneProgress/create and $/progress shown

    @classmethod
    def from_json(cls, caps: object) -> ClientCaps:
        """From `InitializeParams.capabilities` as the client sent it (camelCase JSON)."""
        if not isinstance(caps, Mapping):
            return cls()

        def has(path: str) -> bool:
            return bool(_get(caps, path))

        def listed(path: str, value: str) -> bool:
            got = _get(caps, path)
            return isinstance(got, list) and value in got

        return cls(
            pull_diagnostics=_get(caps, "textDocument.diagnostic") is not None,
            diagnostic_refresh=has("workspace.diagnostics.refreshSupport"),
            code_action_literals=_get(caps, "textDocument.codeAction.codeActionLiteralSupport") is not None,
            code_action_resolve=listed("textDocument.codeAction.resolveSupport.properties", "edit"),
            code_action_preferred=has("textDocument.codeAction.isPreferredSupport"),
            document_changes=has("workspace.workspaceEdit.documentChanges"),
            code_description=has("textDocument.publishDiagnostics.codeDescriptionSupport"),
            diagnostic_data=has("textDocument.publishDiagnostics.dataSupport"),
            related_information=has("textDocument.publishDiagnostics.relatedInformation"),
            hover_markdown=listed("textDocument.hover.contentFormat", "markdown"),
            workspace_configuration=has("workspace.configuration"),
            watched_files_dynamic=has("workspace.didChangeWatchedFiles.dynamicRegistration"),
            apply_edit=has("workspace.applyEdit"),
            work_done_progress=has("window.workDoneProgress"),
        )

    @classmethod
    def resolve(cls, caps: types.ClientCapabilities) -> ClientCaps:
        from lsprotocol.converters import get_converter

        return cls.from_json(get_converter().unstructure(caps))
