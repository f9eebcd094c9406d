"""The ecosystem check's committed data hangs together (bench/ecosystem/): the manifest names the projects at
pinned commits, the baseline is of those commits, and every error and warning of the baseline has a reviewed
verdict that points at a finding that exists. No network and no fetched trees: only the committed files."""

from __future__ import annotations

import csv
import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ECO = Path(__file__).resolve().parents[2] / "bench" / "ecosystem"
REQUIRED = {"Megatron-LM", "NeMo", "TransformerEngine", "DeepSpeed", "vLLM", "SGLang", "TensorRT-LLM", "lmdeploy",
            "lightllm", "nano-vllm", "diffusers", "Lightning", "gpt-fast", "tensordict", "flashinfer", "apex",
            "mamba", "moshi", "pytorch-benchmark"}
VERDICT_COLUMNS = ["project", "path", "line", "rule", "severity", "message_hash", "verdict", "why"]


def _check() -> ModuleType:
    spec = importlib.util.spec_from_file_location("eco_check", ECO / "check.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["eco_check"] = mod  # dataclasses look their module up by name
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def check() -> ModuleType:
    return _check()


@pytest.fixture(scope="module")
def baseline() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((ECO / "baseline.json").read_text(encoding="utf-8"))
    return doc


def _verdicts() -> list[dict[str, str]]:
    with open(ECO / "verdicts.tsv", encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    return rows


def test_manifest_names_the_projects_at_pinned_commits(check: ModuleType) -> None:
    projects = check.load_manifest()
    names = [p.name for p in projects]
    assert len(names) == len(set(names))
    assert set(names) >= REQUIRED
    available = [p for p in projects if not p.unavailable]
    assert len(available) >= 20
    for p in available:
        assert re.fullmatch(r"[0-9a-f]{40}", p.commit), p
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", p.repo), p


def test_baseline_is_of_the_manifest(check: ModuleType, baseline: dict[str, Any]) -> None:
    assert baseline["schema"] == check.SCHEMA
    projects = {p.name: p for p in check.load_manifest()}
    assert set(baseline["projects"]) == set(projects)
    for name, entry in baseline["projects"].items():
        p = projects[name]
        if p.unavailable:
            assert entry["status"] == "unavailable"
            continue
        assert entry["commit"] == p.commit, name
        assert entry["status"] in ("ok", "timeout"), (name, entry.get("note"))
        assert entry["files"] > 0 and entry["lines"] > 0
        for f in entry["findings"]:
            assert not f["path"].startswith(("/", "./")), f  # relative to the project's root
            assert re.fullmatch(r"[0-9a-f]{12}", f["message_hash"])


def test_every_error_and_warning_has_a_verdict_on_a_real_finding(baseline: dict[str, Any]) -> None:
    rows = _verdicts()
    assert rows and list(rows[0]) == VERDICT_COLUMNS
    findings = {(name, f["path"], str(f["line"]), f["rule"], f["severity"], f["message_hash"])
                for name, e in baseline["projects"].items() for f in e.get("findings", [])}
    reviewed = set()
    for r in rows:
        key = (r["project"], r["path"], r["line"], r["rule"], r["severity"], r["message_hash"])
        assert key in findings, f"verdict for a finding the baseline does not have: {key}"
        assert r["verdict"] in ("true", "false", "unclear"), r
        assert len(r["why"]) > 20, r  # a reason, not a placeholder
        reviewed.add(key)
    needed = {k for k in findings if k[4] in ("error", "warning")}
    assert needed <= reviewed, sorted(needed - reviewed)[:5]


def test_diff_reports_added_and_removed_findings(check: ModuleType) -> None:
    doc = [{"path": "./a.py", "line": 3, "column": 1, "rule": "capture-item-sync", "severity": "error",
            "message": "m1", "capture_site": {"path": "./b.py", "line": 9}},
           {"path": "a.py", "line": 7, "column": 5, "rule": "capture-host-copy", "severity": "warning",
            "message": "m2", "capture_site": None}]
    old = check.finding_rows(doc)
    assert [f["path"] for f in old] == ["a.py", "a.py"] and old[0]["capture"] == "b.py:9"
    new_doc = [doc[0] | {"message": "m1 changed"}, doc[1], doc[1] | {"line": 8}]
    added, removed = check.diff_findings(old, check.finding_rows(new_doc))
    assert [(f["line"], f["message_hash"]) for f in added] == [(3, check.message_hash("m1 changed")), (8, old[1]["message_hash"])]
    assert [(f["line"], f["message_hash"]) for f in removed] == [(3, check.message_hash("m1"))]
    assert check.diff_findings(old, old) == ([], [])
