"""Evidence bundles: what to keep from a failed run before anyone restarts it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

_ENV_PREFIXES = (
    "CUDA_", "NCCL_", "TORCH", "PYTORCH_", "NVIDIA_", "CUBLAS", "CUDNN", "OMP_", "MASTER_",
    "WORLD_SIZE", "RANK", "LOCAL_RANK", "GROUP_RANK", "ROLE_RANK", "SLURM_", "HF_", "VLLM_",
    "SGLANG_", "TRITON_", "NVSHMEM_", "UCX_", "FI_", "LD_LIBRARY_PATH", "PATH", "PYTHONPATH",
    "CONDA_PREFIX", "VIRTUAL_ENV",
)
_SECRET = re.compile(r"TOKEN|SECRET|PASSW|PASSWD|CREDENTIAL|AUTH|API_?KEY|PRIVATE|_KEY$|COOKIE", re.I)
_URL_CREDS = re.compile(r"(?<=://)[^/@\s]+:[^/@\s]+@")


def redacted_env(env: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if env is None else env)
    out: dict[str, str] = {}
    for key in sorted(env):
        if not key.startswith(_ENV_PREFIXES):
            continue
        value = env[key]
        value = "<redacted>" if _SECRET.search(key) else _URL_CREDS.sub("<redacted>@", value)
        out[key] = value
    return out


def _capture(cmd: list[str], timeout: float) -> str:
    exe = shutil.which(cmd[0]) if cmd[0] != sys.executable else cmd[0]
    if exe is None:
        return f"{cmd[0]}: not found on PATH\n"
    try:
        r = subprocess.run(cmd, capture_output=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{' '.join(cmd)}: {exc}\n"
    text = r.stdout.decode("utf-8", "replace") + r.stderr.decode("utf-8", "replace")
    return text if r.returncode == 0 else f"(exit {r.returncode})\n{text}"


def new_bundle_dir(parent: str | Path | None = None) -> Path:
    base = Path(parent) if parent else Path.cwd()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = base / f"denpex-bundle-{stamp}"
    n = 1
    while path.exists():
        n += 1
        path = base / f"denpex-bundle-{stamp}-{n}"
    path.mkdir(parents=True)
    return path


def write_bundle(
    folder: Path,
    log: Path | None,
    manifest: dict[str, Any],
    diagnosis_json: dict[str, Any] | None,
    probe_timeout: float = 60.0,
) -> Path:
    """Fill a bundle folder: output.log, nvidia-smi.txt, collect_env.txt, env.json, manifest.json."""
    if log is not None and log.resolve() != (folder / "output.log").resolve():
        shutil.copyfile(log, folder / "output.log")
    (folder / "nvidia-smi.txt").write_text(_capture(["nvidia-smi"], probe_timeout), encoding="utf-8")
    # collect_env imports torch (library code, not the user's); skipped when torch is absent
    (folder / "collect_env.txt").write_text(
        _capture([sys.executable, "-m", "torch.utils.collect_env"], probe_timeout), encoding="utf-8"
    )
    (folder / "env.json").write_text(json.dumps(redacted_env(), indent=2) + "\n", encoding="utf-8")
    if diagnosis_json is not None:
        (folder / "diagnosis.json").write_text(json.dumps(diagnosis_json, indent=2) + "\n", encoding="utf-8")
    manifest = {"schema": "denpex.bundle/1", "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **manifest}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return folder
