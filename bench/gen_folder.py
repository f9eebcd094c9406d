"""Generate a job's torchrun --log-dir folder: many per-rank files, one failure, the rest watchdogs.

Deterministic for (ranks, size, seed). The layout is torchrun's (PyTorch
torch/distributed/elastic/multiprocessing/api.py, DefaultLogsSpecs.reify), gathered per host:
``<root>/node<NNN>/none_<id>/attempt_0/<local_rank>/{stdout,stderr}.log``, 8 local ranks a node.
Each stderr.log holds c10d's ``[rankN]:`` glog lines, Python logging with ISO stamps, NCCL INFO
lines and benign warnings; near the end the failing rank raises the ``.item()``-in-capture 900
(08:15:03), one other rank an illegal address six seconds later, and every other rank only the
NCCL watchdog timeout (08:15:33). ``generate()`` returns what a right diagnosis says.

    python bench/gen_folder.py --ranks 1000 --size-mb 1024 --out /tmp/job
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

GENERATOR_VERSION = 1
PER_NODE = 8
E900 = "torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing"


@dataclass
class ExpectedFolder:
    root: str
    files: int
    bytes: int
    ranks: int
    seed: int
    rule: str
    rank: int
    file: str
    line: int
    generator_version: int = GENERATOR_VERSION


def _hms(s: int) -> str:
    return f"{s // 3600 % 24:02d}:{s // 60 % 60:02d}:{s % 60:02d}"


def _body(rng: random.Random, g: int, lr: int, host: str, target: int) -> list[str]:
    out: list[str] = [f"[rank{g}]:[W1201 06:00:00.000000000 ProcessGroupNCCL.cpp:4718] [PG ID 0 PG GUID 0 "
                      f"Rank {g}] using GPU {lr} to perform barrier as devices used by this process are "
                      "currently unknown.\n"]
    size = len(out[0])
    t = 6 * 3600
    step = 0
    pid = 4000 + g
    while size < target:
        step += 1
        t += 1
        x = rng.random()
        if x < 0.75:
            line = (f"2026-12-01 {_hms(t)},{rng.randrange(1000):03d} [llm.train][INFO] - step {step} | loss "
                    f"{2 + rng.random():.4f} | lr 3.000e-04 | grad_norm {0.4 + rng.random():.3f} | "
                    f"{140_000 + rng.randrange(20_000)} tok/s | mem {58 + rng.random() * 4:.1f} GiB\n")
        elif x < 0.93:
            line = (f"{host}:{pid}:{pid + 17} [{lr}] NCCL INFO Channel {rng.randrange(24):02d}/0 : {g}[{lr}] -> "
                    f"{(g + 1) % 1000}[{(lr + 1) % PER_NODE}] via P2P/CUMEM/read\n")
        elif x < 0.99:
            line = (f"[rank{g}]:[W1201 {_hms(t)}.{rng.randrange(10**9):09d} reducer.cpp:1430] Warning: "
                    "find_unused_parameters=True was specified in DDP constructor, but did not find any "
                    "unused parameters in the forward pass. (function operator())\n")
        else:
            line = ("/opt/venv/lib/python3.12/site-packages/torch/utils/checkpoint.py:87: UserWarning: None of "
                    "the inputs have requires_grad=True. Gradients will be None\n")
        out.append(line)
        size += len(line)
    return out


def _tail(kind: str, g: int) -> tuple[list[str], int]:
    """Lines after the body, and the index of the initiating line (-1: none)."""
    if kind == "fail":
        lines = ["2026-12-01 08:15:03,001 [llm.train][INFO] - capturing the decode graph\n",
                 "Traceback (most recent call last):\n",
                 '  File "/workspace/llm/train.py", line 412, in capture_step\n',
                 "    grad_scale = found_inf.sum().item()  # host read inside the capture\n",
                 f"{E900}\n",
                 "Search for `cudaErrorStreamCaptureUnsupported' in https://docs.nvidia.com/cuda/"
                 "cuda-runtime-api/group__CUDART__TYPES.html for more information.\n"]
        return lines, 4
    if kind == "later":
        return ["2026-12-01 08:15:09,500 [llm.train][INFO] - replaying\n",
                "torch.AcceleratorError: CUDA error: an illegal memory access was encountered\n"], 1
    pg = f"[PG ID 0 PG GUID 0(default_pg) Rank {g}]"
    return [f"[rank{g}]:[E1201 08:15:33.123456789 ProcessGroupNCCL.cpp:632] {pg} Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=336580, OpType=ALLREDUCE, NumelIn=1048576, "
            "NumelOut=1048576, Timeout(ms)=600000) ran for 600080 milliseconds before timing out.\n",
            f"[rank{g}]:[E1201 08:15:33.123456789 ProcessGroupNCCL.cpp:2111] {pg} Exception (either an error "
            "or timeout) detected by watchdog at work: 336580, last enqueued NCCL work: 336580, last "
            "completed NCCL work: 336579.\n"], -1


def generate(root: str | Path, ranks: int, size_bytes: int, seed: int = 7) -> ExpectedFolder:
    root = Path(root)
    rng = random.Random(seed)
    fail = rng.randrange(ranks // 3, ranks)  # not the first file
    later = (fail + 11) % ranks
    per_file = max(4096, size_bytes // ranks)
    total = 0
    exp_file, exp_line = "", 0
    for g in range(ranks):
        node, lr = divmod(g, PER_NODE)
        host = f"node{node:03d}"
        d = root / host / f"none_{node:03d}x7k" / "attempt_0" / str(lr)
        d.mkdir(parents=True, exist_ok=True)
        kind = "fail" if g == fail else "later" if g == later else "watchdog"
        tail, idx = _tail(kind, g)
        body = _body(random.Random(seed * 1_000_003 + g), g, lr, host, per_file - sum(map(len, tail)))
        data = "".join(body + tail).encode()
        (d / "stderr.log").write_bytes(data)
        (d / "stdout.log").write_bytes(b"")
        total += len(data)
        if kind == "fail":
            exp_file, exp_line = str(d / "stderr.log"), len(body) + idx + 1
    return ExpectedFolder(str(root), 2 * ranks, total, ranks, seed, "capture-item-sync", fail, exp_file, exp_line)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=1000)
    ap.add_argument("--size-mb", type=float, default=1024.0, help="total size in MiB (default 1024)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", required=True, help="folder to write (its job layout goes under it)")
    args = ap.parse_args(argv)
    exp = generate(args.out, args.ranks, int(args.size_mb * (1 << 20)), args.seed)
    Path(args.out, "expected.json").write_text(json.dumps(asdict(exp), indent=1))
    json.dump(asdict(exp), sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
