"""Diagnose every log of the repository with two trees of denpex and show where their answers differ.

    python bench/diff_verdicts.py --baseline /tmp/base                # this checkout against an older tree
    python bench/diff_verdicts.py --baseline /tmp/base --tree /tmp/new --out /tmp/diff.json
    python bench/diff_verdicts.py --baseline /tmp/base --first-error     # first_error blocks compared too

Each tree runs as its own process (``PYTHONPATH=TREE/server python -m denpex diagnose FILE --format json``),
so each reads its own rule book (``TREE/rules``). Compared per log: the verdict (rule, line, rank, confidence,
notes, ...), the summary line, the findings and the exit code; the ``first_error`` block is shown where a tree
has one. Fields that differ from run to run (the host name) are left out. Exit 0 when nothing differs but
first-error answers (and their summary lines) added where the baseline found nothing, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
LOG_SUFFIXES = (".log", ".out", ".err", ".txt")


def logs(roots: list[Path]) -> list[Path]:
    out: list[Path] = []
    for root in roots:
        for p in sorted(root.rglob("*")):
            if p.is_file() and p.suffix in LOG_SUFFIXES and "reach" not in p.parts:
                out.append(p)
    return out


def diagnose(tree: Path, path: Path) -> tuple[int, dict[str, Any] | None, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree / "server")
    env.pop("DENPEX_CACHE_DIR", None)
    r = subprocess.run([sys.executable, "-m", "denpex", "diagnose", str(path), "--format", "json", "--jobs", "1"],
                       capture_output=True, env=env, timeout=300, check=False, cwd=REPO)
    try:
        doc = json.loads(r.stdout)
    except ValueError:
        return r.returncode, None, r.stderr.decode(errors="replace")[-500:]
    return r.returncode, doc, ""


def comparable(doc: dict[str, Any] | None, first_error: bool = False) -> dict[str, Any]:
    if doc is None:
        return {}
    out = {"summary": doc.get("summary"), "verdict": doc.get("verdict"), "findings": doc.get("findings"),
           "warnings": doc.get("warnings")}
    if first_error:  # the whole first-error block too: a change that should leave every answer as it was
        out["first_error"] = doc.get("first_error")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", type=Path, required=True, help="the tree before the change (a checkout)")
    ap.add_argument("--tree", type=Path, default=REPO, help="the tree after it (default: this checkout)")
    ap.add_argument("--out", type=Path, default=None, help="write every difference here as JSON")
    ap.add_argument("--first-error", action="store_true",
                    help="also compare the first_error blocks (line, text, context, collateral ...): "
                         "for a change that must not move any answer")
    ap.add_argument("paths", nargs="*", type=Path, help="folders of logs (default: tests/data, examples)")
    args = ap.parse_args()
    files = logs(args.paths or [REPO / "tests" / "data", REPO / "examples"])

    def both(p: Path) -> tuple[Path, tuple[int, dict[str, Any] | None, str], tuple[int, dict[str, Any] | None, str]]:
        return p, diagnose(args.baseline, p), diagnose(args.tree, p)

    with ThreadPoolExecutor(max_workers=2) as ex:
        results = list(ex.map(both, files))
    changed: list[dict[str, Any]] = []
    added: list[dict[str, Any]] = []
    for p, (rc0, d0, e0), (rc1, d1, e1) in results:
        rel = str(p.relative_to(REPO)) if p.is_relative_to(REPO) else str(p)
        if d0 is None or d1 is None:
            changed.append({"file": rel, "error_before": e0, "error_after": e1})
            continue
        a, b = comparable(d0, args.first_error), comparable(d1, args.first_error)
        fe = d1.get("first_error")
        if fe is not None and d0.get("first_error") is None and a["verdict"] is None:
            a.pop("summary"), b.pop("summary")  # "nothing found" becomes the first-error answer's summary
        if a == b and rc0 == rc1:
            if fe is not None and d0.get("first_error") is None:
                added.append({"file": rel, "first_error": {k: fe.get(k) for k in ("found", "line", "rank", "kind",
                                                                                 "confidence", "text")},
                              "summary_before": d0.get("summary"), "verdict": (d1.get("verdict") or {}).get("rule")})
            continue
        keys = sorted(k for k in a if a.get(k) != b.get(k))
        changed.append({"file": rel, "exit": [rc0, rc1], "fields": keys,
                        "before": {k: a.get(k) for k in keys}, "after": {k: b.get(k) for k in keys},
                        "first_error": fe})
    print(f"{len(files)} logs; {len(changed)} with a different verdict, summary, findings or exit code; "
          f"{len(added)} unchanged but given a first-error block")
    for c in changed:
        print(f"CHANGED {c['file']}: {', '.join(c.get('fields', [])) or 'not diagnosed'} exit {c.get('exit')}")
        for k in c.get("fields", []):
            before, after = json.dumps(c["before"][k])[:300], json.dumps(c["after"][k])[:300]
            print(f"    {k}: {before}\n    {' ' * len(k)}  -> {after}")
    for a in added:
        fe = a["first_error"]
        what = (f"line {fe['line']} rank {fe['rank']} {fe['kind']} ({fe['confidence']}): {str(fe['text'])[:120]}"
                if fe.get("found") else "only collateral: the initiating error is not in this log")
        print(f"FIRST-ERROR {a['file']} (verdict {a['verdict']}): {what}")
    if args.out is not None:
        args.out.write_text(json.dumps({"changed": changed, "added": added}, indent=1))
    return 1 if changed else 0


if __name__ == "__main__":
    raise SystemExit(main())
