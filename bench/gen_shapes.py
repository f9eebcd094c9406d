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

Deterministic for a given (size, seed).

    python bench/gen_shapes.py benign-errors --size-mb 64 --out /tmp/benign.log
    python bench/gen_shapes.py no-failure --source /tmp/torchrun.log --out /tmp/nofail.log
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

GENERATOR_VERSION = 2
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
    return ShapeExpected(str(path), "no-failure", cut, lines, seed, None, fe)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("shape", choices=("benign-errors", "benign-colour", "no-failure"))
    ap.add_argument("--size-mb", type=float, default=1024.0, help="benign-errors: size in MiB (default 1024)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--source", default=None, help="no-failure: the gen_log.py log to cut")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    if args.shape in ("benign-errors", "benign-colour"):
        exp = benign_errors(args.out, int(args.size_mb * (1 << 20)), args.seed, colour=args.shape == "benign-colour")
    else:
        if args.source is None:
            raise SystemExit("no-failure needs --source (a log made by bench/gen_log.py)")
        exp = no_failure(args.source, args.out, args.seed)
    Path(args.out).with_suffix(".json").write_text(json.dumps(asdict(exp), indent=1))
    json.dump(asdict(exp), sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
