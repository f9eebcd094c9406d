"""More 1 GiB log shapes for the benchmarks (issue 22, "Speed on every shape"), beside gen_log.py's.

* ``benign-errors``: a healthy 64-rank training run whose lines are full of error words that name no
  error: ``errors=0``, ``error_rate: 0.0123``, ``failed_requests: 0``, ``0 failed``, ``timeouts=0``,
  ``--max-errors 100``, ``ERROR_LEVEL=3``, ``exception_count=0``, with ordinary training lines between
  them. Nearly every line matches the seeds' ``rg -n -i 'error|exception|timeout|failed'``; no rule
  matches and there is no first error line (the first-error pass reads the whole log and finds none).
* ``benign-colour``: the same lines as a rich console writes them, with ANSI colour codes.
* ``no-failure``: gen_log.py's log cut before its failure: the run as it was before the ``.item()``
  capture failed. No rule names an initiating failure; the handled checkpoint-upload tracebacks
  (``ConnectionResetError``, one every 4999 steps, so from about 40 MiB on) are collateral, so the
  answer is "the initiating error is not in this log" (no first-error block at all in a smaller cut).
* ``frame-dense``: gen_log.py's training lines with stack-printing warnings between them (logging's
  ``Stack (most recent call last):`` and its frames, ``[rank3]:   File "/workspace/train.py", line 88, in
  forward``), a fifth of all lines frames; gen_log's failure tail at the end (its verdict, shifted).
* ``nccl-dense``: a run with ``NCCL_DEBUG=INFO``: four lines in five are NCCL INFO lines (channels,
  rings, trees, proxy, plugin, ``NCCL_IB_TIMEOUT set by environment``); gen_log's failure tail at the end.
* ``long-ansi``: very long lines: coloured progress bars redrawn with bare ``\r`` thousands of times
  before their newline (lines of 50-400 KiB), between ordinary lines; gen_log's failure tail at the end.
* ``repeated-rank``: one rank's log (its lines of a gen_log-style run, without the rank prefixes) written
  64 times over, the failing rank's own failure lines after the last copy (no rank on any line).

Deterministic for a given (size, seed).

    python bench/gen_shapes.py benign-errors --size-mb 64 --out /tmp/benign.log
    python bench/gen_shapes.py no-failure --source /tmp/torchrun.log --out /tmp/nofail.log
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

GENERATOR_VERSION = 3
RANKS = 64
_TAIL_MARK = b"capturing decode graph (bucket 8)"  # gen_log.py's failure tail opens with this line
_HANDLED = b"ConnectionResetError: [Errno 104] Connection reset by peer"


@dataclass
class ShapeExpected:
    """What a correct `denpex diagnose FILE --format json` says of a shape: no verdict, and this first error."""

    path: str
    shape: str
    bytes: int
    lines: int
    seed: int
    verdict: str | None = None  # the rule of the verdict (None: no verdict)
    line: int | None = None  # the verdict's line, where there is one
    rank: int | None = None  # the verdict's rank (None: none known, or no verdict)
    first_error: dict[str, Any] | None = field(default=None)  # None: no first-error block at all
    generator_version: int = GENERATOR_VERSION


def _stamp(us: int) -> str:
    s = us // 1_000_000
    return f"2026-11-30 {s // 3600 % 24:02d}:{s // 60 % 60:02d}:{s % 60:02d},{us % 1_000_000 // 1000:03d}"


def _benign_line(rng: random.Random, r: int, step: int, us: int) -> str:
    """One line of a healthy run; most carry an error word that says nothing failed."""
    p = f"[rank{r}]:" if step % 3 else f"[default{r % 8}]:[rank{r}]:"
    t = _stamp(us)
    x = rng.random()
    loss = 2.0 + 1.5 * (0.9995 ** step) + rng.random() * 0.05
    if x < 0.30:
        return (f"{p}[{t}][llm.train][INFO] - step {step} | loss {loss:.4f} | errors=0 | skipped_batches=0 | "
                f"nan_count=0 | {140_000 + rng.randrange(20_000)} tok/s | mem {58 + rng.random() * 4:.1f} GiB\n")
    if x < 0.45:
        return (f"{p}[{t}][llm.eval][INFO] - eval step {step} | error_rate: {rng.random() * 0.05:.4f} | "
                f"accuracy: {0.9 + rng.random() * 0.09:.4f} | eval_loss {loss + 0.1:.4f}\n")
    if x < 0.58:
        return (f"{p}[{t}][serve.metrics][INFO] - requests={rng.randrange(10_000)} failed_requests: 0 "
                f"timeouts=0 retries=0 p50_ms={20 + rng.random() * 5:.1f} p99_ms={40 + rng.random() * 9:.1f}\n")
    if x < 0.70:
        return (f"{p}[{t}][data.check][INFO] - shard {rng.randrange(4096):04d}: {rng.randrange(1, 9)}096 "
                "records, 0 failed, 0 errors, checksum ok\n")
    if x < 0.78:
        return (f"{p}[{t}][llm.train][INFO] - no exceptions in the last 100 steps (exception_count=0, "
                f"timeout_count=0, error_count=0) | grad_norm {0.4 + rng.random():.3f}\n")
    if x < 0.82:
        return (f"{p}[{t}][llm.config][INFO] - ERROR_LEVEL=3 --max-errors 100 --on-error=retry "
                f"exception_handler=default request_timeout=30s nccl_timeout=1800s\n")
    if x < 0.85:
        return (f"{p}[{t}][tests.smoke][INFO] - ===== {rng.randrange(100, 400)} passed, 0 failed, 0 errors, "
                f"{rng.randrange(3)} skipped in {rng.random() * 9 + 1:.2f}s =====\n")
    if x < 0.88:
        return (f"{p}[{t}][ckpt][INFO] - saved shard {rng.randrange(4096)} (errors: none, failed uploads: 0, "
                f"timeouts: 0)\n")
    return (f"{p}[{t}][llm.train][INFO] - step {step} | loss {loss:.4f} | lr {3e-4 * min(1.0, step / 2000):.3e} | "
            f"grad_norm {0.4 + rng.random():.3f} | {140_000 + rng.randrange(20_000)} tok/s\n")


def _coloured(line: str) -> str:
    """The line as a rich console writes it: the time green, the level bold, the logger cyan."""
    head, sep, rest = line.partition("][")
    if not sep:
        return line
    prefix, _, stamp = head.rpartition("[")
    logger, _, rest = rest.partition("][")
    level, _, msg = rest.partition("] - ")
    return (f"{prefix}\x1b[32m{stamp}\x1b[0m | \x1b[1m{level:<8}\x1b[0m | \x1b[36m{logger}\x1b[0m - {msg}")


def benign_errors(path: str | Path, size_bytes: int, seed: int = 1234, ranks: int = RANKS,
                  colour: bool = False) -> ShapeExpected:
    """Write about size_bytes of a healthy run full of benign error words (whole lines); with colour,
    every line carries ANSI colour codes (shape benign-colour)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    written = lines = 0
    us = (41 * 60 + 7) * 1_000_000
    step = 1
    order = list(range(ranks))
    with open(path, "wb") as fh:
        while written < size_bytes:
            buf: list[str] = []
            for _ in range(32):
                rng.shuffle(order)
                for r in order:
                    us += rng.randrange(50, 900)
                    line = _benign_line(rng, r, step, us)
                    buf.append(_coloured(line) if colour else line)
                step += 1
            data = "".join(buf).encode()
            if written + len(data) > size_bytes:
                cut = data.rfind(b"\n", 0, size_bytes - written) + 1
                data = data[:cut]
                if not data:
                    break
            fh.write(data)
            written += len(data)
            lines += data.count(b"\n")
    return ShapeExpected(str(path), "benign-colour" if colour else "benign-errors", written, lines, seed)


