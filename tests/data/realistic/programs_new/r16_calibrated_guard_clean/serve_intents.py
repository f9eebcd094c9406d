#!/usr/bin/env python3
"""Serve intent probabilities for batches of utterance embeddings with a CUDA graph.

The calibrated classifier is captured once; each request batch is copied into the
static input and replayed. The last batches are compared against the eager module.
"""
import argparse
import logging
import time

import torch

from calibrated import CalibratedClassifier
from capture import capture_forward
from progress import progress

log = logging.getLogger("serve")


def requests(n, batch, dim, seed):
    g = torch.Generator().manual_seed(seed)
    centers = 2.0 * torch.randn(12, dim, generator=g)
    for _ in range(n):
        which = torch.randint(0, 12, (batch,), generator=g)
        yield centers[which] + torch.randn(batch, dim, generator=g)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--batches", type=int, default=300)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--check", type=int, default=3)
    ap.add_argument("--log-every", type=int, default=5)
    ap.add_argument("--seed", type=int, default=31)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s.%(msecs)03d %(levelname)s %(name)s %(message)s",
                        datefmt="%H:%M:%S")

    torch.manual_seed(args.seed)
    dev = torch.device(args.device)
    clf = CalibratedClassifier(args.dim).to(dev).eval()
    data = list(requests(args.batches, args.batch_size, args.dim, args.seed))
    with torch.no_grad():
        graph, static_in, static_out = capture_forward(clf, data[0].to(dev))
        log.info("classifier captured; eager entropy on the warm-up batch %.4f", clf.last_entropy)
        kept, confident = [], 0
        t0 = time.perf_counter()
        for i, x in enumerate(progress(data, desc="serve", unit="batch")):
            static_in.copy_(x.to(dev, non_blocking=True))
            graph.replay()
            top = static_out.max(-1).values
            confident += int((top > 0.9).sum())
            if i >= len(data) - args.check:
                kept.append(static_out.clone())
            if i % args.log_every == 0:
                log.info("batch %4d  mean top-p %.4f  confident %d  %.0f req/s", i, top.mean().item(), confident,
                         (i + 1) * args.batch_size / (time.perf_counter() - t0))
        ref = [clf(x.to(dev)) for x in data[-args.check:]]
    diff = max((r - k).abs().max().item() for r, k in zip(ref, kept))
    if diff <= 1e-4:
        log.info("MATCH graph vs eager probabilities on the last batches (max |diff| %.3e)", diff)
    else:
        log.error("MISMATCH graph vs eager probabilities on the last batches (max |diff| %.3e)", diff)


if __name__ == "__main__":
    main()
