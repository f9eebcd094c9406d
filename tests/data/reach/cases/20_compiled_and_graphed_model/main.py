"""One model compiled with mode="reduce-overhead", one graphed with make_graphed_callables, and one compiled in
the default mode (no CUDA graphs)."""

import torch
from models import Critic, Decoder, Eager

dim = 128
decoder = Decoder(dim).cuda().eval()
critic = Critic(dim).cuda()
eager = Eager(dim).cuda()
x = torch.randn(32, dim, device="cuda", requires_grad=True)

fast_decoder = torch.compile(decoder, mode="reduce-overhead", fullgraph=True)
critic = torch.cuda.make_graphed_callables(critic, (x,))
plain = torch.compile(eager, mode="default")

for _ in range(5):
    with torch.no_grad():
        out = fast_decoder(torch.randn(32, dim, device="cuda"))
    critic(x).sum().backward()
    plain(x)
