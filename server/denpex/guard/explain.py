"""For compare mode: which of Denpex's static findings fall inside a callable whose graphed answer differed
from eager. Imports the source analyser, so it runs only where the whole of Denpex is importable and only
after a mismatch."""

from __future__ import annotations

import sys
from pathlib import Path


def findings_in(path: str, first: int, last: int) -> str:
    """'rule at file:line, ...' for the analyser's findings on lines first..last (1-based) of `path`,
    analysing that file together with the program's main script (where the capture usually is)."""
    from denpex.rulebook import load_rulebook
    from denpex.source.config import ScanConfig
    from denpex.source.engine.analyse import analyse_workspace
    from denpex.source.resolve.workspace import Workspace

    files = {str(Path(path).resolve())}
    main = sys.argv[0] if sys.argv and sys.argv[0].endswith(".py") else None
    if main and Path(main).is_file():
        files.add(str(Path(main).resolve()))
    ws = Workspace(roots=[str(Path(path).resolve().parent)])
    for f in sorted(files):
        try:
            ws.add_text(f, Path(f).read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
    results = analyse_workspace(ws, config=ScanConfig(), rulebook=load_rulebook([]))
    target = str(Path(path).resolve())
    hits = sorted({(f.start_line + 1, f.rule) for f in results.get(target, [])
                   if first <= f.start_line + 1 <= last})
    return ", ".join(f"{rule} at {target}:{line}" for line, rule in hits)
