import os
import sys

# `python -m denpex` puts the working directory first on sys.path, and editors start `denpex serve`
# in the workspace: a workspace file named yaml.py, regex.py, pygls.py ... would be imported (run) in
# place of the library. Only the `denpex` package itself is already imported at this point.
if sys.path and os.path.abspath(sys.path[0] or os.curdir) == os.getcwd():
    del sys.path[0]

from denpex.cli import main

raise SystemExit(main())
