"""Write server/denpex/logs/log_ngrams.json: how often bytes and 4-byte strings occur in log text.

The native key search (denpex.logs.native) fingerprints each key by the 4 of its bytes that are
rarest in logs and groups keys whose fingerprints share nibbles; this table is what "rare" means.
It is built from real output only, never from the benchmark's generated log (that would tune the
search to the benchmark): the logs under tests/data (texts from public issue threads and our own
runs) and, where given, more folders (the H200 runs under ../shared/gpu).

    python bench/gen_ngrams.py                      # tests/data
    python bench/gen_ngrams.py ../shared/gpu        # and the H200 outputs (how the shipped table was made)

Each folder counts the same (per MiB of its text), so one large source does not drown the rest.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "server" / "denpex" / "logs" / "log_ngrams.json"
SUFFIXES = {".log", ".txt", ".out", ".err", ".md"}
TOP = 4000


def _texts(folder: Path) -> bytes:
    parts = []
    for p in sorted(folder.rglob("*")):
        if p.is_file() and p.suffix.lower() in SUFFIXES and p.stat().st_size < (16 << 20):
            parts.append(p.read_bytes())
    return b"\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="*", type=Path)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    folders = [ROOT / "tests" / "data", *args.folders]
    byte_freq = [0.0] * 256
    grams: Counter[bytes] = Counter()
    used = []
    for folder in folders:
        data = _texts(folder)
        if not data:
            continue
        scale = (1 << 20) / len(data)
        for b, n in Counter(data).items():
            byte_freq[b] += n * scale
        local = Counter(data[i : i + 4] for i in range(len(data) - 3))
        for g, n in local.items():
            if b"\n" not in g:
                grams[g] += n * scale
        used.append(f"{folder.name} ({len(data) >> 10} KiB)")
    if not used:
        print("no log text found", file=sys.stderr)
        return 1
    k = len(used)
    doc = {
        "about": "occurrences per MiB of log text, averaged over: " + ", ".join(used)
                 + "; written by bench/gen_ngrams.py",
        "bytes": [round(x / k, 2) for x in byte_freq],
        "grams": {g.decode("latin-1"): round(n / k, 2) for g, n in grams.most_common(TOP)},
    }
    args.out.write_text(json.dumps(doc, ensure_ascii=True, separators=(",", ":")) + "\n")
    print(f"wrote {args.out} ({args.out.stat().st_size >> 10} KiB) from {', '.join(used)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
