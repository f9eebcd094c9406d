"""Findings reached through calls carry their way from the capture site (issue 11, "show the way"): the JSON
`call_path`, SARIF `codeFlows` (valid SARIF 2.1.0), and a workspace where each hop lives in another file:
an instance call to `forward`, a module in an nn.ModuleList, `super().forward`, a helper held on `self`, and an
optimizer built by a factory in another file."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import fastjsonschema
import pytest

SARIF_SCHEMA = Path(__file__).resolve().parents[1] / "data" / "sarif" / "sarif-schema-2.1.0.json"

FILES = {
    "pkg/__init__.py": "from .model import Net\n",
    "pkg/layers.py": """\
        import torch
        from torch import nn


        class Base(nn.Module):
            def forward(self, x):
                s = x.sum().item()
                return x / s


        class Block(Base):
            def forward(self, x):
                return super().forward(x * 2)


        class Monitor:
            def update(self, t):
                print(t.cpu())


        class Quiet:
            def update(self, t):
                print(t.cpu())
        """,
    "pkg/model.py": """\
        import torch
        from torch import nn
        from .layers import Block, Monitor, Quiet


        class Net(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.blocks = nn.ModuleList([Block() for _ in range(n)])
                self.monitor = Monitor()
                self.quiet = Quiet()

            def forward(self, x):
                for b in self.blocks:
                    x = b(x)
                self.monitor.update(x)
                return x
        """,
    "pkg/optim.py": """\
        import torch


        def build_optimizer(model, lr=1e-3):
            return torch.optim.AdamW(model.parameters(), lr=lr)
        """,
    "train.py": """\
        import torch
        from pkg import Net
        from pkg.optim import build_optimizer

        model = Net(2).cuda().eval()
        opt = build_optimizer(model)
        x = torch.randn(4, 8, device="cuda")
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                model(x)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = model(x)
            opt.step()
        g.replay()
        """,
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("reach")
    for rel, text in FILES.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def scan(root: Path, fmt: str) -> dict:
    p = subprocess.run([sys.executable, "-m", "denpex", "scan", ".", "--format", fmt], cwd=root,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1, p.stdout + p.stderr
    return json.loads(p.stdout)


def test_findings_across_files_and_their_call_paths(project: Path) -> None:
    found = {(d["path"], d["line"], d["rule"]): d for d in scan(project, "json")["diagnostics"]}
    item = found[("pkg/layers.py", 7, "capture-item-sync")]
    assert [(s["path"], s["line"], s["reaches"]) for s in item["call_path"]] == [
        ("train.py", 16, "model -> Net.forward"),
        ("pkg/model.py", 15, "b -> Block.forward"),
        ("pkg/layers.py", 13, "super().forward"),
    ]
    copy = found[("pkg/layers.py", 18, "capture-host-copy")]
    assert [s["reaches"] for s in copy["call_path"]] == ["model -> Net.forward", "self.monitor.update"]
    # the optimizer is judged where the factory builds it, in another file
    step = found[("train.py", 17, "optim-capturable-false")]
    assert "pkg/optim.py:5" in step["message"] and step["call_path"] == []
    # allocation-site precision: Quiet.update is never called, so its identical line is not reported
    assert ("pkg/layers.py", 23, "capture-host-copy") not in found
    assert all(d["severity"] == "error" for d in found.values())


def test_sarif_code_flows_validate_and_walk_the_path(project: Path) -> None:
    doc = scan(project, "sarif")
    validate = fastjsonschema.compile(json.loads(SARIF_SCHEMA.read_text(encoding="utf-8")))
    validate(json.loads(json.dumps(doc)))  # a copy: the validator fills in the schema's defaults
    results = {(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
                r["locations"][0]["physicalLocation"]["region"]["startLine"]): r for r in doc["runs"][0]["results"]}
    flow = results[("pkg/layers.py", 7)]["codeFlows"][0]["threadFlows"][0]["locations"]
    hops = [(x["location"]["physicalLocation"]["artifactLocation"]["uri"],
             x["location"]["physicalLocation"]["region"]["startLine"]) for x in flow]
    assert hops == [("train.py", 15), ("train.py", 16), ("pkg/model.py", 15), ("pkg/layers.py", 13),
                    ("pkg/layers.py", 7)]
    # a finding on the capture's own line has no flow to show
    assert "codeFlows" not in results[("train.py", 17)]
