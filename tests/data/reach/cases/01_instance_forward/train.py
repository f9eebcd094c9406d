"""Capture one forward pass of two models after a side-stream warm-up."""

import torch
from bases import LeafBlock
from net import Net


def main() -> None:
    model = Net(32).cuda()
    block = LeafBlock(32).cuda()
    static_x = torch.randn(16, 32, device="cuda")

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            block(model(static_x))
    torch.cuda.current_stream().wait_stream(side)

    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_y = block(model(static_x))

    static_x.copy_(torch.randn(16, 32, device="cuda"))
    graph.replay()
    print(static_y.sum().item())  # ok: capture-item-sync


if __name__ == "__main__":
    main()
