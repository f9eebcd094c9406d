"""Library mode (docs/library-mode.md): a library's own tree, with no capture site in it, gets its captured surface
from a preset (`functions` globs, or `subclass_of` matching the framework's own classes) or from
`capture-entry-points` globs. Each workspace of tests/data/library/ has every `# ruleid:` line flagged, at warning
level, with a message naming what makes it captured, and no `# ok:` line flagged; the same TransformerEngine file
under another package name gets nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from denpex.source.capture import library
from denpex.source.capture.entrypoints import load_preset
from denpex.source.resolve.workspace import module_names
from tests.source.reach_score import REPO, annotations_in, describe, score

DATA = REPO / "tests" / "data" / "library"
TREES = {  # workspace -> what its findings' messages must name
    "transformer_engine": "captured by users through the TransformerEngine preset",
    "flashinfer": "captured by users through the FlashInfer preset",
    "flash_attention": "captured by users through the flash-attention preset",
    "glob": "captured by users through capture-entry-points `mylib.layers:*.forward`",
    "megatron": "captured by Megatron-LM: megatron/core/optimizer/optimizer_cuda_graph.py",
    # NeMo's own decoders' graphs, and users' graphs around the preprocessor
    "nemo": "captured by NeMo: nemo/collections/asr/parts/submodules/transducer_decoding/rnnt_label_looping.py"
            "|captured by users through the NeMo preset: the user's torch.cuda.graph around the ASR preprocessor",
}


def _scan(root: Path, env: dict[str, str] | None = None) -> list[dict[str, object]]:
    r = subprocess.run([sys.executable, "-m", "denpex", "scan", ".", "--format", "json"], cwd=root,
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode in (0, 1), r.stderr
    return list(json.loads(r.stdout)["diagnostics"])


@pytest.mark.parametrize("tree", sorted(TREES))
def test_library_tree(tree: str) -> None:
    from tests.source.reach_score import Finding

    root = DATA / tree
    diags = _scan(root)
    found = [Finding(str(d["path"]), int(str(d["line"])), str(d["rule"]), str(d["severity"])) for d in diags]
    s = score(tree, annotations_in(root), found)
    assert s.hazards, "the workspace annotates no hazard"
    assert not s.missed, "missed: " + "; ".join(f"{p}:{ln} {r}" for p, ln, r in sorted(s.missed))
    assert not s.false_positives, "false: " + "; ".join(describe(f) for f in s.false_positives)
    assert all(d["severity"] == "warning" for d in diags), [(d["line"], d["severity"]) for d in diags]
    wanted = TREES[tree].split("|")
    assert all(any(w in str(d["message"]) for w in wanted) for d in diags), [d["message"] for d in diags]


@pytest.mark.parametrize("tree", ["megatron", "nemo", "transformer_engine", "flashinfer"])
def test_lazily_parsed_files_give_the_same_findings(tree: str) -> None:
    """Every file parsed lazily (chunks.py): the class matchers ask for the file's classes, the globs for the
    definitions they name, so the findings are those of whole-file parses."""
    import os

    whole = _scan(DATA / tree)
    assert whole
    assert _scan(DATA / tree, {**os.environ, "DENPEX_LAZY_MIN_BYTES": "0"}) == whole


def test_the_same_code_under_another_package_is_not_the_library() -> None:
    assert _scan(DATA / "not_the_library") == []


def test_module_globs_name_a_package_and_what_is_under_it() -> None:
    names = module_names("transformer_engine/pytorch/module/linear.py")
    assert library.module_matches("transformer_engine.pytorch.module", names)
    assert library.module_matches("transformer_engine.pytorch.*", names)
    assert not library.module_matches("transformer_engine.pytorch.attention", names)
    assert not library.module_matches("transformer_engine.pytorch.module.base", names)
    assert library.words("flashinfer:*Wrapper.run") == ("Wrapper",)
    assert library.words("te.module:*.forward") == ("forward",)
    assert library.words("mylib.layers:Gate.forward") == ("Gate",)
    assert library.parse("no_colon") is None


def test_configured_glob_is_a_warning_and_an_exact_entry_stays_an_error(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "engine.py").write_text(
        "import torch\n\n\nclass Engine:\n    def decode(self, x):\n        return x / x.max().item()\n")
    (tmp_path / "pyproject.toml").write_text('[tool.denpex]\ncapture-entry-points = ["pkg.*:Eng*.dec*"]\n')
    assert [(d["line"], d["severity"]) for d in _scan(tmp_path)] == [(6, "warning")]
    (tmp_path / "pyproject.toml").write_text('[tool.denpex]\ncapture-entry-points = ["pkg.engine:Engine.decode"]\n')
    assert [(d["line"], d["severity"]) for d in _scan(tmp_path)] == [(6, "error")]
    (tmp_path / "pyproject.toml").write_text('[tool.denpex]\ncapture-entry-points = ["other.*:*.decode"]\n')
    assert _scan(tmp_path) == []


def test_preset_functions_are_checked_at_load(tmp_path: Path) -> None:
    from denpex.errors import DenpexError

    bad = tmp_path / "bad.yaml"
    bad.write_text("framework: X\ndetect: [x]\nentry_points:\n  - functions: [no_object]\n")
    with pytest.raises(DenpexError, match="module:object"):
        load_preset(bad)
    ok = tmp_path / "ok.yaml"
    ok.write_text("framework: X\ndetect: [x]\nentry_points:\n  - functions: ['x.mod:*.forward']\n")
    (ep,) = load_preset(ok).entry_points
    assert ep.users and ep.conditional and "captured by users through the X preset" in ep.note()


def test_an_overload_stub_is_not_the_function(tmp_path: Path) -> None:
    """flashinfer's `run` and `single_decode_with_kv_cache` are declared with `@overload` stubs before the
    implementation: the glob selects the implementation (a stub's `...` body holds nothing)."""
    (tmp_path / "flashinfer").mkdir()
    (tmp_path / "flashinfer" / "__init__.py").write_text("")
    (tmp_path / "flashinfer" / "decode.py").write_text(
        "\"\"\"flashinfer decode.\"\"\"\n\nfrom typing import overload\n\nimport torch\n\n\n"
        "@overload\ndef single_decode_with_kv_cache(q: torch.Tensor) -> torch.Tensor: ...\n\n\n"
        "def single_decode_with_kv_cache(q):\n    return q / q.max().item()\n\n\n"
        "class BatchDecodeWithPagedKVCacheWrapper:\n"
        "    @overload\n    def run(self, q: torch.Tensor) -> torch.Tensor: ...\n\n"
        "    def run(self, q):\n        return q * float(q.sum())\n")
    assert [(d["line"], d["rule"], d["severity"]) for d in _scan(tmp_path)] == [
        (13, "capture-item-sync", "warning"), (21, "capture-item-sync", "warning")]


def test_the_prefilter_knows_a_library_module_by_its_path() -> None:
    """A TE ops module imports only relatively and never spells `transformer_engine`: with its path the prefilter
    lets it through; from the text alone it cannot tell it from a user's module with a `forward`, and a user's
    module is not let through for the TE globs."""
    from denpex.source.capture.entrypoints import may_have_entries

    text = "from ..op import BasicOperation\n\n\nclass BasicLinear(BasicOperation):\n    def op_forward(self, x):\n" \
           "        return x\n"
    assert may_have_entries(text, frozenset(), "transformer_engine/pytorch/ops/basic/basic_linear.py")
    assert not may_have_entries(text, frozenset(), "myproject/ops/basic_linear.py")
    assert not may_have_entries(text, frozenset())
    assert may_have_entries("import transformer_engine\n" + text, frozenset())
