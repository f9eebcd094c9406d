import torch
from chain import level_00
from factories import make_tree

tree = make_tree(3).cuda()
static_x = torch.randn(4, device="cuda")

s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    tree(static_x)
    level_00(static_x)
torch.cuda.current_stream().wait_stream(s)

g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    out = tree(static_x)
    deep = level_00(static_x)
g.replay()
