"""`denpex merge A.json B.json ...`: one job's verdict from the summaries of its machines.

Each node runs `denpex diagnose /its/logs --format json > $(hostname).json` where its logs
live (srun, kubectl exec, pdsh); one merge then names the first failure of the whole job.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from denpex.errors import DenpexError


def register(subparsers: Any) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "merge",
        help="combine `diagnose --format json` summaries into the job's verdict",
        description=(
            "Combine the JSON summaries that `denpex diagnose ... --format json` wrote on several "
            "machines (or for several folders) into one verdict for the job: the first failure across "
            "all files, ordered by timestamps, with the suspect rank of a hang. The result is the one "
            "a single `denpex diagnose` over all the files would give. "
            "Exit 0: nothing known found; 1: a failure was diagnosed; 2: bad usage or unreadable input."
        ),
    )
    p.add_argument("summaries", nargs="+", metavar="SUMMARY.json",
                   help="summaries written by `denpex diagnose --format json` (or by an earlier merge)")
    p.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from denpex.commands.diagnose import emit_doc
    from denpex.logs.merge import files_of, merge_summaries

    files: list[dict[str, Any]] = []
    for name in args.summaries:
        p = Path(name)
        try:
            raw = p.read_bytes()
        except FileNotFoundError:
            raise DenpexError(f"{name}: no such file") from None
        except IsADirectoryError:
            raise DenpexError(f"{name}: is a directory (give the JSON summaries)") from None
        except OSError as exc:
            raise DenpexError(f"{name}: cannot read: {exc.strerror or exc}") from None
        try:
            doc = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise DenpexError(f"{name}: not JSON ({exc})".splitlines()[0]) from None
        files.extend(files_of(doc, name))
    merged = merge_summaries(files, list(args.summaries))
    emit_doc(merged, args.format, args.color)
    return 1 if merged["verdict"] is not None else 0
