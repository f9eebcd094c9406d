"""Device-side assert at replay: a captured gather whose static index tensor goes out of range."""
import torch

table = torch.randn(100, 16, device="cuda")
index = torch.arange(8, device="cuda")
s = torch.cuda.Stream()
with torch.cuda.stream(s):
    rows = table[index]  # warm-up
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    rows = table[index]
index.fill_(1000)  # out of range for a table of 100 rows
g.replay()
print(rows.sum().item())
