"""Generate a realistic multi-rank torchrun log with one CUDA-graph failure near the end.

Deterministic for a given (size, seed): the same bytes every time. The shape follows real
PyTorch 2.11 / NCCL output (see ../shared/gpu/results/multi/ and FINDINGS.md):

* 64 ranks on 8 nodes; worker lines carry c10d's ``[rankN]:`` prefix, and on a share of the
  lines torchrun's ``--tee`` prefix stacked in front (``[default3]:[rank19]:``);
* glog headers (``[rank3]:[W1130 00:41:07.123456789 ProcessGroupNCCL.cpp:4718] ...`` and the
  agent's ``I1130 00:41:07.735000 574 torch/distributed/...``), NCCL ``host:pid:tid [dev] NCCL
  INFO`` lines, tqdm bars redrawn with bare ``\\r``, ANSI colour, benign warnings, interleaved
  writers gluing two ranks onto one line, and now and then a handled (benign) traceback;
* near the end one rank's ``.item()``-in-capture chained traceback (900 then 901), then the
  other ranks' NCCL watchdog timeouts, teardown, and torchrun's ChildFailedError table whose
  "Root Cause" names an innocent rank (the one the watchdog took down first).

``generate()`` returns what a correct diagnosis must say (rule, rank, line).

    python bench/gen_log.py --size-mb 64 --out bench/data/x.log
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

GENERATOR_VERSION = 2
RANKS = 64
PER_NODE = 8
EXPECTED_RULE = "capture-item-sync"  # 900 refined by the `.item()` frame; 901 is chained collateral

_SCRIPT = "/workspace/llm/train.py"
_SITE = "/opt/torch/.venv/lib/python3.12/site-packages"
_CUDA_TAIL = (
    "CUDA kernel errors might be asynchronously reported at some other API call, "
    "so the stacktrace below might be incorrect.",
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
)


@dataclass
class Expected:
    path: str
    bytes: int
    lines: int
    seed: int
    ranks: int
    rule: str
    rank: int  # the rank whose error came first
    line: int  # 1-based line of its initiating error
    blamed_rank: int  # the rank torchrun's Root Cause table names (innocent)
    timeout_seq: int
    generator_version: int = GENERATOR_VERSION


class _Clock:
    """glog / logging timestamps that advance with the simulated run."""

    def __init__(self) -> None:
        self.us = (41 * 60 + 7) * 1_000_000  # 00:41:07 on 30 Nov

    def tick(self, us: int) -> None:
        self.us += us

    def _hms(self, us: int) -> str:
        s = us // 1_000_000
        return f"{s // 3600 % 24:02d}:{s // 60 % 60:02d}:{s % 60:02d}"

    def glog(self, level: str, us: int | None = None) -> str:  # W1130 00:41:07.123456789
        us = self.us if us is None else us
        return f"{level}1130 {self._hms(us)}.{us % 1_000_000:06d}{us % 997:03d}"

    def agent(self, level: str) -> str:  # I1130 00:41:07.735000 (torchrun's own logger)
        return f"{level}1130 {self._hms(self.us)}.{self.us % 1_000_000 // 1000:03d}000"

    def iso(self) -> str:
        return f"2026-11-30 {self._hms(self.us)},{self.us % 1_000_000 // 1000:03d}"

    def wall(self) -> str:
        return f"2026-11-30_{self._hms(self.us)}"


class _Ranks:
    """Per-rank identity: node, local rank, pids, prefix."""

    def __init__(self, rng: random.Random, n: int) -> None:
        self.n = n
        self.node = [f"gpu-node{r // PER_NODE:02d}" for r in range(n)]
        self.local = [r % PER_NODE for r in range(n)]
        self.pid = [rng.randrange(20_000, 4_000_000) for _ in range(n)]
        self.tid = [p + rng.randrange(40, 400) for p in self.pid]
        self.agent_pid = [rng.randrange(1000, 20_000) for _ in range(n // PER_NODE + 1)]

    def prefix(self, r: int, tee: bool) -> str:
        return f"[default{self.local[r]}]:[rank{r}]:" if tee else f"[rank{r}]:"


_BENIGN_WARNINGS = (
    (f"{_SITE}/torch/utils/checkpoint.py:87: UserWarning: None of the inputs have requires_grad=True. "
     "Gradients will be None",
     "  warnings.warn("),
    (f"{_SITE}/torch/_dynamo/eval_frame.py:838: UserWarning: torch.utils.checkpoint: the use_reentrant "
     "parameter should be passed explicitly.",
     "  return fn(*args, **kwargs)"),
    (f"{_SITE}/torch/nn/modules/module.py:1786: FutureWarning: `torch.cuda.amp.autocast(args...)` is "
     "deprecated. Please use `torch.amp.autocast('cuda', args...)` instead.",
     "  return forward_call(*args, **kwargs)"),
    (f"{_SITE}/transformers/modeling_utils.py:5401: UserWarning: To copy construct from a tensor, it is "
     "recommended to use sourceTensor.clone().detach() rather than torch.tensor(sourceTensor).",
     "  warnings.warn("),
)

_NCCL_INFO = (
    "Channel {c:02d}/24 : {r}[{d}] -> {nr}[{nd}] via P2P/CUMEM/read",
    "Channel {c:02d}/0 : {r}[{d}] -> {nr}[{nd}] [send] via NET/IBext_v8/{d}/GDRDMA",
    "Connected all rings, use ring PXN 0 GDR 1",
    "Connected all trees",
    "threadThresholds 8/8/64 | 512/8/64 | 512 | 512",
    "24 coll channels, 24 collnet channels, 0 nvls channels, 32 p2p channels, 32 p2p channels per peer",
    "comm 0x{comm:x} rank {r} nRanks {n} nNodes {nodes} localRanks 8 localRank {d} MNNVL 0",
    "ncclCommInitRankConfig comm 0x{comm:x} rank {r} nranks {n} cudaDev {d} nvmlDev {d} busId {bus:x}000 "
    "commId 0x{cid:x} - Init COMPLETE",
    "Using network IBext_v8",
    "Init timings - ncclCommInitRankConfig: rank {r} nranks {n} total 1.{ms:02d} (kernels 0.21, alloc 0.07, "
    "bootstrap 0.52, allgathers 0.03, topo 0.31, graphs 0.02, connections 0.11, rest 0.01)",
)


def _filler_step(rng: random.Random, clock: _Clock, ranks: _Ranks, step: int, total: int,
                 out: list[str]) -> None:
    """One optimizer step's worth of output from every rank, interleaved."""
    n = ranks.n
    loss = 2.0 + 1.5 * (0.9995 ** step) + rng.random() * 0.05
    order = list(range(n))
    rng.shuffle(order)
    tee = step % 3 == 0  # this stretch of the run was launched with --tee 3
    for r in order:
        clock.tick(rng.randrange(50, 900))
        p = ranks.prefix(r, tee)
        x = rng.random()
        if x < 0.80:
            out.append(
                f"{p}[{clock.iso()}][llm.train][INFO] - step {step} | loss {loss + rng.random() * 0.02:.4f} | "
                f"lr {3e-4 * min(1.0, step / 2000):.3e} | grad_norm {0.4 + rng.random():.3f} | "
                f"{140_000 + rng.randrange(20_000)} tok/s | mem {58 + rng.random() * 4:.1f} GiB\n"
            )
        elif x < 0.90:
            # ANSI colour (loguru-style), as a rich terminal captured it
            out.append(
                f"{p}\x1b[32m{clock.iso()}\x1b[0m | \x1b[1mINFO    \x1b[0m | \x1b[36mdata.loader\x1b[0m:"
                f"\x1b[36mnext_batch\x1b[0m:\x1b[36m{212 + r % 7}\x1b[0m - shard {rng.randrange(4096):04d} "
                f"batch {step * n + r} ({rng.randrange(1, 64)} ms)\n"
            )
        elif x < 0.965:
            tpl = _NCCL_INFO[rng.randrange(len(_NCCL_INFO))]
            d = ranks.local[r]
            body = tpl.format(c=rng.randrange(24), r=r, d=d, nr=(r + 1) % n, nd=(d + 1) % PER_NODE,
                              n=n, nodes=n // PER_NODE, comm=0x55A1C3A00000 + r * 0x1000 + step,
                              bus=0x18 + d * 0x11, cid=0x9E3779B97F4A7C15 ^ step, ms=rng.randrange(100))
            lead = f"[default{d}]:" if tee else ""
            out.append(f"{lead}{ranks.node[r]}:{ranks.pid[r]}:{ranks.tid[r]} [{d}] NCCL INFO {body}\n")
        elif x < 0.99:
            # glog header from a C++ component, benign
            if rng.random() < 0.5:
                out.append(
                    f"{p}[{clock.glog('W')} reducer.cpp:1430] Warning: find_unused_parameters=True was "
                    "specified in DDP constructor, but did not find any unused parameters in the forward pass. "
                    "This flag results in an extra traversal of the autograd graph every iteration, which can "
                    "adversely affect performance. (function operator())\n"
                )
            else:
                out.append(
                    f"{p}[{clock.glog('I')} ProcessGroupNCCL.cpp:2412] [PG ID 1 PG GUID 3 Rank {r % 8}] "
                    f"ProcessGroupNCCL created ncclComm_ 0x{0x55A1C3A00000 + r:x} on CUDA device: {ranks.local[r]}\n"
                )
        else:
            w, src = _BENIGN_WARNINGS[rng.randrange(len(_BENIGN_WARNINGS))]
            out.append(f"{p}{w}\n{p}{src}\n")
    # two ranks' writes glued onto one line by interleaving writers
    if step % 7 == 0:
        a, b = rng.randrange(n), rng.randrange(n)
        out.append(f"[rank{a}] grad sync ok: bucket {step % 25}[rank{b}] grad sync ok: bucket {step % 25}\n")
    # rank 0's tqdm bar, redrawn with bare CRs and only ended by a newline every few frames
    if step % 4 == 0:
        frames = []
        for k in range(step - 3, step + 1):
            pct = min(100, 100 * k // total)
            bar = "\u2588" * (pct // 10) + ("\u258c" if pct % 10 >= 5 else " ") + " " * (9 - pct // 10)
            frames.append(f"Training:  {pct:2d}%|{bar}| {k}/{total} [{k // 600:02d}:{k // 10 % 60:02d}<"
                          f"{(total - k) // 600:02d}:{(total - k) // 10 % 60:02d},  {9 + rng.random():.2f}it/s, "
                          f"loss={loss:.3f}]")
        out.append(f"[default0]:{chr(13).join(frames)}\r\n" if tee else f"{chr(13).join(frames)}\r\n")
    # agent heartbeat / monitoring lines (no prefix)
    if step % 50 == 0:
        node = rng.randrange(n // PER_NODE)
        out.append(
            f"{clock.agent('I')} {ranks.agent_pid[node]} torch/distributed/elastic/agent/server/api.py:960] "
            f"[default] worker group state: HEALTHY (node {node}, {PER_NODE} workers, step {step})\n"
        )
    # rare: a handled, benign traceback (a retried checkpoint upload); it is a prefilter candidate
    if step % 4999 == 4998:
        p = ranks.prefix(0, tee)
        out.append(
            f"{p}[{clock.iso()}][llm.ckpt][WARNING] - upload of shard {step} failed, retrying in 5 s\n"
            f"{p}Traceback (most recent call last):\n"
            f'{p}  File "/workspace/llm/ckpt.py", line 88, in upload\n'
            f"{p}    client.put_object(Bucket=bucket, Key=key, Body=body)\n"
            f'{p}  File "{_SITE}/botocore/client.py", line 565, in _api_call\n'
            f"{p}    return self._make_api_call(operation_name, kwargs)\n"
            f"{p}ConnectionResetError: [Errno 104] Connection reset by peer\n"
        )


def _failure_tail(rng: random.Random, clock: _Clock, ranks: _Ranks, fail: int, blamed: int,
                  seq: int) -> tuple[list[str], int]:
    """The failure and its aftermath; returns (lines, index of the initiating line)."""
    n = ranks.n
    out: list[str] = []
    pf = ranks.prefix(fail, True)

    def other() -> str:
        r = rng.choice([x for x in range(n) if x != fail])
        clock.tick(rng.randrange(100, 2000))
        return (f"{ranks.prefix(r, True)}[{clock.iso()}][llm.train][INFO] - step {seq // 3} | "
                f"entering all_reduce (SeqNum {seq})\n")

    out.append(f"{pf}[{clock.iso()}][llm.train][INFO] - capturing decode graph (bucket 8)\n")
    out.append(other())
    out.append(f"{pf}Traceback (most recent call last):\n")
    out.append(f'{pf}  File "{_SCRIPT}", line 412, in capture_step\n')
    out.append(f"{pf}    grad_scale = found_inf.sum().item()  # host read inside the capture\n")
    out.append(f"{pf}                 ^^^^^^^^^^^^^^^^^^^^^^^\n")
    out.append(other())
    initiating = len(out)
    out.append(f"{pf}torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing\n")
    out.append(f"{pf}Search for `cudaErrorStreamCaptureUnsupported' in "
               "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information.\n")
    out.extend(f"{pf}{t}\n" for t in _CUDA_TAIL)
    out.append(f"[default{ranks.local[fail]}]:\n")
    out.append(f"[default{ranks.local[fail]}]:\n")
    out.append(f"{pf}During handling of the above exception, another exception occurred:\n")
    out.append(f"[default{ranks.local[fail]}]:\n")
    out.append(f"{pf}Traceback (most recent call last):\n")
    for path, line, fn, code in (
        (_SCRIPT, 530, "<module>", "main()"),
        (f"{_SITE}/torch/distributed/elastic/multiprocessing/errors/__init__.py", 362, "wrapper",
         "return f(*args, **kwargs)"),
        (_SCRIPT, 501, "main", "trainer.capture_graphs()"),
        (_SCRIPT, 409, "capture_step", "with torch.cuda.graph(g, pool=self.pool):"),
        (f"{_SITE}/torch/cuda/graphs.py", 265, "__exit__", "self.cuda_graph.capture_end()"),
        (f"{_SITE}/torch/cuda/graphs.py", 126, "capture_end", "super().capture_end()"),
    ):
        out.append(f'{pf}  File "{path}", line {line}, in {fn}\n{pf}    {code}\n')
    out.append(f"{pf}torch.AcceleratorError: CUDA error: operation failed due to a previous error during capture\n")
    out.append(f"{pf}Search for `cudaErrorStreamCaptureInvalidated' in "
               "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information.\n")
    out.extend(f"{pf}{t}\n" for t in _CUDA_TAIL)
    out.append(f"[default{ranks.local[fail]}]:\n")
    # the other ranks wait in the all_reduce the failed rank never joins; 10 minutes later:
    clock.tick(600_080_000)
    others = [r for r in range(n) if r != fail]
    rng.shuffle(others)
    for r in others:
        clock.tick(rng.randrange(100, 5000))
        p = ranks.prefix(r, True)
        tag = f"[PG ID 0 PG GUID 0(default_pg) Rank {r}]"
        out.append(
            f"{p}[{clock.glog('E')} ProcessGroupNCCL.cpp:685] {tag} Watchdog caught collective operation "
            f"timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=8388608, NumelOut=8388608, "
            f"Timeout(ms)=600000) ran for {600_000 + rng.randrange(40, 200)} milliseconds before timing out.\n"
        )
        out.append(
            f"{p}[{clock.glog('E')} ProcessGroupNCCL.cpp:2228] {tag}  failure detected by watchdog at work "
            f"sequence id: {seq} PG status: last enqueued work: {seq}, last completed work: {seq - 1}\n"
        )
    first = others[0]
    clock.tick(2_000)
    out.append(
        f"{pf}[{clock.glog('E')} ProcessGroupNCCL.cpp:1809] [PG ID 0 PG GUID 0(default_pg) Rank {fail}] "
        f"Received a dump signal due to a collective timeout from rank {first} and we will try our best to dump "
        f"the debug info. Last enqueued NCCL work: {seq - 1}, last completed NCCL work: {seq - 1}.This is most "
        "likely caused by incorrect usages of collectives, e.g., wrong sizes used across ranks, the order of "
        "collectives is not same for all ranks or the scheduled collective, for some reason, didn't run. "
        "Additionally, this can be caused by GIL deadlock or other reasons such as network errors or bugs in "
        "the communications library (e.g. NCCL), etc.\n"
    )
    for r in others:
        clock.tick(rng.randrange(100, 3000))
        p = ranks.prefix(r, True)
        tag = f"[PG ID 0 PG GUID 0(default_pg) Rank {r}]"
        out.append(f"{p}[{clock.glog('E')} ProcessGroupNCCL.cpp:699] {tag} Some NCCL operations have failed or "
                   "timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might "
                   "run on corrupted/incomplete data.\n")
        out.append(f"{p}[{clock.glog('E')} ProcessGroupNCCL.cpp:705] {tag} To avoid data inconsistency, we are "
                   "taking the entire process down.\n")
        out.append(f"{p}terminate called after throwing an instance of 'c10::DistBackendError'\n")
        out.append(f"[default{ranks.local[r]}]:  what():  {tag} Process group watchdog thread terminated with "
                   f"exception: {tag} Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, "
                   "OpType=ALLREDUCE, NumelIn=8388608, NumelOut=8388608, Timeout(ms)=600000) ran for 600091 "
                   "milliseconds before timing out.\n")
    # torchrun's agent on the blamed rank's node: SIGTERM to the survivors, then the table
    node = blamed // PER_NODE
    apid = ranks.agent_pid[node]
    clock.tick(300_000)
    for r in range(node * PER_NODE, node * PER_NODE + PER_NODE):
        if r != blamed:
            out.append(f"{clock.agent('W')} {apid} torch/distributed/elastic/multiprocessing/api.py:1012] "
                       f"Sending process {ranks.pid[r]} closing signal SIGTERM\n")
    out.append(f"{clock.agent('E')} {apid} torch/distributed/elastic/multiprocessing/api.py:986] failed "
               f"(exitcode: -6) local_rank: {ranks.local[blamed]} (pid: {ranks.pid[blamed]}) of binary: "
               "/opt/torch/.venv/bin/python3\n")
    out.append("Traceback (most recent call last):\n")
    for path, line, fn, code in (
        ("<frozen runpy>", 198, "_run_module_as_main", None),
        ("<frozen runpy>", 88, "_run_code", None),
        (f"{_SITE}/torch/distributed/run.py", 994, "<module>", "main()"),
        (f"{_SITE}/torch/distributed/elastic/multiprocessing/errors/__init__.py", 362, "wrapper",
         "return f(*args, **kwargs)"),
        (f"{_SITE}/torch/distributed/run.py", 990, "main", "run(args)"),
        (f"{_SITE}/torch/distributed/run.py", 981, "run", "elastic_launch("),
        (f"{_SITE}/torch/distributed/launcher/api.py", 170, "__call__",
         "return launch_agent(self._config, self._entrypoint, list(args))"),
        (f"{_SITE}/torch/distributed/launcher/api.py", 317, "launch_agent", "raise ChildFailedError("),
    ):
        out.append(f'  File "{path}", line {line}, in {fn}\n')
        if code:
            out.append(f"    {code}\n")
    out.append("torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n")
    out.append("=" * 60 + "\n")
    out.append(f"{_SCRIPT} FAILED\n")
    out.append("-" * 60 + "\n")
    out.append("Failures:\n")
    k = 1
    for r in range(node * PER_NODE, node * PER_NODE + PER_NODE):
        if r == blamed:
            continue
        out.append(f"[{k}]:\n  time      : {clock.wall()}\n  host      : {ranks.node[r]}\n"
                   f"  rank      : {r} (local_rank: {ranks.local[r]})\n"
                   f"  exitcode  : -15 (pid: {ranks.pid[r]})\n  error_file: <N/A>\n"
                   f"  traceback : Signal 15 (SIGTERM) received by PID {ranks.pid[r]}\n")
        k += 1
    out.append("-" * 60 + "\n")
    out.append("Root Cause (first observed failure):\n")
    out.append(f"[0]:\n  time      : {clock.wall()}\n  host      : {ranks.node[blamed]}\n"
               f"  rank      : {blamed} (local_rank: {ranks.local[blamed]})\n"
               f"  exitcode  : -6 (pid: {ranks.pid[blamed]})\n  error_file: <N/A>\n"
               f"  traceback : Signal 6 (SIGABRT) received by PID {ranks.pid[blamed]}\n")
    out.append("=" * 60 + "\n")
    return out, initiating


def _header(clock: _Clock, ranks: _Ranks) -> list[str]:
    return [
        "+ torchrun --nnodes 8 --nproc-per-node 8 --rdzv-backend c10d --rdzv-endpoint gpu-node00:29500 "
        f"--tee 3 {_SCRIPT} --config configs/7b.yaml\n",
        f"{clock.agent('W')} {ranks.agent_pid[0]} torch/distributed/run.py:803] \n",
        f"{clock.agent('W')} {ranks.agent_pid[0]} torch/distributed/run.py:803] "
        + "*" * 41 + "\n",
        f"{clock.agent('W')} {ranks.agent_pid[0]} torch/distributed/run.py:803] Setting OMP_NUM_THREADS "
        "environment variable for each process to be 1 in default, to avoid your system being overloaded, "
        "please further tune the variable for optimal performance in your application as needed. \n",
        f"{clock.agent('W')} {ranks.agent_pid[0]} torch/distributed/run.py:803] " + "*" * 41 + "\n",
    ]


def generate(path: str | Path, size_bytes: int, seed: int = 1234, ranks: int = RANKS) -> Expected:
    """Write about size_bytes of log to path (within a line or two); return the expected verdict."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    clock = _Clock()
    rk = _Ranks(rng, ranks)
    fail = rng.randrange(1, ranks)
    blamed = rng.choice([r for r in range(ranks) if r // PER_NODE != fail // PER_NODE] or [0])
    # the tail is built first (its own rng) so its size is known; its clock is shifted afterwards
    tail_rng = random.Random(seed ^ 0x5EED)
    tail_clock = _Clock()
    probe, _ = _failure_tail(tail_rng, tail_clock, rk, fail, blamed, 1)
    tail_size = len("".join(probe).encode()) + 4096
    body_target = max(0, size_bytes - tail_size)

    written = 0
    lines = 0
    step = 1
    total_steps = max(1000, body_target // 9000)
    with open(path, "wb") as fh:
        head = "".join(_header(clock, rk)).encode()
        fh.write(head)
        written += len(head)
        lines += head.count(b"\n")
        buf: list[str] = []
        while written < body_target:
            buf.clear()
            for _ in range(64):
                _filler_step(rng, clock, rk, step, total_steps, buf)
                step += 1
            data = "".join(buf).encode()
            if written + len(data) > body_target:
                cut = data.rfind(b"\n", 0, body_target - written) + 1
                data = data[:cut] if cut > 0 else b""
                if not data:
                    break
            fh.write(data)
            written += len(data)
            lines += data.count(b"\n")
        seq = 3 * step + 1
        tail_rng = random.Random(seed ^ 0x5EED)
        tail, idx = _failure_tail(tail_rng, clock, rk, fail, blamed, seq)
        line_of_initiating = lines + 1 + "".join(tail[:idx]).count("\n")
        data = "".join(tail).encode()
        fh.write(data)
        written += len(data)
        lines += data.count(b"\n")
    return Expected(str(path), written, lines, seed, ranks, EXPECTED_RULE, fail, line_of_initiating,
                    blamed, seq)


def pasted_traceback(lines: int = 10_000, rank: int = 3) -> tuple[str, Expected]:
    """A traceback-rich pasted text of about `lines` lines: a deep chained traceback (900 then 901).

    Deep module nesting (nn.Module._call_impl frames) makes it long, as a recursive model or
    a compiled wrapper stack does; the innermost user frame holds the `.item()`.
    """
    p = f"[rank{rank}]:"
    out: list[str] = []
    half = (lines - 40) // 2
    out.append(f"{p}Traceback (most recent call last):\n")
    n_frames = max(1, (half - 4) // 4)
    for i in range(n_frames):
        out.append(f'{p}  File "{_SITE}/torch/nn/modules/module.py", line 1775, in _wrapped_call_impl\n')
        out.append(f"{p}    return self._call_impl(*args, **kwargs)\n")
        out.append(f'{p}  File "/workspace/llm/model.py", line {100 + i % 400}, in forward\n')
        out.append(f"{p}    h = self.blocks[{i}](h, mask)\n")
    out.append(f'{p}  File "{_SCRIPT}", line 412, in capture_step\n')
    out.append(f"{p}    grad_scale = found_inf.sum().item()  # host read inside the capture\n")
    out.append(f"{p}                 ^^^^^^^^^^^^^^^^^^^^^^^\n")
    initiating = len(out)
    out.append(f"{p}torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing\n")
    out.append(f"{p}Search for `cudaErrorStreamCaptureUnsupported' in "
               "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information.\n")
    out.extend(f"{p}{t}\n" for t in _CUDA_TAIL)
    out.append("\n")
    out.append(f"{p}During handling of the above exception, another exception occurred:\n\n")
    out.append(f"{p}Traceback (most recent call last):\n")
    used = len(out) + 1  # "During handling" holds two lines
    while used + 2 + 7 <= lines:
        out.append(f'{p}  File "{_SITE}/torch/_dynamo/eval_frame.py", line 838, in _fn\n')
        out.append(f"{p}    return fn(*args, **kwargs)\n")
        used += 2
    if used + 7 < lines:
        out.append(f"{p}           ^^^^^^^^^^^^^^^^^^^\n")
    out.append(f'{p}  File "{_SITE}/torch/cuda/graphs.py", line 265, in __exit__\n')
    out.append(f"{p}    self.cuda_graph.capture_end()\n")
    out.append(f"{p}torch.AcceleratorError: CUDA error: operation failed due to a previous error during capture\n")
    out.append(f"{p}Search for `cudaErrorStreamCaptureInvalidated' in "
               "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information.\n")
    out.extend(f"{p}{t}\n" for t in _CUDA_TAIL)
    text = "".join(out)
    exp = Expected("<text>", len(text.encode()), text.count("\n"), 0, 1, EXPECTED_RULE, rank,
                   "".join(out[:initiating]).count("\n") + 1, -1, 0)
    return text, exp


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=float, default=1024.0, help="size in MiB (default 1024)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--out", default=None, help="output path (default bench/data/torchrun-<size>mb-s<seed>.log)")
    args = ap.parse_args(argv)
    out = args.out or str(Path(__file__).parent / "data" / f"torchrun-64r-{args.size_mb:g}mb-s{args.seed}.log")
    exp = generate(out, int(args.size_mb * (1 << 20)), args.seed)
    Path(out).with_suffix(".json").write_text(json.dumps(asdict(exp), indent=1))  # what bench reuses
    json.dump(asdict(exp), sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
