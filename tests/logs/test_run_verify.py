"""`denpex run --expect-absent` cannot pass while the signature is there; `--honest` says what it set.

Real subprocesses: small Python scripts that print what a failing CUDA job prints (the 900 text
of the H200 run in tests/data/gpu) and exit with the code given.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests.logs.test_cli import denpex

E900 = "torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing"
E700 = "torch.AcceleratorError: CUDA error: an illegal memory access was encountered"


def script(tmp_path: Path, body: str) -> str:
    p = tmp_path / "job.py"
    p.write_text("import os, sys\n" + body + "\n")
    return str(p)


def test_lying_case_signature_printed_exit_zero_fails(tmp_path: Path) -> None:
    job = script(tmp_path, f"print('step 1 ok')\nprint({E900!r}, file=sys.stderr)\nsys.exit(0)")
    r = denpex("run", "--no-bundle", "--expect-absent", "capture-item-sync", "--", sys.executable, job)
    err = r.stderr.decode()
    assert r.returncode == 1, err
    assert "verified" not in err
    # the child's stdout and stderr are two pipes: which of its two lines is output line 1 is a race
    assert ("--expect-absent capture-item-sync: cuda-900-capture-unsupported, a rule it is refined from, "
            "appeared (first at output line ") in err
    assert "exited 0, but a signature expected absent appeared" in err


def test_rule_itself_appearing_fails(tmp_path: Path) -> None:
    tb = (f"print('Traceback (most recent call last):', file=sys.stderr)\n"
          f"print('  File \"/w/train.py\", line 4, in step', file=sys.stderr)\n"
          f"print('    v = loss.item()', file=sys.stderr)\n"
          f"print({E900!r}, file=sys.stderr)\nsys.exit(1)")
    r = denpex("run", "--no-bundle", "--expect-absent", "capture-item-sync", "--", sys.executable,
               script(tmp_path, tb))
    assert r.returncode == 1
    assert b"--expect-absent capture-item-sync: its signature appeared" in r.stderr


def test_other_failure_is_not_a_verification_and_says_which(tmp_path: Path) -> None:
    job = script(tmp_path, f"print({E700!r}, file=sys.stderr)\nsys.exit(3)")
    r = denpex("run", "--no-bundle", "--expect-absent", "capture-item-sync", "--", sys.executable, job)
    err = r.stderr.decode()
    assert r.returncode == 3, err
    assert "not verified: the command failed for another reason (exit code 3): cuda-illegal-memory-access" in err
    plain = denpex("run", "--no-bundle", "--expect-absent", "capture-item-sync", "--", sys.executable,
                   script(tmp_path, "sys.exit(4)"))
    assert plain.returncode == 4
    assert b"failed for another reason (exit code 4): no known signature" in plain.stderr


def test_passes_only_on_success_without_the_signature(tmp_path: Path) -> None:
    job = script(tmp_path, "print('loss 0.1')")
    r = denpex("run", "--no-bundle", "--expect-absent", "capture-item-sync", "--", sys.executable, job)
    assert r.returncode == 0
    assert b"verified: the command succeeded and capture-item-sync" in r.stderr
    assert b"cuda-900-capture-unsupported" in r.stderr  # it names the parents it checked too


def test_honest_sets_and_prints_its_settings(tmp_path: Path) -> None:
    keys = ["CUDA_LAUNCH_BLOCKING", "TORCH_SHOW_CPP_STACKTRACES", "NCCL_DEBUG", "TORCH_NCCL_DUMP_ON_TIMEOUT",
            "TORCH_NCCL_TRACE_BUFFER_SIZE"]
    job = script(tmp_path, f"for k in {keys!r}: print(k + '=' + os.environ.get(k, '<unset>'))")
    env = {**os.environ, "NCCL_DEBUG": "INFO"}
    r = denpex("run", "--no-bundle", "--honest", "--", sys.executable, job, env=env)
    assert r.returncode == 0, r.stderr
    seen = dict(line.split("=", 1) for line in r.stdout.decode().splitlines())
    assert seen == {"CUDA_LAUNCH_BLOCKING": "1", "TORCH_SHOW_CPP_STACKTRACES": "1", "NCCL_DEBUG": "WARN",
                    "TORCH_NCCL_DUMP_ON_TIMEOUT": "1", "TORCH_NCCL_TRACE_BUFFER_SIZE": "2000"}
    err = r.stderr.decode()
    for k, v in seen.items():
        assert f"denpex: --honest: {k}={v}" in err
    assert "NCCL_DEBUG=WARN (was INFO)" in err


def test_asynchronous_verdict_verifies_with_honest(tmp_path: Path) -> None:
    log = tmp_path / "replay.log"
    log.write_text(f"{E700}\nCUDA kernel errors might be asynchronously reported at some other API call\n")
    r = denpex("diagnose", str(log))
    assert r.returncode == 1
    assert b"denpex run --honest --expect-absent cuda-illegal-memory-access -- python train.py" in r.stdout
