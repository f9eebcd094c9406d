# replay-capturing-branch, clean twin: the bias is added on both paths; only the metrics stay under the guard.
import os

import torch

torch.manual_seed(0)


class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(32, 32)
        self.register_buffer("bias", torch.full((32,), 0.25))
        self.norms = []

    def forward(self, x):
        h = self.lin(x)
        if not torch.cuda.is_current_stream_capturing():
            self.norms.append(h.norm().item())
        h = h + self.bias
        return torch.relu(h)


head = Head().cuda()
xs = [torch.randn(8, 32, device="cuda") for _ in range(4)]
with torch.no_grad():
    if os.environ.get("DENPEX_EAGER") == "1":
        sums = [head(x).sum().item() for x in xs]
    else:
        static_x = xs[0].clone()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                head(static_x)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            static_y = head(static_x)
        sums = []
        for x in xs:
            static_x.copy_(x)
            g.replay()
            sums.append(static_y.sum().item())
print("RESULT:", *sums)
