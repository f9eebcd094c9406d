"""Issue 21's frozen-state rules on a GPU: each case here replays something other than its eager run, and its
`--clean` twin (and every fix Denpex offers for the case) matches eager.

For each case `<rule>.py` (or `<rule>--<variant>.py`, a second case of one rule): run it with DENPEX_EAGER=1 (the
reference RESULT) and as is (it must exit 0 with another RESULT: the rule is silent); the analyser must flag it
with that rule and not its `--clean` twin; the twin and each file Denpex's code fixes make (`fixes/<case>.fixN.py`
for finding N's first code fix, `fixes/<case>.fixN.M.py` for its fix M > 0, written by `--write-fixes`, where
Denpex runs) must exit 0 with the eager RESULT (rtol/atol 1e-3). Writes <out>/report.json. Needs an NVIDIA GPU
and torch; where Denpex cannot be imported (a bare GPU machine) the analyser checks are left to `--write-fixes`,
which records them in fixes/scan.json.
Usage: python tests/gpu/frozen_state/run.py --write-fixes   (here), then --out DIR (on the GPU machine)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run(path: Path, eager: bool) -> dict[str, object]:
    env = dict(os.environ, DENPEX_EAGER="1" if eager else "0")
    r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300, env=env, check=False)
    res = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT:")]
    vals = [float(v) for v in res[-1].split()[1:]] if res else None
    return {"rc": r.returncode, "result": vals, "tail": (r.stdout + r.stderr)[-600:]}


def close(a: object, b: object) -> bool:
    if not isinstance(a, list) or not isinstance(b, list) or len(a) != len(b):
        return False
    return all(math.isclose(x, y, rel_tol=1e-3, abs_tol=1e-3) for x, y in zip(a, b, strict=True))


def cases() -> list[Path]:
    return sorted(p for pat in ("replay-*.py", "compile-*.py") for p in HERE.glob(pat) if not p.stem.endswith("--clean"))


def rule_of(case: Path) -> str:
    """`replay-frozen-branch--mode` -> `replay-frozen-branch`."""
    return case.stem.split("--", 1)[0]


def write_fixes() -> int:
    """Where Denpex runs: what the analyser says of each case and twin, and the files its fixes make."""
    from denpex.source import analyse_source
    from denpex.source.engine.analyse import apply_edits

    fixdir = HERE / "fixes"
    fixdir.mkdir(exist_ok=True)
    scan: dict[str, object] = {}
    for case in cases():
        rule, name = rule_of(case), case.stem
        twin = case.with_name(f"{name}--clean.py")
        found = [f for f in analyse_source(case.read_text(), str(case)) if f.rule == rule]
        twin_found = [f for f in analyse_source(twin.read_text(), str(twin)) if f.rule == rule]
        fixes = []
        for i, f in enumerate(found):
            # a suppression comment or the eager fallback: no claim about the graph
            code = [fx for fx in f.fixes if not fx.title.startswith(("Disable", "Eager"))]
            for j, fx in enumerate(code):
                p = fixdir / (f"{name}.fix{i}.py" if j == 0 else f"{name}.fix{i}.{j}.py")
                p.write_text(apply_edits(case.read_text(), fx.edits))
                fixes.append({"title": fx.title, "file": p.name})
        scan[name] = {"flagged": [(f.start_line + 1, f.severity) for f in found],
                      "twin_flagged": [(f.start_line + 1, f.severity) for f in twin_found], "fixes": fixes}
    (fixdir / "scan.json").write_text(json.dumps(scan, indent=1) + "\n")
    print(json.dumps(scan, indent=1))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--write-fixes", action="store_true")
    a = ap.parse_args()
    if a.write_fixes:
        return write_fixes()
    out = Path(a.out or "frozen_state_out")
    out.mkdir(parents=True, exist_ok=True)
    scanned = json.loads((HERE / "fixes" / "scan.json").read_text())
    report, ok_all = [], True
    for case in cases():
        rule, name = rule_of(case), case.stem
        twin = case.with_name(f"{name}--clean.py")
        eager, graph = run(case, True), run(case, False)
        twin_run = run(twin, False)
        sc = scanned[name]
        fixes = [{"title": fx["title"], "run": run(HERE / "fixes" / fx["file"], False)} for fx in sc["fixes"]]
        row = {
            "rule": rule,
            "case": name,
            "eager": eager,
            "graph": graph,
            "differs": graph["rc"] == 0 and graph["result"] is not None and not close(graph["result"], eager["result"]),
            "flagged": sc["flagged"],
            "twin_flagged": sc["twin_flagged"],
            "twin": twin_run,
            "twin_matches": twin_run["rc"] == 0 and close(twin_run["result"], run(twin, True)["result"])
            and close(twin_run["result"], eager["result"]),
            "fixes": [dict(fx, matches=close(fx["run"]["result"], eager["result"])) for fx in fixes],
        }
        row["ok"] = bool(row["differs"] and row["flagged"] and not row["twin_flagged"] and row["twin_matches"]
                         and all(fx["matches"] for fx in row["fixes"]))
        ok_all &= bool(row["ok"])
        report.append(row)
        print(name, "OK" if row["ok"] else "FAIL", "eager", eager["result"], "graph", graph["result"],
              "twin", twin_run["result"], "fixes", [(fx["title"][:40], fx["matches"]) for fx in row["fixes"]])
    (out / "report.json").write_text(json.dumps(report, indent=1, default=str))
    return 0 if ok_all else 1


if __name__ == "__main__":
    raise SystemExit(main())
