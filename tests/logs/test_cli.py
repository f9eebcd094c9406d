"""The CLI as a user runs it: a real process, real files, real exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

EXAMPLES = REPO / "examples"
E900 = "torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing"


def denpex(*args: str, stdin: bytes | None = None, cwd: Path | None = None,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "denpex", *args], input=stdin, capture_output=True, timeout=120,
        cwd=cwd, env=env, check=False,
    )


def test_version_and_help_for_every_subcommand() -> None:
    r = denpex("--version")
    assert r.returncode == 0 and r.stdout.startswith(b"denpex ")
    r = denpex("--help")
    assert r.returncode == 0
    for sub in ("diagnose", "merge", "run", "collect", "rules", "explain"):
        assert sub.encode() in r.stdout
        h = denpex(sub, "--help")
        assert h.returncode == 0 and b"usage: denpex " + sub.encode() in h.stdout, sub


def test_diagnose_example_json_schema() -> None:
    r = denpex("diagnose", str(EXAMPLES / "a1_rank1_dies.log"), "--format", "json")
    assert r.returncode == 1, r.stderr
    out = json.loads(r.stdout)
    assert out["schema"] == "denpex.diagnosis/1"
    v = out["verdict"]
    for key in ("rule", "title", "line", "text", "rank", "node", "process", "confidence", "root_cause",
                "fix", "verify", "context", "frames", "alternatives"):
        assert key in v, key
    assert v["rank"] == 1 and v["confidence"] in ("high", "medium", "low")
    assert v["context"]["end_line"] == v["line"] and v["context"]["start_line"] <= v["line"]
    assert v["frames"][-1] == {**v["frames"][-1], "path": "/workspace/gpu/multi/a_item_capture_rank1.py", "line": 40}
    lines = (EXAMPLES / "a1_rank1_dies.log").read_text().splitlines()
    assert lines[v["line"] - 1] == v["text"]
    for f in out["findings"]:
        assert {"rule", "role", "line", "text", "rank", "count"} <= f.keys()


def test_context_option_limits_lines_kept() -> None:
    r = denpex("diagnose", str(EXAMPLES / "01_item_in_capture.log"), "--format", "json", "--context", "3")
    v = json.loads(r.stdout)["verdict"]
    assert len(v["context"]["lines"]) == 3 and v["context"]["start_line"] == v["line"] - 3


def test_markdown_and_text_formats() -> None:
    md = denpex("diagnose", str(EXAMPLES / "01_item_in_capture.log"), "--format", "markdown")
    assert md.returncode == 1 and b"### Fix" in md.stdout and b"### Verify" in md.stdout
    txt = denpex("diagnose", str(EXAMPLES / "01_item_in_capture.log"))
    assert b"\x1b[" not in txt.stdout, "no colour when stdout is not a TTY"
    assert txt.stdout.splitlines()[0].startswith("✖".encode())


def test_stdin_input() -> None:
    r = denpex("diagnose", "-", "--format", "json", stdin=(EXAMPLES / "01_item_in_capture.log").read_bytes())
    assert r.returncode == 1 and json.loads(r.stdout)["verdict"]["line"] == 8


def test_nothing_known_exits_zero() -> None:
    r = denpex("diagnose", "-", stdin=b"all good\n")
    assert r.returncode == 0 and b"No known" in r.stdout


@pytest.mark.parametrize("kind", ["missing", "directory", "unreadable", "bad-context", "bad-rules"])
def test_bad_usage_is_one_line_and_exit_2(tmp_path: Path, kind: str) -> None:
    args: list[str]
    if kind == "missing":
        args = ["diagnose", str(tmp_path / "nope.log")]
    elif kind == "directory":
        args = ["diagnose", str(tmp_path)]
    elif kind == "unreadable":
        p = tmp_path / "secret.log"
        p.write_text("x")
        p.chmod(0)
        if os.access(p, os.R_OK):
            pytest.skip("running as a user who can read mode-000 files (root)")
        args = ["diagnose", str(p)]
    elif kind == "bad-context":
        args = ["diagnose", str(EXAMPLES / "01_item_in_capture.log"), "--context", "-1"]
    else:
        d = tmp_path / "myrules"
        d.mkdir()
        (d / "broken.yaml").write_text("id: Not-Kebab\ncode: DPX999\n")
        args = ["diagnose", str(EXAMPLES / "01_item_in_capture.log"), "--rules", str(d)]
    r = denpex(*args)
    assert r.returncode == 2, r.stderr
    err = r.stderr.decode()
    assert err.count("\n") == 1 and err.startswith("denpex: error:"), err
    assert "Traceback" not in err
    if kind == "bad-rules":
        assert "broken.yaml" in err and "id" in err


def test_binary_input_gives_clear_result(tmp_path: Path) -> None:
    p = tmp_path / "core.bin"
    p.write_bytes(bytes(range(256)) * 4000 + E900.encode() + b"\n" + os.urandom(10000))
    r = denpex("diagnose", str(p), "--format", "json")
    assert r.returncode in (0, 1) and b"Traceback" not in r.stderr
    out = json.loads(r.stdout)
    assert any("binary" in w for w in out["warnings"])


def test_empty_and_truncated_inputs(tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    r = denpex("diagnose", str(empty))
    assert r.returncode == 0 and b"No known" in r.stdout
    trunc = tmp_path / "trunc.log"
    data = (EXAMPLES / "01_item_in_capture.log").read_bytes()
    trunc.write_bytes(data[: data.index(b"Search for")])  # cut mid-traceback
    r = denpex("diagnose", str(trunc), "--format", "json")
    out = json.loads(r.stdout)
    assert r.returncode == 1 and out["verdict"]["line"] == 8
    cut = tmp_path / "cut.log"
    cut.write_bytes(data[: data.index(b"stream is capturing") + 6])
    out = json.loads(denpex("diagnose", str(cut), "--format", "json").stdout)
    assert any("mid-line" in w for w in out["warnings"])


@pytest.mark.slow
def test_fifty_megabyte_single_line(tmp_path: Path) -> None:
    p = tmp_path / "huge.log"
    with open(p, "wb") as fh:
        fh.write(b"x" * (25 << 20))
        fh.write(E900.encode())
        fh.write(b"y" * (25 << 20))
    r = denpex("diagnose", str(p), "--format", "json")
    assert r.returncode == 1, r.stderr
    v = json.loads(r.stdout)["verdict"]
    assert v["line"] == 1 and len(v["text"]) <= 2000


def test_control_reports_first_divergent_line(tmp_path: Path) -> None:
    good = tmp_path / "good.log"
    bad = tmp_path / "bad.log"
    common = [f"[rank0]: 2026-11-30 01:0{i % 10}:00 step {i} loss {0.5 / (i + 1):.4f} pid={1000 + i}" for i in range(30)]
    good.write_text("\n".join(["start job pid=111", *common, "done"]) + "\n")
    bad_lines = ["start job pid=222", *common[:20],
                 "[rank0]: UserWarning: The CUDA Graph is empty. This usually means that the graph was attempted "
                 "to be captured on wrong device or stream.",
                 *common[20:],
                 "[rank0]: Traceback (most recent call last):", f"[rank0]: {E900}"]
    bad.write_text("\n".join(bad_lines) + "\n")
    r = denpex("diagnose", str(bad), "--control", str(good), "--format", "json")
    v = json.loads(r.stdout)["verdict"]
    assert v["first_divergence"]["line"] == 22, v["first_divergence"]
    assert "CUDA Graph is empty" in v["first_divergence"]["text"]


def test_framework_flag_comes_first(tmp_path: Path) -> None:
    log = tmp_path / "vllm.log"
    log.write_text(
        "INFO 11-30 01:00:00 [core.py:1] Initializing a V1 LLM engine (v0.11.0) with config: model='m'\n"
        "(VllmWorker rank=2 pid=4242) Traceback (most recent call last):\n"
        '(VllmWorker rank=2 pid=4242)   File "/usr/lib/python3/site-packages/vllm/worker/model_runner.py", line 9, in capture\n'
        "(VllmWorker rank=2 pid=4242)     output = self.model(x)\n"
        f"(VllmWorker rank=2 pid=4242) {E900}\n"
    )
    out = json.loads(denpex("diagnose", str(log), "--format", "json").stdout)
    v = out["verdict"]
    assert v["rank"] == 2 and v["process"] == "4242"
    assert "vLLM" in v["frameworks"]
    assert v["fix"].splitlines()[0].startswith("vLLM:") and "--enforce-eager" in v["fix"].splitlines()[0]


def test_run_passes_output_and_exit_code_and_keeps_bundle(tmp_path: Path) -> None:
    script = tmp_path / "job.sh"
    script.write_text(f"echo hello-stdout\ncat {EXAMPLES / '01_item_in_capture.log'} >&2\nexit 7\n")
    r = denpex("run", "--bundle-dir", str(tmp_path), "--", "bash", str(script), cwd=tmp_path)
    assert r.returncode == 7
    assert r.stdout == b"hello-stdout\n"
    assert b"capture-item-sync" in r.stderr
    bundles = list(tmp_path.glob("denpex-bundle-*"))
    assert len(bundles) == 1
    names = {p.name for p in bundles[0].iterdir()}
    assert {"output.log", "nvidia-smi.txt", "collect_env.txt", "env.json", "manifest.json", "diagnosis.json"} <= names
    again = denpex("diagnose", str(bundles[0]), "--format", "json")
    assert json.loads(again.stdout)["verdict"]["rule"] == "capture-item-sync"


def test_run_redacts_secrets_in_bundle(tmp_path: Path) -> None:
    env = {**os.environ, "NCCL_DEBUG": "INFO", "HF_TOKEN": "hf_supersecret", "CUDA_VISIBLE_DEVICES": "0"}
    r = denpex("run", "--bundle-dir", str(tmp_path), "--", "false", env=env, cwd=tmp_path)
    assert r.returncode == 1
    (bundle,) = tmp_path.glob("denpex-bundle-*")
    envj = json.loads((bundle / "env.json").read_text())
    assert envj["NCCL_DEBUG"] == "INFO" and envj["HF_TOKEN"] == "<redacted>"
    assert "hf_supersecret" not in "".join(p.read_text(errors="replace") for p in bundle.iterdir())


def test_run_expect_absent_is_the_verification_step(tmp_path: Path) -> None:
    log = EXAMPLES / "01_item_in_capture.log"
    bad = denpex("run", "--no-bundle", "--expect-absent", "DPX101", "--", "cat", str(log))
    assert bad.returncode == 1 and b"--expect-absent capture-item-sync" in bad.stderr
    ok = denpex("run", "--no-bundle", "--expect-absent", "capture-item-sync", "--", "echo", "fine")
    assert ok.returncode == 0 and b"verified" in ok.stderr
    unknown = denpex("run", "--expect-absent", "no-such-rule", "--", "true")
    assert unknown.returncode == 2 and b"unknown rule" in unknown.stderr
    missing = denpex("run", "--", "definitely-not-a-command-xyz")
    assert missing.returncode == 2 and b"command not found" in missing.stderr


def test_user_rule_folder_is_loaded(tmp_path: Path) -> None:
    d = tmp_path / "mine"
    d.mkdir()
    (d / "custom.yaml").write_text(
        "id: my-capture-wrapper\ncode: DPX990\ntitle: Our trainer's capture wrapper failed\n"
        "family: other-frameworks\nseverity: error\n"
        "root_cause: Our wrapper prints this when its torch.cuda.graph block raises.\n"
        "fix: Read the traceback above the wrapper line.\nverify: denpex run -- python train.py\n"
        "checklist: [Look above the wrapper line.]\nreferences: [internal wiki]\n"
        "log:\n  signatures:\n    - {role: initiating, literal: 'OURTRAINER graph capture exploded'}\n"
        "  examples:\n    match: ['OURTRAINER graph capture exploded at step 3']\n    no_match: ['all fine']\n"
    )
    r = denpex("diagnose", "-", "--rules", str(d), "--format", "json",
               stdin=b"ok\nOURTRAINER graph capture exploded at step 3\n")
    assert r.returncode == 1 and json.loads(r.stdout)["verdict"]["rule"] == "my-capture-wrapper"
    listing = denpex("rules", "--rules", str(d))
    assert b"DPX990" in listing.stdout


def test_explain() -> None:
    r = denpex("explain", "DPX101")
    assert r.returncode == 0 and b"### Fix" in r.stdout
    assert denpex("explain", "nope").returncode == 2


def test_user_rule_with_catastrophic_regex_is_rejected(tmp_path: Path) -> None:
    d = tmp_path / "mine"
    d.mkdir()
    (d / "slow.yaml").write_text(
        "id: my-slow-rule\ncode: DPX991\ntitle: A rule whose regex backtracks\n"
        "family: other-frameworks\nseverity: error\n"
        "root_cause: Written to show that the loader refuses nested quantifiers.\n"
        "fix: Bound the repeat.\nverify: denpex run -- python train.py\n"
        "checklist: [Bound the repeat.]\nreferences: [none]\n"
        "log:\n  signatures:\n    - {role: initiating, regex: '(a+)+b', anchor: 'aaaa'}\n"
        "  examples:\n    match: ['aaaab']\n    no_match: ['c']\n"
    )
    r = denpex("diagnose", "-", "--rules", str(d), stdin=b"x\n")
    assert r.returncode == 2
    err = r.stderr.decode()
    assert "slow.yaml" in err and "backtrack" in err and err.count("\n") == 1


def test_pathological_line_cannot_stall_a_scan(tmp_path: Path) -> None:
    """A user rule with a slow-but-accepted regex and a hostile line: the per-search timeout bounds it."""
    import time

    d = tmp_path / "mine"
    d.mkdir()
    (d / "ok.yaml").write_text(
        "id: my-bounded-rule\ncode: DPX992\ntitle: A rule with a bounded but heavy regex\n"
        "family: other-frameworks\nseverity: error\n"
        "root_cause: Written to show that a hostile line is bounded by the regex timeout.\n"
        "fix: None needed.\nverify: denpex run -- python train.py\n"
        "checklist: [Nothing.]\nreferences: [none]\n"
        "log:\n  signatures:\n    - {role: initiating, regex: 'MARKER[a-z ]{0,4000}[a-z]{0,4000}!', anchor: 'MARKER'}\n"
        "  examples:\n    match: ['MARKER abc!']\n    no_match: ['c']\n"
    )
    hostile = ("MARKER" + "a" * 8000 + "\n") * 200
    t0 = time.monotonic()
    r = denpex("diagnose", "-", "--rules", str(d), stdin=hostile.encode())
    assert r.returncode in (0, 1) and time.monotonic() - t0 < 60
