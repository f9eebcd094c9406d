"""Host-side telemetry that knows to stay out of the way while a CUDA graph is being captured."""

import logging

import torch
from graph_state import is_graph_capturing

log = logging.getLogger(__name__)


class Telemetry:
    def __init__(self) -> None:
        self.values: list[float] = []

    def record(self, loss: torch.Tensor) -> None:
        if torch.cuda.is_current_stream_capturing():
            return
        self.values.append(loss.item())  # ok: capture-item-sync

    def flush(self, out: torch.Tensor) -> None:
        if not is_graph_capturing():
            torch.cuda.synchronize()  # ok: capture-explicit-sync
            log.info("out %s", out.cpu())  # ok: capture-host-copy  # ok: capture-print-tensor
        # the guard above does not cover this line
        peak = out.abs().max().item()  # ruleid: capture-item-sync
        out.div_(peak)
