#!/usr/bin/env python3
"""Perplexity of the causal scorer on a held-out set of variable-length documents.

Batches are padded to a fixed length so that one CUDA graph serves the whole
set.  The eager path is run on the same batches at the end for comparison.
"""
import argparse
import logging
import math
import time

import torch

from lm_eval import CausalScorer, graphed_nll_terms, nll_terms
from progress import progress

log = logging.getLogger("eval.ppl")


def heldout_batches(n, batch, max_len, vocab, seed):
    g = torch.Generator().manual_seed(seed)
    for _ in range(n):
        lengths = torch.randint(max_len // 4, max_len + 1, (batch,), generator=g)
        tokens = torch.randint(1, vocab, (batch, max_len), generator=g)
        tokens[torch.arange(max_len)[None, :] >= lengths[:, None]] = 0
        yield tokens, lengths


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--vocab", type=int, default=1024)
    ap.add_argument("--max-len", type=int, default=128)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--num-batches", type=int, default=200)
    ap.add_argument("--log-every", type=int, default=2)
    ap.add_argument("--seed", type=int, default=13)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s - %(name)s - %(levelname)s - %(message)s")

    torch.manual_seed(args.seed)
    dev = torch.device(args.device)
    model = CausalScorer(args.vocab, max_len=args.max_len).to(dev).eval()
    batches = list(heldout_batches(args.num_batches, args.batch_size, args.max_len, args.vocab, args.seed))
    log.info("held-out set: %d batches, %d tokens", len(batches), sum(int(l.sum()) for _, l in batches))

    nll_sum, tok_sum = 0.0, 0
    t0 = time.perf_counter()
    with torch.no_grad():
        for i, (tokens, lengths) in enumerate(progress(batches, desc="eval", unit="batch")):
            n_tokens = int((lengths - 1).sum())
            s, n = graphed_nll_terms(model, tokens.to(dev), lengths.to(dev), n_tokens)
            nll_sum += s.item()
            tok_sum += n
            if i % args.log_every == 0:
                log.info("batch %3d  running ppl %.3f  %.0f tok/s", i, math.exp(nll_sum / tok_sum),
                         tok_sum / (time.perf_counter() - t0))
        graph_ppl = math.exp(nll_sum / tok_sum)

        ref_sum, ref_tok = 0.0, 0
        for tokens, lengths in batches:
            s, n = nll_terms(model, tokens.to(dev), lengths.to(dev), int((lengths - 1).sum()))
            ref_sum += s.item()
            ref_tok += n
        eager_ppl = math.exp(ref_sum / ref_tok)
    log.info("perplexity: graph %.4f, eager %.4f", graph_ppl, eager_ppl)
    if abs(graph_ppl - eager_ppl) <= 1e-3 * eager_ppl:
        log.info("MATCH graph vs eager perplexity")
    else:
        log.error("MISMATCH graph vs eager perplexity (%.4f vs %.4f)", graph_ppl, eager_ppl)


if __name__ == "__main__":
    main()
