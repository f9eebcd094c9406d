"""Reach: `denpex scan` (a subprocess, run at each workspace's root as a user runs it) against the annotated
multi-file workspaces of tests/data/reach (issue 11; the cases are those of call-resolution research §3.4 plus
hooks, optimizer factories, custom optimizers, graphed/compiled models, relative imports, helper objects).

- Precision is asserted for every workspace: no finding of RULE on a `# ok: RULE` line and no error-level
  finding on a line annotated for no rule.
- Recall is asserted per workspace: every `# ruleid:` line is flagged by its rule. Workspaces the analyser cannot
  reach yet are strict xfails naming what is missing, so the suite flips loudly when the resolver lands; remove
  the mark of a case once it passes (the current list with reasons: /work/notes/reach-status.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from denpex.rulebook import load_rulebook
from denpex.source.engine.analyse import analyse_workspace
from denpex.source.resolve.workspace import Workspace
from tests.source.reach_score import (
    REACH,
    REPO,
    Finding,
    LineNotes,
    Score,
    annotations_in,
    annotations_of_text,
    describe,
    python_files,
    score,
    score_dir,
    workspaces,
)

# What the analyser at HEAD does not reach yet, per workspace (the reason is what resolution is missing).
RECALL_XFAIL: dict[str, str] = {
    "20_compiled_and_graphed_model": "compile-skip-cudagraphs not looked for in a helper called by the forward of"
                                     " a module compiled with mode='reduce-overhead'",
    "inference_server": "model from a factory in a package __init__, zip() over a ModuleList, then"
                        " self.attn.forward(...) on a plain object: 5 calls from self.runner.forward(...)",
    "diffusion_pipeline": "pipe.unet / pipe.vae = torch.compile(..., mode='reduce-overhead') on attributes: the"
                          " pipeline's self.unet(...) calls (classifier-free guidance) and the VAE's callees are"
                          " not treated as compiled",
    "fast_decode": "decode_one_token rebound by `global` to torch.compile(..., mode='reduce-overhead') of a"
                   " function imported from another module; its outputs kept across calls are not followed",
}

# Known wrong findings of the analyser at HEAD (precision bugs): strict xfails, so a fix flips them.
PRECISION_XFAIL: dict[str, str] = {
}

WORKSPACES = workspaces()
BENCH = REPO / "bench" / "bench_reach.py"
NAMES = [d.name for d in WORKSPACES]


def _marked(reasons: dict[str, str], kind: str) -> list[object]:
    return [pytest.param(d, id=d.name, marks=pytest.mark.xfail(strict=True, reason=f"{kind}: {reasons[d.name]}"))
            if d.name in reasons else pytest.param(d, id=d.name) for d in WORKSPACES]


@cache
def _score(d: Path) -> Score:
    return score_dir(d)


def test_every_workspace_is_annotated_with_real_source_rules() -> None:
    book = load_rulebook()
    source_rules = {r.id for r in book.rules if r.source is not None}
    for d in WORKSPACES:
        notes = annotations_in(d)
        named = {r for n in notes.values() for r in n.ruleid | n.ok | n.todo}
        assert named <= source_rules, (d.name, named - source_rules)
        # every workspace judges something; the negative-only ones carry `# ok:` lines
        assert any(n.ruleid or n.ok for n in notes.values()) or (d / "steps.json").exists(), d.name
    assert {d.name for d in WORKSPACES} >= set(RECALL_XFAIL) | set(PRECISION_XFAIL), "a mark names no workspace"
    assert len([d for d in WORKSPACES if d.parent.name == "cases"]) >= 22
    assert len([d for d in WORKSPACES if d.parent.name == "programs"]) >= 3


@pytest.mark.parametrize("ws", _marked(PRECISION_XFAIL, "precision"))
def test_reach_precision(ws: Path) -> None:
    s = _score(ws)
    assert not s.false_positives, "false findings: " + "; ".join(describe(f) for f in s.false_positives)


@pytest.mark.parametrize("ws", _marked(RECALL_XFAIL, "reach"))
def test_reach_recall(ws: Path) -> None:
    s = _score(ws)
    missed = sorted(s.missed)
    assert not missed, f"{len(s.hits)}/{len(s.hazards)} found; missed: " + "; ".join(
        f"{p}:{ln} {r}" for p, ln, r in missed)


def test_scoring_classifies_each_kind_of_finding() -> None:
    """The scorer itself: a hit, a miss, a look-alike flagged, a wrong rule, an unannotated error and warning."""
    notes = annotations_of_text("a.item()  # ruleid: capture-item-sync\n"
                                "b.cpu()  # ruleid: capture-host-copy\n"
                                "c.item()  # ok: capture-item-sync\n"
                                "d = 1\n"
                                "e.item()  # todoruleid: capture-item-sync\n")
    keyed: dict[tuple[str, int], LineNotes] = {("m.py", ln): n for ln, n in notes.items()}
    found = [Finding("m.py", 1, "capture-item-sync", "error"), Finding("m.py", 3, "capture-item-sync", "warning"),
             Finding("m.py", 2, "capture-explicit-sync", "error"), Finding("m.py", 4, "capture-host-copy", "error"),
             Finding("m.py", 4, "replay-python-side-effects", "warning"),
             Finding("m.py", 5, "capture-item-sync", "error")]
    s = score("t", keyed, found)
    assert s.hits == {("m.py", 1, "capture-item-sync")}
    assert s.missed == {("m.py", 2, "capture-host-copy")}
    assert [f.line for f in s.false_ok] == [3] and [f.line for f in s.false_error] == [4]
    assert [f.line for f in s.wrong_rule] == [2] and [f.rule for f in s.other] == ["replay-python-side-effects"]
    assert s.bonus == {("m.py", 5, "capture-item-sync")}


# ---- case 15: edits in another file, as an editor sends them, on one Workspace ----

INCREMENTAL = REACH / "cases" / "15_incremental"


def _errors(ws: Workspace, root: Path) -> set[tuple[str, int, str]]:
    out: set[tuple[str, int, str]] = set()
    for path, found in analyse_workspace(ws).items():
        rel = Path(path).relative_to(root).as_posix()
        out.update((rel, f.start_line + 1, f.rule) for f in found if f.severity == "error")
    return out


def _line_of(text: str, needle: str) -> int:
    lines = [i for i, line in enumerate(text.splitlines(), start=1) if needle in line]
    assert len(lines) == 1, (needle, lines)
    return lines[0]


def _fresh(root: Path, texts: dict[str, str]) -> Workspace:
    ws = Workspace([str(root)])
    for rel, text in texts.items():
        ws.add_file(str(root / rel), text)
    return ws


def _incremental_steps() -> list[tuple[str, set[tuple[str, int, str]], set[tuple[str, int, str]],
                                       set[tuple[str, int, str]]]]:
    """(step, findings after the edit on the living workspace, on a fresh one, expected)."""
    root = INCREMENTAL
    spec = json.loads((root / "steps.json").read_text(encoding="utf-8"))
    texts = {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8") for p in python_files(root)}
    ws = _fresh(root, texts)
    out = [("base", _errors(ws, root), _errors(_fresh(root, texts), root), set[tuple[str, int, str]]())]
    for step in spec["steps"]:
        for rel, src in step["replace"].items():
            texts[rel] = (root / src).read_text(encoding="utf-8")
            ws.add_file(str(root / rel), texts[rel])
        want = {(e["path"], _line_of(texts[e["path"]], e["contains"]), e["rule"]) for e in step["expect"]}
        out.append((step["name"], _errors(ws, root), _errors(_fresh(root, texts), root), want))
    return out


def test_incremental_equals_fresh() -> None:
    for name, living, fresh, _ in _incremental_steps():
        assert living == fresh, name


def test_incremental_hazard_appears_and_disappears() -> None:
    for name, living, _, want in _incremental_steps():
        assert living == want, name


# ---- bench/bench_reach.py on a real-tree layout: a truth TSV, unlisted lines unreviewed ----

def test_bench_scores_a_tree_against_its_truth_file(tmp_path: Path) -> None:
    tree = tmp_path / "proj"
    tree.mkdir()
    (tree / "step.py").write_text(
        "import torch\n\n"
        "def body(x):\n"
        "    return x.sum().item()\n\n"  # line 4: a hazard, flagged through the call
        "x = torch.randn(8, device='cuda')\n"
        "g = torch.cuda.CUDAGraph()\n"
        "with torch.cuda.graph(g):\n"
        "    y = body(x)\n"
        "    z = x.cpu()\n"  # line 10: a hazard the truth file leaves out (unreviewed)
        "g.replay()\n"
        "print(y.item())\n",  # line 12: reviewed ok; a grep hit that is not a hazard
        encoding="utf-8")
    truth = tmp_path / "truth.tsv"
    truth.write_text("repo\tcommit\tpath\tline\trule\tverdict\n"
                     "me/proj\tabc\tstep.py\t4\tcapture-item-sync\thazard\n"
                     "me/proj\tabc\tstep.py\t12\tcapture-item-sync\tok\n", encoding="utf-8")
    out = tmp_path / "rows.json"
    r = subprocess.run([sys.executable, str(BENCH), "--trees-only",
                        "--tree", str(tree), "--truth", str(truth), "--json", str(out)],
                       capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stderr
    row = next(x for x in json.loads(out.read_text(encoding="utf-8")) if x["name"] == "tree/proj")
    assert (row["hazards"], row["found"], row["false_pos"], row["unreviewed"]) == (1, 1, 0, 1)
    assert (row["grep_hits"], row["grep_found"], row["grep_not_hazard"], row["grep_unreviewed"]) == (3, 1, 1, 1)
    bad = tmp_path / "bad.tsv"
    bad.write_text("path\tline\trule\tverdict\nstep.py\t4\tcapture-item-sync\tmaybe\n", encoding="utf-8")
    r = subprocess.run([sys.executable, str(BENCH), "--trees-only",
                        "--tree", str(tree), "--truth", str(bad)], capture_output=True, text=True, timeout=300,
                       check=False)
    assert r.returncode != 0 and "verdict must be hazard or ok" in r.stderr and "Traceback" not in r.stderr
