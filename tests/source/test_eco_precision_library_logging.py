"""A print or a log call in library code that the library's users capture (library mode: a preset's `functions`, a
`capture-entry-points` glob) is the library's own diagnostic, not a side effect of the user's graph: running once at
capture changes nothing the user captured, and they cannot change it. TransformerEngine's backend selection
(`get_attention_backend`, reached from DotProductAttention.forward) gave 120 such warnings, flashinfer 6
(bench/ecosystem/verdicts.tsv, false). The same code captured by the project itself stays warned (but for debug
records, which are reported nowhere), and other side effects under library mode (appending to a module-level
list) stay warned."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

LAYERS = """\
import logging

import torch

logger = logging.getLogger(__name__)
_SEEN = []


class Layer(torch.nn.Module):
    def forward(self, x):
        logger.info("layer with %d features", x.shape[-1])
        print("running the layer")
        _SEEN.append(1)
        return x * 2
"""

OWN_CAPTURE = """\
import torch
from mylib.layers import Layer

layer = Layer()
x = torch.randn(4, device="cuda")
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = layer(x)
"""


def _scan(root: Path) -> set[tuple[str, int, str, str]]:
    r = subprocess.run([sys.executable, "-m", "denpex", "scan", ".", "--format", "json"], cwd=root,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode in (0, 1), r.stderr
    return {(Path(str(d["path"])).name, int(d["line"]), str(d["rule"]), str(d["severity"]))
            for d in json.loads(r.stdout)["diagnostics"]}


def _tree(root: Path, pyproject: str, extra: dict[str, str]) -> Path:
    (root / "mylib").mkdir()
    (root / "mylib" / "__init__.py").write_text("")
    (root / "mylib" / "layers.py").write_text(LAYERS)
    (root / "pyproject.toml").write_text(pyproject)
    for name, text in extra.items():
        (root / name).write_text(text)
    return root


def test_library_logging_and_print_are_not_reported(tmp_path: Path) -> None:
    found = _scan(_tree(tmp_path, '[tool.denpex]\ncapture-entry-points = ["mylib.layers:*.forward"]\n', {}))
    assert ("layers.py", 11, "replay-python-side-effects", "warning") not in found, found
    assert ("layers.py", 12, "replay-python-side-effects", "warning") not in found, found
    # the append to a module-level list outlives the capture: still a side effect of the user's graph
    assert ("layers.py", 13, "replay-python-side-effects", "warning") in found, found


def test_the_projects_own_capture_keeps_them(tmp_path: Path) -> None:
    found = _scan(_tree(tmp_path, "[project]\nname = 'mylib'\n", {"train.py": OWN_CAPTURE}))
    assert {("layers.py", n, "replay-python-side-effects", "warning") for n in (11, 12, 13)} <= found, found


def test_a_debug_record_under_the_projects_own_capture_is_not_reported(tmp_path: Path) -> None:
    # a debug record traces what the code decided (TransformerEngine's get_attention_backend: 110 of the 124
    # logging warnings its own test captures gave, all false); an info record stays warned (above)
    root = _tree(tmp_path, "[project]\nname = 'mylib'\n", {"train.py": OWN_CAPTURE})
    layers = root / "mylib" / "layers.py"
    layers.write_text(LAYERS.replace("logger.info(", "logger.debug("))
    found = _scan(root)
    assert ("layers.py", 11, "replay-python-side-effects", "warning") not in found, found
    assert ("layers.py", 12, "replay-python-side-effects", "warning") in found, found
