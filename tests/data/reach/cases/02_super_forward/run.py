"""Capture a ScaledNorm (one super() level) and a DeepGatedEncoder (two levels)."""

import torch
from layers import DeepGatedEncoder, ScaledNorm


def capture(dim: int = 64) -> tuple[torch.cuda.CUDAGraph, torch.Tensor, torch.Tensor]:
    norm = ScaledNorm(dim).cuda()
    enc = DeepGatedEncoder(dim).cuda()
    static_in = torch.randn(8, dim, device="cuda")

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            enc(norm(static_in))
    torch.cuda.current_stream().wait_stream(s)

    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        static_out = enc(norm(static_in))
    return g, static_in, static_out


if __name__ == "__main__":
    graph, inp, out = capture()
    torch.cuda.synchronize()  # ok: capture-explicit-sync
    graph.replay()
