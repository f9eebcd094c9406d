"""Intent classifier with temperature calibration and light usage statistics."""
import logging

import torch
import torch.nn as nn

log = logging.getLogger("calibrated")


class CalibratedClassifier(nn.Module):
    def __init__(self, dim=64, hidden=192, n_classes=12, temperature=1.7, log_every=200):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU(),
                                 nn.Linear(hidden, n_classes))
        self.register_buffer("temperature", torch.tensor(float(temperature)))
        self.log_every = log_every
        self.calls = 0
        self.last_entropy = None

    def forward(self, x):
        logits = self.net(x)
        if not torch.cuda.is_current_stream_capturing():
            self.calls += 1
            if self.calls % self.log_every == 0:
                log.debug("calls %d, logit range %.3f", self.calls, (logits.max() - logits.min()).item())
        logits = logits / self.temperature
        probs = logits.softmax(-1)
        if not torch.cuda.is_current_stream_capturing():
            self.last_entropy = -(probs * probs.clamp_min(1e-9).log()).sum(-1).mean().item()
        return probs
