"""Source analyser: CUDA-graph capture regions in Python source, their hazards and fixes.

Public API (stable; see denpex.source.engine.analyse for the details):

    analyse_source(text, path, *, config=None, workspace=None, rulebook=None) -> list[SourceFinding]
    analyse_workspace(workspace, *, config=None, rulebook=None) -> dict[str, list[SourceFinding]]
    Document(path, text).apply_edits([...]); .analyse(...)
    apply_fixes(text, findings, *, unsafe=False) -> str
    Workspace(roots=()).add_file / update_file / edit_file / remove_file
    ScanConfig (reading [tool.denpex] into one is denpex.config.project's)
    SourceFinding, Fix, TextEdit, CaptureSite
"""

from denpex.source.config import ScanConfig
from denpex.source.engine.analyse import (
    Document,
    analyse_source,
    analyse_workspace,
    apply_edits,
    apply_fixes,
)
from denpex.source.model import CaptureSite, Fix, SourceFinding, TextEdit
from denpex.source.resolve.workspace import Workspace

__all__ = [
    "CaptureSite", "Document", "Fix", "ScanConfig", "SourceFinding", "TextEdit", "Workspace",
    "analyse_source", "analyse_workspace", "apply_edits", "apply_fixes",
]
