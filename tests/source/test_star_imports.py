"""Names re-exported by `from .m import *` (issue 19, reach: TransformerEngine's `cpp_extensions/__init__.py` re-exports
`general_gemm` from `.gemm` this way, and `from ..cpp_extensions import general_gemm` is how its modules call it)."""

from __future__ import annotations

from denpex.source.config import ScanConfig
from denpex.source.engine.analyse import analyse_source, analyse_workspace
from denpex.source.resolve.workspace import Workspace

GEMM = "def general_gemm(x):\n    return x.max().item()\n\n\ndef _private(x):\n    return x.sum().item()\n"


def _flagged(init: str, call: str) -> set[tuple[str, int, str]]:
    main = ("import torch\nfrom pkg.ops import general_gemm\nfrom pkg import ops\n\n\n"
            "x = torch.ones(4, device='cuda')\n"
            "g = torch.cuda.CUDAGraph()\n"
            "with torch.cuda.graph(g):\n"
            f"    y = {call}\n"
            "g.replay()\n")
    ws = Workspace(["/w"])
    ws.add_file("/w/pkg/__init__.py", "")
    ws.add_file("/w/pkg/ops/__init__.py", init)
    ws.add_file("/w/pkg/ops/gemm.py", GEMM)
    ws.add_file("/w/main.py", main)
    found = analyse_workspace(ws, config=ScanConfig())
    return {(p.rsplit("/", 1)[-1], f.start_line + 1, f.rule) for p, fs in found.items() for f in fs}


def test_a_name_re_exported_by_a_star_import_is_reached() -> None:
    assert ("gemm.py", 2, "capture-item-sync") in _flagged("from .gemm import *\n", "general_gemm(x)")
    assert ("gemm.py", 2, "capture-item-sync") in _flagged("from pkg.ops.gemm import *\n", "general_gemm(x)")


def test_a_module_attribute_through_a_star_import_is_reached() -> None:
    assert ("gemm.py", 2, "capture-item-sync") in _flagged("from .gemm import *\n", "ops.general_gemm(x)")


def test_a_star_import_binds_no_private_name() -> None:
    assert not any(p == "gemm.py" for p, _l, _r in _flagged("from .gemm import *\n", "ops._private(x)"))


def test_without_the_star_import_nothing_is_reached() -> None:
    assert not any(p == "gemm.py" for p, _l, _r in _flagged("import os\n", "general_gemm(x)"))


def test_a_star_import_after_unparsed_defs_of_a_large_init_is_read() -> None:
    """A lazily parsed `__init__.py` (over chunks.MIN_SKIPPED_BYTES of defs no capture spells) still holds its star
    import after them: the name is found as a whole-file parse finds it."""
    filler = "".join(f"def helper_{i}(a, b):\n    return a + b + {i}\n\n\n" for i in range(900))
    init = filler + "from .gemm import *\n"
    for lazy in (True, False):
        main = ("import torch\nfrom pkg.ops import general_gemm\n\n\n"
                "x = torch.ones(4, device='cuda')\ng = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n"
                "    y = general_gemm(x)\ng.replay()\n")
        ws = Workspace(["/w"], lazy=lazy)
        ws.add_file("/w/pkg/__init__.py", "")
        ws.add_file("/w/pkg/ops/__init__.py", init)
        ws.add_file("/w/pkg/ops/gemm.py", GEMM)
        ws.add_file("/w/main.py", main)
        src = ws.source("/w/pkg/ops/__init__.py")
        assert src is not None and (src.lazy is not None) == lazy
        if src.lazy is not None:  # the defs are left out, the import statement is not (names.ImportMap.star_modules)
            assert not all(src.lazy.parsed) and src.lazy.parsed[-1]
        # the language server's path: the edited file analysed against the (lazily parsed) workspace
        got = analyse_source(ws.text("/w/pkg/ops/gemm.py") or "", "/w/pkg/ops/gemm.py", config=ScanConfig(),
                             workspace=ws)
        assert [(f.start_line + 1, f.rule) for f in got] == [(2, "capture-item-sync")], lazy
