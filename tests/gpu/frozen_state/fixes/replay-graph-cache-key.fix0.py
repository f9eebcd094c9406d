# replay-graph-cache-key: graphs cached by sequence length only; a short last batch replays the full-batch graph,
# whose softmax over the batch also reads the rows an earlier batch left.
import os

import torch

torch.manual_seed(0)


def score(q):
    return torch.softmax(q.sum(-1), dim=0)


class BucketCache:
    def __init__(self, fn):
        self.fn = fn
        self.entries = {}

    def _capture(self, q):
        static_q = q.clone()
        self.fn(static_q)  # warm-up
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = self.fn(static_q)
        return g, static_q, out

    def __call__(self, q):
        key = tuple(q.shape)
        if key not in self.entries:
            self.entries[key] = self._capture(q)
        g, static_q, out = self.entries[key]
        n = q.shape[0]
        static_q[:n].copy_(q)
        g.replay()
        return out[:n]


batches = [torch.randn(16, 8, device="cuda"), torch.randn(16, 8, device="cuda"), torch.randn(5, 8, device="cuda")]
if os.environ.get("DENPEX_EAGER") == "1":
    sums = [(score(q) * torch.arange(q.shape[0], device="cuda")).sum().item() for q in batches]
else:
    cache = BucketCache(score)
    sums = [(cache(q) * torch.arange(q.shape[0], device="cuda")).sum().item() for q in batches]
print("RESULT:", *sums)
