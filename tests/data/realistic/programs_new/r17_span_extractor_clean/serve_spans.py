#!/usr/bin/env python3
"""Extractive QA inference server (offline replay of a request log).

Requests are packed as [CLS] question [SEP] context [SEP] and padded to a fixed
length.  The first --graph-after batches run eagerly; then the model is captured
into a CUDA graph for the fixed batch shape and replayed for the rest of the log.
"""
import argparse
import logging
import statistics
import time

import torch

from inference import GraphedInference
from progress import progress
from span_model import CLS_ID, PAD_ID, SEP_ID, ModelConfig, SpanExtractor

logger = logging.getLogger("spanqa.serve")


def request_log(n, batch, max_len, vocab, seed):
    g = torch.Generator().manual_seed(seed)
    for i in range(n):
        ids = torch.full((batch, max_len), PAD_ID, dtype=torch.long)
        for r in range(batch):
            q_len = int(torch.randint(6, 18, (1,), generator=g))
            c_len = int(torch.randint(40, max_len - q_len - 3, (1,), generator=g))
            q = torch.randint(3, vocab, (q_len,), generator=g)
            c = torch.randint(3, vocab, (c_len,), generator=g)
            at = int(torch.randint(0, c_len - q_len // 2, (1,), generator=g))
            c[at:at + q_len // 2] = q[: q_len // 2]
            row = torch.cat([torch.tensor([CLS_ID]), q, torch.tensor([SEP_ID]), c, torch.tensor([SEP_ID])])
            ids[r, : row.numel()] = row
        yield i, ids


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--head", default="pruned", choices=["linear", "mlp", "pruned"])
    ap.add_argument("--start-threshold", type=float, default=0.25)
    ap.add_argument("--min-candidates", type=int, default=256)
    ap.add_argument("--max-answer-len", type=int, default=24)
    ap.add_argument("--null-threshold", type=float, default=1.0)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--max-len", type=int, default=128)
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--num-batches", type=int, default=400)
    ap.add_argument("--graph-after", type=int, default=150)
    ap.add_argument("--log-every", type=int, default=2)
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s [%(levelname)s] %(name)s: %(message)s")

    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    cfg = ModelConfig(vocab=args.vocab, max_len=args.max_len, max_answer_len=args.max_answer_len, head=args.head,
                      start_threshold=args.start_threshold, min_candidates=args.min_candidates)
    model = SpanExtractor(cfg).to(device).eval()
    logger.info("span extractor: %.2fM parameters, head=%s, batch %dx%d", sum(p.numel() for p in model.parameters())
                / 1e6, type(model.head).__name__, args.batch_size, args.max_len)

    runner = None
    lat = []
    answered = 0
    span_tokens = 0
    last_ids = None
    last_out = None
    t_start = time.perf_counter()
    with torch.inference_mode():
        for i, ids in progress(request_log(args.num_batches, args.batch_size, args.max_len, args.vocab, args.seed),
                               total=args.num_batches, desc="requests", unit="batch"):
            t0 = time.perf_counter()
            ids = ids.to(device, non_blocking=True)
            if i < args.graph_after:
                out = model(ids)
            else:
                if runner is None:
                    logger.info("batch %d: switching to CUDA-graph replay", i)
                    runner = GraphedInference(model, ids).capture()
                out = runner(ids)
            start_logits, end_logits, start, end, margin = out
            has_answer = margin > args.null_threshold
            n_ans = int(has_answer.sum())
            answered += n_ans
            span_tokens += int(((end - start + 1) * has_answer).sum())
            if i == args.num_batches - 1:
                last_ids = ids.clone()
                last_out = tuple(t.clone() for t in out)
            lat.append((time.perf_counter() - t0) * 1e3)
            if i % args.log_every == 0:
                logger.info("batch %4d  answered %2d/%d  mean margin %+.3f  p50 %.2f ms", i, n_ans, args.batch_size,
                            float(margin.mean()), statistics.median(lat[-50:]))

        ref = model(last_ids)
    elapsed = time.perf_counter() - t_start
    total = args.num_batches * args.batch_size
    logger.info("served %d requests in %.1f s: %.1f%% answered, mean answer length %.2f tokens", total, elapsed,
                100.0 * answered / total, span_tokens / max(answered, 1))
    diff = max((a.float() - b.float()).abs().max().item() for a, b in zip(ref[:2] + ref[4:], last_out[:2] + last_out[4:]))
    same_spans = bool(torch.equal(ref[2], last_out[2]) and torch.equal(ref[3], last_out[3]))
    if diff <= 1e-4 and same_spans:
        logger.info("MATCH graph vs eager span logits on the last batch (max |diff| %.3e)", diff)
    else:
        logger.error("MISMATCH graph vs eager span logits on the last batch (max |diff| %.3e, same spans %s)", diff,
                     same_spans)


if __name__ == "__main__":
    main()
