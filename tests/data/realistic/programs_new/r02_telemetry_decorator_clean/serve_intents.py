#!/usr/bin/env python3
"""Offline intent tagging of a query log, with a CUDA-graph fast path.

The first --graph-after batches run eagerly; then the classifier is captured
for the serving batch shape and replayed.  Per-module call statistics are
printed at the end.
"""
import argparse
import logging
import time

import torch

from model_intent import IntentClassifier
from progress import progress
from telemetry import STATS

log = logging.getLogger("intents")


def featurize(n, batch, in_dim, seed):
    g = torch.Generator().manual_seed(seed)
    for i in range(n):
        x = torch.zeros(batch, in_dim)
        idx = torch.randint(0, in_dim, (batch, 24), generator=g)
        x.scatter_add_(1, idx, torch.ones(batch, 24))
        yield i, x / 24.0


def capture(model, static_in, warmup):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(warmup):
            model(static_in)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        static_out = model(static_in)
    return g, static_out


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--in-dim", type=int, default=512)
    ap.add_argument("--num-batches", type=int, default=400)
    ap.add_argument("--graph-after", type=int, default=150)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--log-every", type=int, default=2)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s | %(levelname)-7s | %(name)s | %(message)s")

    torch.manual_seed(args.seed)
    dev = torch.device(args.device)
    model = IntentClassifier(in_dim=args.in_dim).to(dev).eval()
    log.info("classifier on %s, %d intents", dev, model.head.out_features)

    graph = static_in = static_out = None
    counts = torch.zeros(model.head.out_features, device=dev)
    last_x = last_probs = None
    t_start = time.perf_counter()
    with torch.no_grad():
        for i, x in progress(featurize(args.num_batches, args.batch_size, args.in_dim, args.seed),
                             total=args.num_batches, desc="tagging", unit="batch"):
            x = x.to(dev)
            if i < args.graph_after:
                probs = model(x)
            else:
                if graph is None:
                    log.info("step %d: capturing classifier graph (batch %d)", i, args.batch_size)
                    static_in = x.clone()
                    graph, static_out = capture(model, static_in, args.warmup)
                    log.info("graph ready")
                static_in.copy_(x)
                graph.replay()
                probs = static_out
            counts += torch.bincount(probs.argmax(-1), minlength=counts.numel())
            last_x, last_probs = x.clone(), probs.clone()
            if i % args.log_every == 0:
                conf = probs.max(-1).values.mean().item()
                log.info("batch %4d  mean confidence %.4f  %.1f batch/s", i, conf,
                         (i + 1) / (time.perf_counter() - t_start))
        ref = model(last_x)
    log.info("top intents: %s", counts.topk(5).indices.tolist())
    log.info("call stats: %s", STATS.summary())
    diff = (ref - last_probs).abs().max().item()
    if diff <= 1e-4:
        log.info("MATCH graph vs eager on the last batch (max |diff| %.3e)", diff)
    else:
        log.error("MISMATCH graph vs eager on the last batch (max |diff| %.3e)", diff)


if __name__ == "__main__":
    main()
