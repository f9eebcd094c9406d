#!/usr/bin/env python3
"""Draw samples from the point-cloud denoiser with a CUDA-graphed Euler step.

One sampler step is captured on the first step of the first batch and replayed
for every step after it.  The final batch is sampled again eagerly and the two
results compared.
"""
import argparse
import logging
import time

import torch

from denoiser import Denoiser
from progress import progress
from sampler import EulerSampler

log = logging.getLogger("sampler")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--num-points", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--batches", type=int, default=12)
    ap.add_argument("--log-every", type=int, default=2)
    ap.add_argument("--seed", type=int, default=21)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    torch.manual_seed(args.seed)
    dev = torch.device(args.device)
    net = Denoiser().to(dev).eval()
    sampler = EulerSampler(net, args.steps)
    log.info("sigma schedule %.3f .. %.4f over %d steps", sampler.sigmas[0], sampler.sigmas[-2], args.steps)

    static_x = torch.zeros(args.num_points, 2, device=dev)
    static_next = None
    graph = None
    g = torch.Generator(device=dev).manual_seed(args.seed)
    t0 = time.perf_counter()
    last_init = last_out = None
    with torch.no_grad():
        for b in range(args.batches):
            init = torch.randn(args.num_points, 2, device=dev, generator=g) * sampler.sigmas[0]
            static_x.copy_(init)
            for i in progress(range(args.steps), desc=f"batch {b}", unit="step"):
                if graph is None:
                    s = torch.cuda.Stream()
                    s.wait_stream(torch.cuda.current_stream())
                    with torch.cuda.stream(s):
                        for _ in range(3):
                            sampler.step(static_x, i)
                    torch.cuda.current_stream().wait_stream(s)
                    graph = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(graph):
                        static_next = sampler.step(static_x, i)
                    log.info("captured sampler step")
                graph.replay()
                static_x.copy_(static_next)
                if i % args.log_every == 0:
                    log.info("batch %2d step %2d  sigma %.4f  |x| %.4f", b, i, sampler.sigmas[i],
                             static_x.norm(dim=-1).mean().item())
            last_init, last_out = init, static_x.clone()
            log.info("batch %2d done, %.1f batch/s", b, (b + 1) / (time.perf_counter() - t0))

        x = last_init.clone()
        for i in range(args.steps):
            x = sampler.step(x, i)
    diff = (x - last_out).abs().max().item()
    if diff <= 1e-3:
        log.info("MATCH graph vs eager samples (max |diff| %.3e)", diff)
    else:
        log.error("MISMATCH graph vs eager samples (max |diff| %.3e)", diff)


if __name__ == "__main__":
    main()
