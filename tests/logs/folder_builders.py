"""Job log folders in the layouts real launchers write, built by the tests.

Texts come from real outputs: the 900 traceback from the H200 run of tests/data/gpu (PyTorch
2.11, `torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing`),
the watchdog lines from ProcessGroupNCCL.cpp (as in rules/distributed/nccl-watchdog-timeout.yaml),
torchrun's layout from torch/distributed/elastic/multiprocessing/api.py (DefaultLogsSpecs.reify)
and error.json from torch/distributed/elastic/multiprocessing/errors/error_handler.py.
"""

from __future__ import annotations

import json
from pathlib import Path

E900 = "torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing"
E700 = "torch.AcceleratorError: CUDA error: an illegal memory access was encountered"
SCRIPT = "/workspace/train.py"


def glog(level: str, hms: str, frac: str = "123456789") -> str:
    return f"{level}1201 {hms}.{frac}"


def progress(prefix: str, hms: str, steps: int = 3) -> list[str]:
    return [f"{prefix}2026-12-01 {hms},{i:03d} INFO step {i}: loss 2.{i}1" for i in range(steps)]


def item_traceback(prefix: str = "") -> list[str]:
    """The chained 900/901 traceback of `.item()` inside torch.cuda.graph (its frames)."""
    p = prefix
    return [
        f"{p}Traceback (most recent call last):",
        f'{p}  File "{SCRIPT}", line 40, in main',
        f"{p}    scale = y.sum().item()  # host read inside the capture",
        f"{p}            ^^^^^^^^^^^^^^",
        f"{p}{E900}",
        f"{p}Search for `cudaErrorStreamCaptureUnsupported' in https://docs.nvidia.com/cuda/cuda-runtime-api/"
        "group__CUDART__TYPES.html for more information.",
        f"{p}For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
        f"{p}",
        f"{p}During handling of the above exception, another exception occurred:",
        f"{p}",
        f"{p}Traceback (most recent call last):",
        f'{p}  File "/opt/venv/lib/python3.12/site-packages/torch/cuda/graphs.py", line 265, in __exit__',
        f"{p}    self.cuda_graph.capture_end()",
        f"{p}torch.AcceleratorError: CUDA error: operation failed due to a previous error during capture",
    ]


def illegal_traceback(prefix: str = "") -> list[str]:
    p = prefix
    return [
        f"{p}Traceback (most recent call last):",
        f'{p}  File "{SCRIPT}", line 77, in main',
        f"{p}    g.replay()",
        f"{p}{E700}",
        f"{p}CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
        "below might be incorrect.",
    ]


def watchdog(rank: int, hms: str, seq: int, last_enqueued: int, prefix: bool = True) -> list[str]:
    p = f"[rank{rank}]:" if prefix else ""
    pg = f"[PG ID 0 PG GUID 0(default_pg) Rank {rank}]"
    return [
        f"{p}[{glog('E', hms)} ProcessGroupNCCL.cpp:632] {pg} Watchdog caught collective operation timeout: "
        f"WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=30000) "
        "ran for 30080 milliseconds before timing out.",
        f"{p}[{glog('E', hms)} ProcessGroupNCCL.cpp:2111] {pg} Exception (either an error or timeout) detected "
        f"by watchdog at work: {seq}, last enqueued NCCL work: {last_enqueued}, last completed NCCL work: "
        f"{last_enqueued - 1}.",
    ]


def write(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def error_json(path: Path, message: str, stack: list[str], epoch: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"message": {"message": message, "extraInfo": {"py_callstack": "\n".join(stack) + "\n",
                                                          "timestamp": str(epoch)}}}
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def torchrun_single_node(root: Path, fail: int = 2, later: int = 0, ranks: int = 4) -> Path:
    """One node's --log-dir: `fail` raises the 900 first (08:15:03), `later` an illegal address
    later (08:15:09), every other rank holds only the watchdog (08:15:33)."""
    run = root / "none_k2j4x9qz"
    for lr in range(ranks):
        d = run / "attempt_0" / str(lr)
        write(d / "stdout.log", progress("", "08:14:50"))
        if lr == fail:
            lines = progress("", "08:15:03") + item_traceback()
            error_json(d / "error.json", E900.split(": ", 1)[1], item_traceback(), 1764576903)
        elif lr == later:
            lines = progress("", "08:15:09") + illegal_traceback()
            error_json(d / "error.json", E700.split(": ", 1)[1], illegal_traceback(), 1764576909)
        else:
            lines = progress("", "08:15:01") + watchdog(lr, "08:15:33", 7, 7, prefix=False)
        write(d / "stderr.log", lines)
    return run
