"""The early start-up's first diagnostics compile each tree-sitter query once: no two query texts compiled on that
path differ only in their capture names (each Query() costs 1-4 ms of a ~85 ms start, most of it tree-sitter's
analysis of the grammar, repeated per compile; two such texts would be one query compiled twice)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import functools, io, json, sys
from pathlib import Path
from denpex.source.syntax import parse
seen = []
compile_query = parse.compile_query.__wrapped__
def recording(source):
    seen.append(source)
    return compile_query(source)
parse.compile_query = functools.cache(recording)  # before the modules that import it by name
from denpex import startcode_build
from denpex.lsp import boot
from denpex.lsp.stdio import BoundedStdin
folder = Path(sys.argv[1])
folder.mkdir()
doc = folder / "train.py"
doc.write_text(startcode_build.DOCUMENT)
out = io.BytesIO()
boot.Early(boot.Frames(BoundedStdin(io.BytesIO(startcode_build.session(folder, doc)))), boot.Out(out)).run()
assert b"publishDiagnostics" in out.getvalue()
print(json.dumps(seen))
"""


def test_the_first_diagnostics_compile_no_query_twice(tmp_path: Path) -> None:
    env = {**os.environ, "DENPEX_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path / "project")], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    seen: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(seen) >= 3  # the path does run queries
    by_shape: dict[str, list[str]] = {}
    for q in seen:
        by_shape.setdefault(re.sub(r"@[\w.]+", "@_", q), []).append(q)
    assert not {k: v for k, v in by_shape.items() if len(v) > 1}
