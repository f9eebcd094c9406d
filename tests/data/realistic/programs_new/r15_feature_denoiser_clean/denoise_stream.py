#!/usr/bin/env python3
"""Denoise a stream of sensor feature vectors and score each one.

Features arrive in fixed-size batches and go through a CUDA-graphed denoiser. The last
batches are run again eagerly and compared.
"""
import argparse
import logging
import time

import torch

from denoiser import FeatureDenoiser
from graph_runner import GraphedDenoiser
from progress import progress

log = logging.getLogger("denoise")


def sensor_stream(n, batch, dim, seed):
    g = torch.Generator().manual_seed(seed)
    basis = torch.randn(8, dim, generator=g)
    for _ in range(n):
        coef = torch.randn(batch, 8, generator=g)
        yield coef @ basis + 0.3 * torch.randn(batch, dim, generator=g)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--batches", type=int, default=250)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--dim", type=int, default=96)
    ap.add_argument("--check", type=int, default=3)
    ap.add_argument("--log-every", type=int, default=5)
    ap.add_argument("--seed", type=int, default=9)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s | %(levelname)-7s | %(name)s | %(message)s")

    torch.manual_seed(args.seed)
    dev = torch.device(args.device)
    model = FeatureDenoiser(args.dim).to(dev).eval()
    data = list(sensor_stream(args.batches, args.batch_size, args.dim, args.seed))
    with torch.no_grad():
        runner = GraphedDenoiser(model, args.batch_size, args.dim, dev).capture()
        log.info("denoiser graph captured for batch %d x %d", args.batch_size, args.dim)
        kept, flagged = [], 0
        t0 = time.perf_counter()
        for i, x in enumerate(progress(data, desc="denoise", unit="batch")):
            h, score = runner.run(x.to(dev, non_blocking=True))
            flagged += int((score > 1.0).sum())
            if i >= len(data) - args.check:
                kept.append(score)
            if i % args.log_every == 0:
                log.info("batch %4d  mean |h| %.4f  flagged %d  %.0f rows/s", i, h.norm(dim=-1).mean().item(),
                         flagged, (i + 1) * args.batch_size / (time.perf_counter() - t0))
        ref = [model({"h": x.to(dev)})["score"] for x in data[-args.check:]]
    diff = max((r - k).abs().max().item() for r, k in zip(ref, kept))
    if diff <= 1e-3:
        log.info("MATCH graph vs eager scores on the last batches (max |diff| %.3e)", diff)
    else:
        log.error("MISMATCH graph vs eager scores on the last batches (max |diff| %.3e)", diff)


if __name__ == "__main__":
    main()
