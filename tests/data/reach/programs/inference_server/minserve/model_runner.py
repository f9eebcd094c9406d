import logging

import torch

from .attention import AttentionMetadata
from .config import EngineConfig
from .models import get_model

log = logging.getLogger(__name__)


class ModelRunner:
    def __init__(self, cfg: EngineConfig) -> None:
        self.cfg = cfg
        self.model = get_model(cfg.model)
        m = cfg.model
        shape = (1024, 16, m.hidden)
        self.kv_caches = [(torch.zeros(shape, dtype=m.dtype, device="cuda"),
                           torch.zeros(shape, dtype=m.dtype, device="cuda")) for _ in range(m.layers)]

    @torch.inference_mode()
    def forward(self, input_ids: torch.Tensor, meta: AttentionMetadata) -> torch.Tensor:
        return self.model(input_ids, self.kv_caches, meta)

    @torch.inference_mode()
    def profile_run(self) -> int:
        ids = torch.zeros(self.cfg.max_batch, dtype=torch.long, device="cuda")
        meta = AttentionMetadata(torch.ones(self.cfg.max_batch, dtype=torch.int32, device="cuda"),
                                 torch.zeros(self.cfg.max_batch, 8, dtype=torch.long, device="cuda"),
                                 torch.zeros(self.cfg.max_batch, dtype=torch.long, device="cuda"))
        self.forward(ids, meta)
        torch.cuda.synchronize()  # ok: capture-explicit-sync
        peak = torch.cuda.max_memory_allocated()
        log.info("profile run: peak %.1f GiB", peak / 2**30)
        return peak
