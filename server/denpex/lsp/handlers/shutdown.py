"""`shutdown`: cancel pending analyses."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from denpex.lsp.handlers.guard import guarded

if TYPE_CHECKING:
    from denpex.lsp.server import DenpexLanguageServer

METHOD = types.SHUTDOWN


@guarded(None)
def handle(ls: DenpexLanguageServer, params: None) -> None:
    for st in ls.service.documents.docs.values():
        if st.pending is not None:
            st.pending.cancel()
