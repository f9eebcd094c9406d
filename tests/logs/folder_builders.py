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


def slurm_per_task(root: Path, fail: int = 5, later: int = 1, tasks: int = 8,
                   name: str = "slurm-4242_{t}.out") -> Path:
    """`srun --output=slurm-%j_%t.out` (or any `name` with `{t}` as its last number): task ids are
    global ranks; ISO stamps from Python logging."""
    for t in range(tasks):
        if t == fail:
            lines = progress("", "08:15:03") + item_traceback()
        elif t == later:
            lines = progress("", "08:15:20") + illegal_traceback()
        else:
            lines = progress("", "08:15:01") + watchdog(t, "08:15:33", 7, 7, prefix=False)
        write(root / name.format(t=t), lines)
    return root


def kubeflow_pods(root: Path, fail_rank: int = 5) -> Path:
    """One file per pod (PyTorchJob master-0, worker-0..2), two ranks per pod, c10d [rankN]: prefixes."""
    pods = ["trainer-master-0", "trainer-worker-0", "trainer-worker-1", "trainer-worker-2"]
    for i, pod in enumerate(pods):
        lines: list[str] = []
        for r in (2 * i, 2 * i + 1):
            p = f"[rank{r}]:"
            if r == fail_rank:
                lines += [f"{p}[{glog('W', '08:15:03')} ProcessGroupNCCL.cpp:4718] warmup done"]
                lines += item_traceback(p)
            else:
                lines += [f"{p}[{glog('W', '08:15:02')} ProcessGroupNCCL.cpp:4718] warmup done"]
                lines += watchdog(r, "08:15:33", 7, 7)
        write(root / f"{pod}.log", lines)
    return root


def torchrun_two_nodes_with_table(root: Path) -> Path:
    """Logs gathered per host (`<host>/<run_id>_<random>/attempt_0/<local_rank>/`), and the agent's
    console output of gpu-b holding torchrun's failure table that maps its local ranks."""
    for host, run, base in (("gpu-a", "none_aaaa1111", 0), ("gpu-b", "none_bbbb2222", 2)):
        for lr in range(2):
            d = root / host / run / "attempt_0" / str(lr)
            if host == "gpu-b" and lr == 1:
                lines = progress("", "08:15:03") + item_traceback()
            else:
                lines = progress("", "08:15:01") + watchdog(base + lr, "08:15:33", 7, 7, prefix=False)
            write(d / "stderr.log", lines)
    table = [
        "E1201 08:15:40.850000 574 torch/distributed/elastic/multiprocessing/api.py:986] failed (exitcode: 1) "
        "local_rank: 1 (pid: 709) of binary: /opt/venv/bin/python3",
        "Traceback (most recent call last):",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "============================================================",
        "/workspace/train.py FAILED",
        "------------------------------------------------------------",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2026-12-01_08:15:40",
        "  host      : gpu-b",
        "  rank      : 3 (local_rank: 1)",
        "  exitcode  : 1 (pid: 709)",
        "  error_file: <N/A>",
        "============================================================",
    ]
    write(root / "agent-gpu-b.log", table)
    return root


def only_watchdogs(root: Path, behind: int | None = 3, silent: int | None = None, ranks: int = 4) -> Path:
    """Every rank only times out. `behind` never enqueued SeqNum 7 (last enqueued 6); `silent`
    never reached the collective at all (its file has no watchdog line)."""
    for r in range(ranks):
        if r == silent:
            lines = progress("", "08:15:01")
        elif r == behind:  # its own collective 6 completed; it never enqueued 7: no timeout, a status line
            lines = progress("", "08:15:01") + watchdog(r, "08:15:34", 6, 6, prefix=False)[1:]
        else:
            lines = progress("", "08:15:01") + watchdog(r, "08:15:33", 7, 7, prefix=False)
        write(root / f"rank_{r}.log", lines)
    return root


def node_rank_job(root: Path, nodes: int = 8, per_node: int = 8, fail: int = 37) -> Path:
    """A 64-rank job's --log-dir gathered per host; the failing rank prints an unprefixed traceback,
    every line of the others carries c10d's [rankN]: prefix."""
    for n in range(nodes):
        run = root / f"node{n:02d}" / f"none_{n:02d}q8w"
        for lr in range(per_node):
            g = n * per_node + lr
            d = run / "attempt_0" / str(lr)
            p = f"[rank{g}]:"
            head = [f"{p}[{glog('W', '08:15:00')} ProcessGroupNCCL.cpp:4718] rank {g} warm"]
            if g == fail:
                lines = head + progress("", "08:15:03") + item_traceback()
            elif g == fail + 9:
                lines = head + progress("", "08:15:12") + illegal_traceback()
            else:
                lines = head + watchdog(g, "08:15:33", 7, 7)
            write(d / "stderr.log", lines)
            write(d / "stdout.log", progress("", "08:14:59", 2))
    return root
