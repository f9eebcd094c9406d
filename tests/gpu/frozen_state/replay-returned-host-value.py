# replay-returned-host-value: the captured step returns (loss_sum, n_tokens); the wrapper hands back the capture's
# tuple after every replay, so the host adds the first batch's token count each time.
import os

import torch

torch.manual_seed(0)


def step(x, n_tokens):
    return (x * 2).sum(), n_tokens


def graphed(x0, n0):
    static_x = x0.clone()
    step(static_x, n0)  # warm-up
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = step(static_x, n0)

    def run(x, n):
        static_x.copy_(x)
        g.replay()
        return out

    return run


xs = [torch.randn(8, 16, device="cuda") for _ in range(4)]
lengths = [int(x.shape[0]) - i for i, x in enumerate(xs)]
total, tokens = 0.0, 0
if os.environ.get("DENPEX_EAGER") == "1":
    for x, n in zip(xs, lengths, strict=True):
        s, k = step(x, n)
        total += s.item()
        tokens += k
else:
    run = graphed(xs[0], int(lengths[0]))
    for x, n in zip(xs, lengths, strict=True):
        s, k = run(x, n)
        total += s.item()
        tokens += k
print("RESULT:", total, tokens)
