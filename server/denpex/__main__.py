import os
import sys

# `python -m denpex` puts the working directory first on sys.path (so does an empty PYTHONPATH entry,
# e.g. a trailing colon), and editors start `denpex serve` in the workspace: a workspace file named
# yaml.py, regex.py, pygls.py ... would be imported (run) in place of the library. Only the `denpex`
# package itself is already imported at this point.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != os.getcwd()]

from denpex.cli import console  # noqa: E402 - after the sys.path clean-up

console()
