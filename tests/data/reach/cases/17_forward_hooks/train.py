import logging

import torch
from hooks import check_inputs, log_activations
from model import Block

logging.basicConfig(level=logging.INFO)
block = Block(64).cuda()
block.register_forward_pre_hook(check_inputs)
handle = block.register_forward_hook(log_activations)
static_x = torch.randn(16, 64, device="cuda")

s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):
        block(static_x)
torch.cuda.current_stream().wait_stream(s)

g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    static_y = block(static_x)
g.replay()
handle.remove()
