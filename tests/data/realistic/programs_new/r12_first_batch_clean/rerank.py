#!/usr/bin/env python3
"""Rerank candidate documents for a stream of queries.

Each request holds one query and --candidates documents (as token vectors).
The reranker runs through a lazily captured CUDA graph.  All scores are kept and
compared with an eager pass at the end.
"""
import argparse
import logging
import time

import torch

from progress import progress
from reranker import MaxSimReranker
from runner import LazyGraphRunner

log = logging.getLogger("rerank")


def requests(n, cands, q_len, d_len, dim, seed):
    g = torch.Generator().manual_seed(seed)
    for _ in range(n):
        q = torch.randn(q_len, dim, generator=g)
        d = torch.randn(cands, d_len, dim, generator=g)
        yield q, d


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--candidates", type=int, default=64)
    ap.add_argument("--query-len", type=int, default=16)
    ap.add_argument("--doc-len", type=int, default=96)
    ap.add_argument("--dim", type=int, default=96)
    ap.add_argument("--top-k", type=int, default=10)
    ap.add_argument("--log-every", type=int, default=2)
    ap.add_argument("--seed", type=int, default=31)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(name)s] %(message)s")

    torch.manual_seed(args.seed)
    dev = torch.device(args.device)
    model = MaxSimReranker(args.dim).to(dev).eval()
    run = LazyGraphRunner(model)
    reqs = list(requests(args.requests, args.candidates, args.query_len, args.doc_len, args.dim, args.seed))
    log.info("%d requests, %d candidates each", len(reqs), args.candidates)

    all_scores = []
    t0 = time.perf_counter()
    with torch.no_grad():
        for i, (q, d) in enumerate(progress(reqs, desc="rerank", unit="req")):
            scores = run(q.to(dev), d.to(dev))
            all_scores.append(scores.clone())
            if i % args.log_every == 0:
                top = scores.topk(args.top_k).indices
                log.info("request %4d  best %.3f  top-%d head %s  %.0f req/s", i, scores.max().item(), args.top_k,
                         top[:3].tolist(), (i + 1) / (time.perf_counter() - t0))
        ref = torch.stack([model(q.to(dev), d.to(dev)) for q, d in reqs])
    got = torch.stack(all_scores)
    bad = (ref - got).abs().amax(dim=-1) > 1e-3
    diff = (ref - got).abs().max().item()
    if not bool(bad.any()):
        log.info("MATCH graph vs eager scores on all %d requests (max |diff| %.3e)", len(reqs), diff)
    else:
        log.error("MISMATCH graph vs eager scores on %d/%d requests (first %d, max |diff| %.3e)", int(bad.sum()),
                  len(reqs), int(bad.nonzero()[0, 0]), diff)


if __name__ == "__main__":
    main()
