"""`denpex collect`: the evidence bundle of `denpex run`, made by hand."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from denpex.errors import DenpexError


def register(subparsers: Any) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "collect",
        help="keep the evidence of a failed run in a bundle folder",
        description=(
            "Make an evidence bundle before anyone restarts the job: a copy of LOG as output.log, "
            "nvidia-smi, python -m torch.utils.collect_env, the CUDA/NCCL/torch environment "
            "(secrets redacted) and the diagnosis. `denpex diagnose BUNDLE` reads it back."
        ),
    )
    p.add_argument("log", nargs="?", metavar="LOG", help="the failed run's output (optional)")
    p.add_argument("--out", metavar="DIR", help="parent folder of the bundle (default: current folder)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    # heavy imports here: `denpex --help` and other subcommands should not pay for them
    from denpex.logs.bundle import new_bundle_dir, write_bundle
    from denpex.logs.diagnose_file import diagnose_path

    log = Path(args.log) if args.log else None
    if log is not None and not log.is_file():
        raise DenpexError(f"{args.log}: no such file")
    diagnosis = diagnose_path(log).to_json() if log is not None else None
    folder = new_bundle_dir(args.out)
    write_bundle(folder, log, {"command": None, "exit_code": None, "log": str(log) if log else None},
                 diagnosis)
    print(folder)
    if log is None:
        print("denpex: no log given; the bundle holds the machine's state only", file=sys.stderr)
    return 0
