# guard-mode: warn,compare:3
# A decode loop done right: inputs refreshed with copy_(), the static output read under another name within
# the same step (dets = static_out) and cloned where kept, a KV cache the graph writes in place.
import torch

torch.manual_seed(0)
lin = torch.nn.Linear(64, 64).cuda()
cache = torch.zeros(16, 64, device="cuda")
static_tok = torch.zeros(1, 64, device="cuda")
static_pos = torch.zeros((), dtype=torch.long, device="cuda")
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s), torch.no_grad():
    for _ in range(3):
        lin(static_tok)
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with torch.no_grad(), torch.cuda.graph(g):
    h = lin(static_tok)
    cache.index_copy_(0, static_pos.view(1), h)
    static_out = cache.sum(0, keepdim=True)
kept = []
for step in range(12):
    static_tok.copy_(torch.randn(1, 64, device="cuda"))
    static_pos.fill_(step)
    g.replay()
    dets = static_out
    score = dets.abs().sum().item()
    kept.append(static_out.clone())
print("RESULT:", score, len(kept))
