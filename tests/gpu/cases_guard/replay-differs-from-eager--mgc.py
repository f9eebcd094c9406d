# guard-mode: warn,compare:3
# make_graphed_callables on a block whose forward reads a Python attribute; the attribute changes after
# graphing, the graph keeps the capture-time value. Only an eager re-run shows the answer changed.
import os

import torch

torch.manual_seed(0)


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(128, 128)
        self.temperature = 1.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) / self.temperature


block = Block().cuda()
xs = [torch.randn(16, 128, device="cuda") for _ in range(3)]
if os.environ.get("DENPEX_EAGER") == "1":
    block.temperature = 2.0
    with torch.no_grad():
        print("RESULT:", *[block(x).sum().item() for x in xs])
    raise SystemExit(0)

sample = torch.randn(16, 128, device="cuda", requires_grad=True)
block = torch.cuda.make_graphed_callables(block, (sample,))
block.temperature = 2.0
outs = [block(x).sum().item() for x in xs]
print("RESULT:", *outs)
