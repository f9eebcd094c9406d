"""Runs the Denpex CLI (normally `serve`) from the libraries bundled inside the VS Code extension.

The extension starts it as `python3 -I denpex_server.py serve`. At build time
`scripts/bundle-python.sh` installs the repository's wheel and its dependencies with
`pip install --target bundled/libs/py3XX` for each supported Python version; this script puts
the directory matching the running interpreter first on sys.path, so nothing needs to be
installed into the user's Python. Any other arguments are passed to the CLI unchanged
(`denpex_server.py diagnose train.log`).
"""

from __future__ import annotations

import os
import sys


def main() -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    libs = os.path.join(os.path.dirname(here), "libs", f"py{sys.version_info[0]}{sys.version_info[1]}")
    if not os.path.isdir(libs):
        available = sorted(
            n for n in os.listdir(os.path.join(os.path.dirname(here), "libs")) if n.startswith("py")
        ) if os.path.isdir(os.path.join(os.path.dirname(here), "libs")) else []
        print(
            f"denpex: the bundled server has no libraries for Python "
            f"{sys.version_info[0]}.{sys.version_info[1]} (bundled: {', '.join(available) or 'none'}). "
            "Set denpex.interpreter or denpex.serverPath in the settings.",
            file=sys.stderr,
        )
        return 3
    sys.path.insert(0, libs)
    from denpex.cli import main as cli_main  # noqa: PLC0415 - after the sys.path change on purpose

    return int(cli_main(sys.argv[1:]) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
