"""Span-scoring heads for the extractive QA model.

Every head maps the encoder states to per-token start and end logits; positions
that cannot start or end an answer get a large negative logit.
"""
import torch.nn as nn
import torch.nn.functional as F

NEG_LOGIT = -1e4


class LinearSpanHead(nn.Module):
    """The BERT-style `qa_outputs` projection."""

    def __init__(self, hidden):
        super().__init__()
        self.qa_outputs = nn.Linear(hidden, 2)

    def project(self, h):
        return self.qa_outputs(h)

    def span_logits(self, h, allowed):
        start, end = self.project(h).unbind(dim=-1)
        start = start.masked_fill(~allowed, NEG_LOGIT)
        end = end.masked_fill(~allowed, NEG_LOGIT)
        return start, end

    def forward(self, h, allowed, candidates):
        return self.span_logits(h, allowed)


class MLPSpanHead(LinearSpanHead):
    """Two-layer scorer, used by the larger checkpoints."""

    def __init__(self, hidden, inner):
        super().__init__(inner)
        self.dense = nn.Linear(hidden, inner)
        self.norm = nn.LayerNorm(inner)

    def project(self, h):
        return self.qa_outputs(self.norm(F.gelu(self.dense(h))))


class PrunedSpanHead(LinearSpanHead):
    """Linear head that drops weak start positions before span decoding."""

    def __init__(self, hidden, threshold, min_candidates):
        super().__init__(hidden)
        self.threshold = threshold
        self.min_candidates = min_candidates

    def _prune_starts(self, start_logits, candidates):
        n_valid = int((start_logits > self.threshold).sum())
        if n_valid < self.min_candidates:
            return start_logits
        return start_logits.masked_fill((start_logits <= self.threshold) & candidates, NEG_LOGIT)

    def forward(self, h, allowed, candidates):
        start, end = self.span_logits(h, allowed)
        return self._prune_starts(start, candidates), end


def build_head(cfg):
    if cfg.head == "linear":
        head = LinearSpanHead(cfg.hidden)
    elif cfg.head == "mlp":
        head = MLPSpanHead(cfg.hidden, cfg.head_inner)
    elif cfg.head == "pruned":
        head = PrunedSpanHead(cfg.hidden, cfg.start_threshold, cfg.min_candidates)
    else:
        raise ValueError(f"unknown span head {cfg.head!r}")
    return head
