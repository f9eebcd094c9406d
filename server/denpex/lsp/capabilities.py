"""What the client can do, resolved once at `initialize` (ruff's ResolvedClientCapabilities)."""

from __future__ import annotations

from dataclasses import dataclass

from lsprotocol import types
from pygls.capabilities import get_capability


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

    @classmethod
    def resolve(cls, caps: types.ClientCapabilities) -> ClientCaps:
        def has(path: str) -> bool:
            return bool(get_capability(caps, path, False))

        resolve_props = get_capability(caps, "text_document.code_action.resolve_support.properties", [])
        hover_formats = get_capability(caps, "text_document.hover.content_format", []) or []
        return cls(
            pull_diagnostics=get_capability(caps, "text_document.diagnostic", None) is not None,
            diagnostic_refresh=has("workspace.diagnostics.refresh_support"),
            code_action_literals=get_capability(
                caps, "text_document.code_action.code_action_literal_support", None
            ) is not None,
            code_action_resolve="edit" in (resolve_props or []),
            code_action_preferred=has("text_document.code_action.is_preferred_support"),
            document_changes=has("workspace.workspace_edit.document_changes"),
            code_description=has("text_document.publish_diagnostics.code_description_support"),
            diagnostic_data=has("text_document.publish_diagnostics.data_support"),
            related_information=has("text_document.publish_diagnostics.related_information"),
            hover_markdown=types.MarkupKind.Markdown in hover_formats,
            workspace_configuration=has("workspace.configuration"),
            watched_files_dynamic=has("workspace.did_change_watched_files.dynamic_registration"),
            apply_edit=has("workspace.apply_edit"),
        )