def no_failure(source: str | Path, path: str | Path, seed: int = 1234) -> ShapeExpected:
    """gen_log.py's log at `source`, copied to `path` up to the line that opens its failure."""
    src, path = Path(source), Path(path)
    size = src.stat().st_size
    with open(src, "rb") as fh:
        back = min(size, 1 << 20)
        fh.seek(size - back)
        tail = fh.read(back)
    at = tail.rfind(_TAIL_MARK)
    if at < 0:
        raise SystemExit(f"{src}: not a gen_log.py log (no failure tail in its last MiB)")
    cut = size - back + tail.rfind(b"\n", 0, at) + 1
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = 0
    handled = False  # a handled upload's traceback (every 4999 steps): its ConnectionResetError is collateral
    tail = b""
    with open(src, "rb") as fi, open(path, "wb") as fo:
        left = cut
        while left:
            data = fi.read(min(left, 16 << 20))
            if not data:
                break
            fo.write(data)
            lines += data.count(b"\n")
            left -= len(data)
            handled = handled or _HANDLED in tail + data[:256] or _HANDLED in data
            tail = data[-256:]
    fe = {"found": False} if handled else None  # "the initiating error is not in this log", or no error line
    return ShapeExpected(str(path), "no-failure", cut, lines, seed, first_error=fe)


