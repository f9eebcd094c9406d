# compile-output-overwritten (compile-output-collected): the outputs of a reduce-overhead compiled model are
# appended to a list in the scoring loop; every entry aliases the one CUDA-graph output buffer.
import os

import torch

torch.manual_seed(0)
lin = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.GELU(), torch.nn.Linear(64, 8)).cuda().eval()
xs = [torch.randn(16, 64, device="cuda") for _ in range(6)]
scorer = torch.compile(lin, mode="reduce-overhead")
if os.environ.get("DENPEX_EAGER") == "1":
    scorer = lin
outs = []
with torch.no_grad():
    for _ in range(3):
        scorer(xs[0])
    for x in xs:
        y = scorer(x)
        outs.append(y)
    sums = [o.sum().item() for o in outs]
print("RESULT:", *sums)
