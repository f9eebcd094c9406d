"""One log file diagnosed as `denpex diagnose FILE` does it (`diagnose_path`): the file's writer from its path
(layout.py), its summary's verdict (summary.py), and its first error line when no rule names an initiating
failure. Apart from diagnose.py, which summary.py builds on, so that the verdict's module never reaches back
into the summaries."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from denpex.errors import DenpexError
from denpex.logs.diagnose import Diagnosis
from denpex.logs.layout import source_of
from denpex.logs.summary import summarise
from denpex.rulebook import RuleBook


def diagnose_path(
    path: str | Path,
    book: RuleBook | None = None,
    context: int = 100,
    progress: Callable[[int], None] | None = None,
) -> Diagnosis:
    """Diagnose one log file (or a bundle's output.log) as `denpex diagnose FILE` does: who wrote it comes
    from its path as it would in its folder (torchrun --log-dir, Slurm per-task files, per-rank files),
    and its first error line is looked for when no rule names an initiating failure."""
    p = Path(path)
    if p.is_dir():
        bundle_log = p / "output.log"
        if bundle_log.is_file():
            p = bundle_log  # a bundle made by `denpex run` / `denpex collect`
        else:
            raise DenpexError(f"{path}: is a directory (give a log file, '-' for stdin, or a denpex bundle)")
    src = source_of(p, str(path))
    return summarise(src, book, context, progress=progress, first_error=True)[1]