def _gen_log() -> Any:
    """bench/gen_log.py as a module (its clock, ranks, filler and failure tail)."""
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    import gen_log

    return gen_log


_FRAMES = (
    ("/workspace/train.py", 88, "forward", "return self.block(x)"),
    ("/workspace/train.py", 141, "train_step", "loss = model(batch).loss"),
    ("/workspace/llm/model.py", 312, "forward", "h = layer(h, mask)"),
    ("/opt/torch/.venv/lib/python3.12/site-packages/torch/nn/modules/module.py", 1786, "_call_impl",
     "return forward_call(*args, **kwargs)"),
    ("/workspace/llm/attention.py", 57, "forward", "logger.warning(\"slow path\", stack_info=True)"),
)
_NCCL_MORE = (
    "NCCL_IB_TIMEOUT set by environment to 22.",
    "NCCL_SOCKET_IFNAME set by environment to eth0",
    "Bootstrap: Using eth0:10.1.{d}.7<0>",
    "NET/IB : Using [0]mlx5_{d}:1/IB [1]mlx5_{nd}:1/IB [RO]; OOB eth0:10.1.{d}.7<0>",
    "cudaDriverVersion 12080",
    "NCCL version 2.27.3+cuda12.9",
    "P2P plugin v8 IBext_v8",
    "[Proxy Service] Device {d} CPU core {c}",
    "[Proxy Service UDS] Device {d} CPU core {c}",
    "Setting affinity for GPU {d} to ffff,ffffffff",
    "NVLS multicast support is not available on dev {d}",
    "Trees [0] {nr}/-1/-1->{r}->-1 [1] {nr}/-1/-1->{r}->-1",
    "Channel {c:02d}/1 : {r}[{d}] -> {nr}[{nd}] via P2P/CUMEM",
    "AllReduce: opCount {c:x} sendbuff 0x7f1c2c000000 recvbuff 0x7f1c2c000000 count 8388608 datatype 7 op 0 "
    "root 0 comm 0x55a1c3a00000 [nranks={n}] stream 0x55a1c4d1e2f0",
)


