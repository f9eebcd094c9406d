"""Does each op-table verdict hold on a GPU? Captures one call per case in a CUDA graph, each in its own process
(a failed capture can leave the context unusable), after an eager warm-up of the same call, and prints one JSON
line per case: whether the capture failed and how. The `expect` column is what Denpex says after the op tables
(`fail`: flagged as a host sync or data-dependent shape; `ok`: not flagged; `?`: no claim either way).

    python bench/check_op_tables_gpu.py [--json OUT]      # on a machine with a CUDA GPU and torch
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

SETUP = """
import torch, torch.nn.functional as F
from torch.nn.utils import clip_grad_norm_
from torch.distributions import Normal
dev = "cuda"
x = torch.randn(64, device=dev)
s = x.abs() + 0.1
i = torch.randint(0, 8, (64,), device=dev)
r = torch.full((64,), 2, device=dev)
A = torch.randn(8, 8, device=dev); A = A @ A.T + 8 * torch.eye(8, device=dev)
b = torch.randn(8, 1, device=dev)
q = torch.randn(1, 2, 16, 8, device=dev)
p = torch.nn.Parameter(torch.randn(64, device=dev)); p.grad = torch.randn(64, device=dev)
"""

CASES: list[tuple[str, str, str]] = [
    ("torch.where(cond)", "torch.where(x > 0)", "fail"),
    ("torch.where(cond, a, b)", "torch.where(x > 0, x, 0.0)", "ok"),
    ("torch.nonzero", "torch.nonzero(x > 0)", "fail"),
    ("torch.bincount", "torch.bincount(i)", "fail"),
    ("Tensor.repeat_interleave(tensor)", "x.repeat_interleave(r)", "fail"),
    ("Tensor.repeat_interleave(tensor, output_size=)", "x.repeat_interleave(r, output_size=128)", "ok"),
    ("Tensor.repeat_interleave(int)", "x.repeat_interleave(2)", "ok"),
    ("F.one_hot(t)", "F.one_hot(i)", "fail"),
    ("F.one_hot(t, n)", "F.one_hot(i, 8)", "ok"),
    ("torch.linalg.inv", "torch.linalg.inv(A)", "fail"),
    ("torch.linalg.inv_ex", "torch.linalg.inv_ex(A)", "ok"),
    ("torch.linalg.inv_ex(check_errors=True)", "torch.linalg.inv_ex(A, check_errors=True)", "fail"),
    ("torch.linalg.cholesky", "torch.linalg.cholesky(A)", "fail"),
    ("torch.linalg.solve", "torch.linalg.solve(A, b)", "fail"),
    ("torch.linalg.eigh", "torch.linalg.eigh(A)", "fail"),
    ("torch.linalg.svd", "torch.linalg.svd(A)", "ok"),
    ("torch.linalg.lstsq", "torch.linalg.lstsq(A, b)", "fail"),
    ("Tensor.equal", "x.equal(s)", "fail"),
    ("torch.allclose", "torch.allclose(x, s)", "fail"),
    ("torch.normal(mean, std tensor)", "torch.normal(x, s)", "fail"),
    ("torch.histc", "torch.histc(x)", "?"),
    ("clip_grad_norm_(error_if_nonfinite=True)", "clip_grad_norm_([p], 1.0, error_if_nonfinite=True)", "fail"),
    ("clip_grad_norm_", "clip_grad_norm_([p], 1.0)", "ok"),
    ("Normal(mu, sd)", "Normal(x, s)", "fail"),
    ("Normal(mu, sd, validate_args=False)", "Normal(x, s, validate_args=False)", "ok"),
    ("Normal(...).log_prob", "Normal(x, s, validate_args=False).log_prob(x)", "ok"),
    ("F.dropout(training=False)", "F.dropout(x, training=False)", "ok"),
    ("F.dropout", "F.dropout(x)", "ok"),
    ("F.scaled_dot_product_attention", "F.scaled_dot_product_attention(q, q, q)", "ok"),
    ("torch.accelerator.synchronize", "torch.accelerator.synchronize()", "fail"),
    ("Tensor.normal_", "x.clone().normal_()", "ok"),
    ("torch.linalg.svdvals", "torch.linalg.svdvals(A)", "fail"),
    ("torch.linalg.det", "torch.linalg.det(A)", "?"),
    ("torch.linalg.slogdet", "torch.linalg.slogdet(A)", "?"),
    ("torch.linalg.qr", "torch.linalg.qr(A)", "?"),
    ("torch.linalg.eig", "torch.linalg.eig(A)", "fail"),
    ("torch.linalg.matrix_rank", "torch.linalg.matrix_rank(A)", "fail"),
    ("torch.linalg.pinv", "torch.linalg.pinv(A)", "fail"),
    ("torch.linalg.norm", "torch.linalg.norm(A)", "?"),
    ("torch.quantile(q tensor)", "torch.quantile(x, torch.tensor([0.5], device=dev))", "?"),
    ("torch.median", "torch.median(x)", "?"),
    ("torch.kthvalue", "torch.kthvalue(x, 3)", "?"),
    ("torch.topk", "torch.topk(x, 3)", "?"),
    ("torch.multinomial", "torch.multinomial(s, 4)", "?"),
    ("torch.randperm", "torch.randperm(64, device=dev)", "?"),
    ("torch.cdist", "torch.cdist(A, A)", "?"),
    ("F.interpolate", "F.interpolate(q, scale_factor=2.0)", "?"),
    ("F.embedding", "F.embedding(i, A)", "?"),
    ("F.cross_entropy", "F.cross_entropy(A, i[:8])", "?"),
    ("F.nll_loss", "F.nll_loss(A.log_softmax(-1), i[:8])", "?"),
    ("F.gumbel_softmax", "F.gumbel_softmax(A)", "?"),
]

RUN = """
import json, sys, traceback
{setup}
def f():
    {call}
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    f()
torch.cuda.current_stream().wait_stream(side)
torch.cuda.synchronize()
g = torch.cuda.CUDAGraph()
try:
    with torch.cuda.graph(g):
        f()
    g.replay(); torch.cuda.synchronize()
    print(json.dumps({{"failed": False}}))
except Exception as e:
    print(json.dumps({{"failed": True, "error": (type(e).__name__ + ": " + str(e)).splitlines()[0][:200]}}))
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    import torch

    rows = []
    for name, call, expect in CASES:
        p = subprocess.run([sys.executable, "-c", RUN.format(setup=SETUP, call=call)], capture_output=True,
                           text=True, timeout=300, check=False)
        lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
        res = json.loads(lines[-1]) if lines else {"failed": True, "error": "no result: " + p.stderr[-200:]}
        got = "fail" if res["failed"] else "ok"
        row = {"case": name, "call": call, "expect": expect, "got": got, "agrees": expect in ("?", got), **res}
        rows.append(row)
        print(json.dumps(row), flush=True)
    agree = sum(1 for r in rows if r["expect"] != "?" and r["agrees"])
    told = sum(1 for r in rows if r["expect"] != "?")
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}: {agree} of {told} verdicts hold")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as fh:
            json.dump({"torch": torch.__version__, "gpu": torch.cuda.get_device_name(), "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
