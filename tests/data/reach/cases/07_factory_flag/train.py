import argparse

import torch
from factory import build_model


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--large", action="store_true")
    args = parser.parse_args()
    model = build_model(128, args.large).cuda()
    static_x = torch.randn(8, 128, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            model(static_x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = model(static_x)
    g.replay()
    print(out.norm().item())  # ok: capture-item-sync


if __name__ == "__main__":
    main()