def _planted(path: Path, size_bytes: int, seed: int, shape: str,
             body: Callable[[random.Random, Any, Any, int, int, list[str]], None]) -> ShapeExpected:
    """body(rng, clock, ranks, step, total, out) appends one step of the shape's lines; gen_log.py's
    failure tail closes the file. The verdict is gen_log's: its rule, failing rank, shifted line."""
    g = _gen_log()
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    clock = g._Clock()
    rk = g._Ranks(rng, RANKS)
    fail = rng.randrange(1, RANKS)
    blamed = rng.choice([r for r in range(RANKS) if r // g.PER_NODE != fail // g.PER_NODE])
    probe, _ = g._failure_tail(random.Random(seed ^ 0x5EED), g._Clock(), rk, fail, blamed, 1)
    body_target = max(0, size_bytes - len("".join(probe).encode()) - 4096)
    total = max(1000, body_target // 9000)
    written = lines = 0
    step = 1
    with open(path, "wb") as fh:
        buf: list[str] = []
        while written < body_target:
            buf.clear()
            for _ in range(16):
                body(rng, clock, rk, step, total, buf)
                step += 1
            data = "".join(buf).encode()
            if written + len(data) > body_target:
                data = data[: data.rfind(b"\n", 0, body_target - written) + 1]
                if not data:
                    break
            fh.write(data)
            written += len(data)
            lines += data.count(b"\n")
        tail, idx = g._failure_tail(random.Random(seed ^ 0x5EED), clock, rk, fail, blamed, 3 * step + 1)
        line = lines + 1 + "".join(tail[:idx]).count("\n")
        data = "".join(tail).encode()
        fh.write(data)
        written += len(data)
        lines += data.count(b"\n")
    return ShapeExpected(str(path), shape, written, lines, seed, g.EXPECTED_RULE, line, fail)


def _frame_dense_step(rng: random.Random, clock: Any, rk: Any, step: int, total: int, out: list[str]) -> None:
    """gen_log's step, then stack-printing warnings until about a fifth of the lines are frames."""
    g = _gen_log()
    start = len(out)
    g._filler_step(rng, clock, rk, step, total, out)
    n = sum(s.count("\n") for s in out[start:])
    frames = 0
    while frames * 5 < n:
        r = rng.randrange(rk.n)
        p = rk.prefix(r, step % 3 == 0)
        k = rng.randrange(3, 6)
        out.append(f"{p}[{clock.iso()}][llm.attention][WARNING] - slow attention path for seq {rng.randrange(8192)}\n"
                   f"{p}Stack (most recent call last):\n")
        for path, ln, fn, code in _FRAMES[:k]:
            out.append(f'{p}  File "{path}", line {ln}, in {fn}\n{p}    {code}\n')
        frames += k
        n += 2 + 2 * k


def _nccl_dense_step(rng: random.Random, clock: Any, rk: Any, step: int, total: int, out: list[str]) -> None:
    """Four lines in five NCCL INFO lines, the fifth a training line."""
    g = _gen_log()
    tpls = g._NCCL_INFO + _NCCL_MORE
    for r in range(rk.n):
        clock.tick(rng.randrange(50, 900))
        d = rk.local[r]
        if rng.random() < 0.2:
            out.append(f"{rk.prefix(r, False)}[{clock.iso()}][llm.train][INFO] - step {step} | "
                       f"loss {2.5 + rng.random() * 0.1:.4f} | {140_000 + rng.randrange(20_000)} tok/s\n")
            continue
        body = tpls[rng.randrange(len(tpls))].format(
            c=rng.randrange(24), r=r, d=d, nr=(r + 1) % rk.n, nd=(d + 1) % g.PER_NODE, n=rk.n,
            nodes=rk.n // g.PER_NODE, comm=0x55A1C3A00000 + r * 0x1000 + step, bus=0x18 + d * 0x11,
            cid=0x9E3779B97F4A7C15 ^ step, ms=rng.randrange(100))
        out.append(f"{rk.node[r]}:{rk.pid[r]}:{rk.tid[r]} [{d}] NCCL INFO {body}\n")


def _long_ansi_step(rng: random.Random, clock: Any, rk: Any, step: int, total: int, out: list[str]) -> None:
    """A coloured progress bar redrawn with bare CRs, 500-4000 frames before its newline, then a few
    ordinary lines."""
    frames = []
    k0 = step * 1000
    for k in range(k0, k0 + rng.randrange(500, 4000)):
        pct = k * 100 // (k0 + 4000)
        bar = "\u2501" * (pct // 4)
        frames.append(f"\x1b[2K\x1b[1mEpoch {step}\x1b[0m \x1b[38;5;197m{bar}\x1b[0m\x1b[38;5;237m"
                      f"{chr(0x2501) * (25 - pct // 4)}\x1b[0m \x1b[35m{pct:3d}%\x1b[0m \x1b[32m{k}/{k0 + 4000}\x1b[0m "
                      f"\x1b[33m0:0{k % 10}:{k % 60:02d}\x1b[0m loss={2.0 + rng.random():.3f}")
    out.append(f"{rk.prefix(0, False)}" + "\r".join(frames) + "\n")
    for _ in range(rng.randrange(4, 12)):
        r = rng.randrange(rk.n)
        out.append(f"{rk.prefix(r, False)}[{clock.iso()}][llm.train][INFO] - step {step} | "
                   f"loss {2.5 + rng.random() * 0.1:.4f} | {140_000 + rng.randrange(20_000)} tok/s\n")
        clock.tick(rng.randrange(50, 900))


def frame_dense(path: str | Path, size_bytes: int, seed: int = 1234) -> ShapeExpected:
    return _planted(Path(path), size_bytes, seed, "frame-dense", _frame_dense_step)


def nccl_dense(path: str | Path, size_bytes: int, seed: int = 1234) -> ShapeExpected:
    return _planted(Path(path), size_bytes, seed, "nccl-dense", _nccl_dense_step)


def long_ansi(path: str | Path, size_bytes: int, seed: int = 1234) -> ShapeExpected:
    return _planted(Path(path), size_bytes, seed, "long-ansi", _long_ansi_step)


def _strip_rank(line: str, rk: Any, r: int) -> str | None:
    """The line without rank r's prefixes, or None where another writer wrote it."""
    for p in (rk.prefix(r, True), rk.prefix(r, False), f"[default{rk.local[r]}]:"):
        if line.startswith(p):
            return line[len(p):]
    if line.startswith(f"{rk.node[r]}:{rk.pid[r]}:"):
        return line
    return None


def repeated_rank(path: str | Path, size_bytes: int, seed: int = 1234, copies: int = RANKS) -> ShapeExpected:
    """One rank's log written `copies` times, then that rank's failure lines (no rank prefixes: the
    verdict has no rank)."""
    g = _gen_log()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    clock = g._Clock()
    rk = g._Ranks(rng, g.PER_NODE)  # one node's ranks: a fail rank's lines are an eighth of the output
    fail = rng.randrange(1, rk.n)
    probe, _ = g._failure_tail(random.Random(seed ^ 0x5EED), g._Clock(), rk, fail, 0, 1)
    part_target = max(1, (size_bytes - len("".join(probe).encode())) // copies)
    mine: list[str] = []
    size = 0
    step = 1
    total = max(1000, part_target * 8 // 9000)
    while size < part_target:
        out: list[str] = []
        g._filler_step(rng, clock, rk, step, total, out)
        step += 1
        for chunk in out:
            for line in chunk.splitlines(keepends=True):
                s = _strip_rank(line, rk, fail)
                if s is not None:
                    mine.append(s)
                    size += len(s.encode())
    part = "".join(mine).encode()
    tail, idx = g._failure_tail(random.Random(seed ^ 0x5EED), clock, rk, fail, 0, 3 * step + 1)
    kept: list[str] = []
    line_in_tail = 0
    for i, chunk in enumerate(tail):
        for ln in chunk.splitlines(keepends=True):
            s = _strip_rank(ln, rk, fail)
            if s is None:
                continue
            if i == idx:
                line_in_tail = len(kept) + 1
            kept.append(s)
    tdata = "".join(kept).encode()
    with open(path, "wb") as fh:
        for _ in range(copies):
            fh.write(part)
        fh.write(tdata)
    per = part.count(b"\n")
    return ShapeExpected(str(path), "repeated-rank", len(part) * copies + len(tdata),
                         per * copies + tdata.count(b"\n"), seed, g.EXPECTED_RULE, per * copies + line_in_tail, None)


PLANTED = {"frame-dense": frame_dense, "nccl-dense": nccl_dense, "long-ansi": long_ansi,
           "repeated-rank": repeated_rank}
SHAPES = ("benign-errors", "benign-colour", "no-failure", *PLANTED)


def make(shape: str, path: str | Path, size_bytes: int, seed: int = 1234, source: str | Path | None = None
         ) -> ShapeExpected:
    """Write one shape (no-failure needs `source`, a gen_log.py log) and return what it must give."""
    if shape in ("benign-errors", "benign-colour"):
        return benign_errors(path, size_bytes, seed, colour=shape == "benign-colour")
    if shape == "no-failure":
        if source is None:
            raise SystemExit("no-failure needs --source (a log made by bench/gen_log.py)")
        return no_failure(source, path, seed)
    return PLANTED[shape](path, size_bytes, seed)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("shape", choices=SHAPES)
    ap.add_argument("--size-mb", type=float, default=1024.0, help="size in MiB (default 1024; not no-failure)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--source", default=None, help="no-failure: the gen_log.py log to cut")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    exp = make(args.shape, args.out, int(args.size_mb * (1 << 20)), args.seed, args.source)
    Path(args.out).with_suffix(".json").write_text(json.dumps(asdict(exp), indent=1))
    json.dump(asdict(exp), sys.stdout, indent=1)
    print()
    return 0

if __name__ == "__main__":
    raise SystemExit(main())
