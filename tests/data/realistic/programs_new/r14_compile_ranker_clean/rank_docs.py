#!/usr/bin/env python3
"""Re-rank candidate documents for a batch of queries with a compiled cross-encoder.

Pairs arrive in fixed-size batches; scores are gathered in a ResultStore and the best
document per query is reported. A few batches are scored again eagerly at the end.
"""
import argparse
import logging
import time

import torch

from progress import progress
from ranker import CompiledRanker, CrossRanker
from results import ResultStore

log = logging.getLogger("rerank")


def candidate_pairs(n_batches, batch, q_len, d_len, vocab, n_queries, seed):
    g = torch.Generator().manual_seed(seed)
    for _ in range(n_batches):
        qids = torch.randint(0, n_queries, (batch,), generator=g)
        q = torch.randint(1, vocab, (batch, q_len), generator=g)
        d = torch.randint(1, vocab, (batch, d_len), generator=g)
        yield qids, q, d


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--batches", type=int, default=120)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--q-len", type=int, default=16)
    ap.add_argument("--d-len", type=int, default=48)
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--check", type=int, default=4)
    ap.add_argument("--log-every", type=int, default=2)
    ap.add_argument("--seed", type=int, default=23)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s] %(name)s %(levelname)s: %(message)s")

    torch.manual_seed(args.seed)
    dev = torch.device(args.device)
    model = CrossRanker(args.vocab).to(dev).eval()
    ranker = CompiledRanker(model)
    store = ResultStore()
    pairs = list(candidate_pairs(args.batches, args.batch_size, args.q_len, args.d_len, args.vocab,
                                 args.queries, args.seed))
    with torch.no_grad():
        t0 = time.perf_counter()
        _, q0, d0 = pairs[0]
        ranker.warm_up(q0.to(dev), d0.to(dev))
        log.info("compiled ranker ready in %.1fs", time.perf_counter() - t0)
        t0 = time.perf_counter()
        for i, (qids, q, d) in enumerate(progress(pairs, desc="rerank", unit="batch")):
            store.add(qids.to(dev), ranker.score(q.to(dev, non_blocking=True), d.to(dev, non_blocking=True)))
            if i % args.log_every == 0:
                log.info("batch %4d  %6d pairs  %.0f pairs/s", i, len(store),
                         len(store) / (time.perf_counter() - t0))
        best = store.best_per_query(args.queries)
        seen = torch.isfinite(best)
        log.info("queries answered %d, mean best score %.4f", int(seen.sum()), best[seen].mean().item())
        ref = torch.cat([model(q.to(dev), d.to(dev)) for _, q, d in pairs[: args.check]])
        _, scores = store.table()
        got = scores[: ref.shape[0]]
    diff = (ref - got).abs().max().item()
    if diff <= 1e-3:
        log.info("MATCH compiled scores vs eager on %d pairs (max |diff| %.3e)", ref.shape[0], diff)
    else:
        log.error("MISMATCH compiled scores vs eager on %d pairs (max |diff| %.3e)", ref.shape[0], diff)


if __name__ == "__main__":
    main()
