"""Models moved, cast and switched to eval through method chains, one wrapped by torch.compile, then
captured together."""

import torch
from nets import Classifier, Pooler, Ranker


def main() -> None:
    dev = torch.device("cuda")
    clf = Classifier(256, 10).to(dev).eval()
    ranker = Ranker(256).cuda().half().requires_grad_(False)
    pooler = torch.compile(Pooler().to(dev).train(False))
    static_x = torch.randn(64, 256, device=dev)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s), torch.inference_mode():
        for _ in range(3):
            clf(static_x)
            ranker(static_x.half())
            pooler(static_x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.inference_mode(), torch.cuda.graph(g):
        logits = clf(static_x)
        scores = ranker(static_x.half())
        pooled = pooler(static_x)
    g.replay()
    print(logits.shape, scores.shape, pooled.shape)


if __name__ == "__main__":
    main()
