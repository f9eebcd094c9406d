"""Replays a FeatureDenoiser captured once on a static feature dict."""
import torch


class GraphedDenoiser:
    def __init__(self, model, batch, dim, device):
        self.model = model
        self.static_h = torch.zeros(batch, dim, device=device)
        self.static = {"h": self.static_h}
        self.graph = None
        self.out = None

    def capture(self, warmup=3):
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(warmup):
                self.model({"h": self.static["h"].clone()})
        torch.cuda.current_stream().wait_stream(s)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.out = self.model(self.static)
        return self

    def run(self, feats):
        self.static_h.copy_(feats)
        self.graph.replay()
        return self.out["h"].clone(), self.out["score"].clone()
