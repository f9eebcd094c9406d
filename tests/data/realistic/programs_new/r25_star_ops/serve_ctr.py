#!/usr/bin/env python3
"""Offline click-through-rate scoring with the DLRM-lite ranker.

Request batches are scored eagerly for the first --graph-after batches (the
eager latency baseline), then the ranker is captured once for the fixed batch
shape and every later batch is a graph replay.  The last batch is scored again
eagerly at the end and compared with the graph's scores.
"""
import argparse
import logging
import statistics
import time

import torch
import torch.nn.functional as F

from progress import progress
from recsys import DLRMLite

log = logging.getLogger("ctr.serve")


def capture_module(module, example, warmup=3):
    """Capture ``module(*example)`` into a CUDA graph; returns a callable that replays it."""
    static_in = tuple(t.clone() for t in example)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(warmup):
            module(*static_in)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = module(*static_in)

    def replay(*inputs):
        for dst, src in zip(static_in, inputs):
            dst.copy_(src)
        graph.replay()
        return static_out

    replay.graph = graph
    return replay


def request_log(n, batch, dense_dim, fields, bag, seed):
    """Synthetic impressions: dense counters, skewed multi-hot ids per field, and a click label."""
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(dense_dim, generator=g)
    for i in range(n):
        dense = torch.randn(batch, dense_dim, generator=g).abs().log1p()
        items = (torch.rand(batch, fields, bag, generator=g).pow(3) * 1e9).long()
        raw_ids = items * 2654435761 + torch.arange(fields)[None, :, None] * 97
        lengths = torch.randint(1, bag + 1, (batch, fields), generator=g)
        p = torch.sigmoid(dense @ w - 1.5 + 0.3 * (items[:, 0, 0] % 7 == 0).float())
        clicks = torch.bernoulli(p, generator=g)
        yield i, (dense, raw_ids, lengths), clicks


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--batch-size", type=int, default=1024)
    ap.add_argument("--dense-dim", type=int, default=13)
    ap.add_argument("--table-rows", default="200000,100000,50000,50000,20000,20000,10000,5000")
    ap.add_argument("--dim", type=int, default=32)
    ap.add_argument("--bag", type=int, default=16)
    ap.add_argument("--num-batches", type=int, default=400)
    ap.add_argument("--graph-after", type=int, default=200)
    ap.add_argument("--log-every", type=int, default=2)
    ap.add_argument("--seed", type=int, default=25)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s [%(levelname)s] %(name)s: %(message)s")

    torch.manual_seed(args.seed)
    dev = torch.device(args.device)
    rows = [int(r) for r in args.table_rows.split(",")]
    model = DLRMLite(args.dense_dim, rows, dim=args.dim, bag=args.bag).to(dev).eval()
    n_params = sum(p.numel() for p in model.parameters())
    log.info("DLRM-lite: %d sparse fields, %.2fM parameters, batch %d, bag %d", len(rows), n_params / 1e6,
             args.batch_size, args.bag)

    scorer = None
    lat = []
    logloss_sum = 0.0
    last = None
    stream = request_log(args.num_batches, args.batch_size, args.dense_dim, len(rows), args.bag, args.seed)
    with torch.inference_mode():
        for i, inputs, clicks in progress(stream, total=args.num_batches, desc="scoring", unit="batch"):
            t0 = time.perf_counter()
            inputs = tuple(t.to(dev, non_blocking=True) for t in inputs)
            clicks = clicks.to(dev, non_blocking=True)
            if i < args.graph_after:
                logits = model(*inputs)
            else:
                if scorer is None:
                    log.info("batch %d: capturing the ranker for batch %d x %d fields", i, args.batch_size, len(rows))
                    scorer = capture_module(model, inputs)
                    log.info("ranker graph captured")
                logits = scorer(*inputs)
            logloss = F.binary_cross_entropy_with_logits(logits, clicks)
            logloss_sum += float(logloss)
            if i == args.num_batches - 1:
                last = (tuple(t.clone() for t in inputs), logits.clone())
            lat.append((time.perf_counter() - t0) * 1e3)
            if i % args.log_every == 0:
                log.info("batch %4d  logloss %.4f  mean ctr %.4f  p50 %.2f ms", i, float(logloss),
                         torch.sigmoid(logits).mean().item(), statistics.median(lat[-50:]))
        ref = model(*last[0])
    diff = (ref - last[1]).abs().max().item()
    log.info("mean logloss %.4f over %d batches", logloss_sum / args.num_batches, args.num_batches)
    if diff <= 1e-4:
        log.info("MATCH graph vs eager scores on the last batch (max |diff| %.3e)", diff)
    else:
        log.error("MISMATCH graph vs eager scores on the last batch (max |diff| %.3e)", diff)


if __name__ == "__main__":
    main()
