#!/usr/bin/env python3
"""Score (query, passage) pairs with in-batch negatives for hard-negative mining.

Pairs are bucketed by query length; each bucket is served by its own CUDA graph.
The last batch of a bucket is usually short.  Everything is re-scored eagerly at
the end and compared.
"""
import argparse
import logging
import time

import torch

from dual_encoder import DualEncoder
from graph_cache import BucketGraphCache
from progress import progress

log = logging.getLogger("dual")


def bucketed_pairs(n_pairs, buckets, p_len, batch, vocab, seed):
    g = torch.Generator().manual_seed(seed)
    out = []
    for q_len in buckets:
        for start in range(0, n_pairs, batch):
            b = min(batch, n_pairs - start)
            q = torch.randint(1, vocab, (b, q_len), generator=g)
            p = torch.randint(1, vocab, (b, p_len), generator=g)
            q[:, q_len // 2:] *= (torch.rand(b, q_len - q_len // 2, generator=g) > 0.3).long()
            out.append((q, p))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--pairs-per-bucket", type=int, default=2000)
    ap.add_argument("--buckets", type=int, nargs="+", default=[8, 16, 32])
    ap.add_argument("--passage-len", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=96)
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--log-every", type=int, default=1)
    ap.add_argument("--seed", type=int, default=9)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s - %(message)s")

    torch.manual_seed(args.seed)
    dev = torch.device(args.device)
    model = DualEncoder(args.vocab).to(dev).eval()
    scorer = BucketGraphCache(model)
    batches = bucketed_pairs(args.pairs_per_bucket, args.buckets, args.passage_len, args.batch_size, args.vocab,
                             args.seed)
    log.info("%d batches over buckets %s", len(batches), args.buckets)

    graph_scores = []
    t0 = time.perf_counter()
    with torch.no_grad():
        for i, (q, p) in enumerate(progress(batches, desc="scoring", unit="batch")):
            s = scorer(q.to(dev), p.to(dev))
            graph_scores.append(s.clone())
            if i % args.log_every == 0:
                log.info("batch %3d  q_len %2d  size %3d  mean logp %.4f  %.0f pairs/s", i, q.shape[1], q.shape[0],
                         s.mean().item(), sum(x.numel() for x in graph_scores) / (time.perf_counter() - t0))
        eager_scores = [model(q.to(dev), p.to(dev)) for q, p in batches]
    diffs = [(a - b).abs().max().item() for a, b in zip(graph_scores, eager_scores)]
    bad = [i for i, d in enumerate(diffs) if d > 1e-3]
    if not bad:
        log.info("MATCH graph vs eager scores on all %d batches (max |diff| %.3e)", len(batches), max(diffs))
    else:
        log.error("MISMATCH graph vs eager scores on %d/%d batches (first %d, max |diff| %.3e)", len(bad),
                  len(batches), bad[0], max(diffs))


if __name__ == "__main__":
    main()
