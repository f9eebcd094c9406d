import torch
from torch import nn

from ..attention import AttentionMetadata, PagedAttention
from ..config import ModelConfig


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class LlamaAttention(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.head_dim = cfg.hidden // cfg.heads
        self.qkv = nn.Linear(cfg.hidden, 3 * cfg.hidden, bias=False)
        self.o = nn.Linear(cfg.hidden, cfg.hidden, bias=False)
        self.attn = PagedAttention(cfg.heads, self.head_dim)

    def forward(self, x: torch.Tensor, kv: tuple[torch.Tensor, torch.Tensor],
                meta: AttentionMetadata) -> torch.Tensor:
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        k_cache, v_cache = kv
        k_cache.view(-1, k.size(-1))[meta.slot_mapping] = k
        v_cache.view(-1, v.size(-1))[meta.slot_mapping] = v
        out = self.attn.forward(q.view(q.size(0), -1, self.head_dim), k_cache, v_cache, meta)
        return self.o(out.flatten(1))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.norm1 = RMSNorm(cfg.hidden)
        self.attn = LlamaAttention(cfg)
        self.norm2 = RMSNorm(cfg.hidden)
        self.mlp = nn.Sequential(nn.Linear(cfg.hidden, 4 * cfg.hidden), nn.SiLU(), nn.Linear(4 * cfg.hidden, cfg.hidden))

    def forward(self, x: torch.Tensor, kv: tuple[torch.Tensor, torch.Tensor], meta: AttentionMetadata) -> torch.Tensor:
        x = x + self.attn(self.norm1(x), kv, meta)
        return x + self.mlp(self.norm2(x))


class LlamaForCausalLM(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab, cfg.hidden)
        self.layers = nn.ModuleList([LlamaDecoderLayer(cfg) for _ in range(cfg.layers)])
        self.norm = RMSNorm(cfg.hidden)
        self.lm_head = nn.Linear(cfg.hidden, cfg.vocab, bias=False)

    def forward(self, input_ids: torch.Tensor, kv_caches: list[tuple[torch.Tensor, torch.Tensor]],
                meta: AttentionMetadata) -> torch.Tensor:
        h = self.embed(input_ids)
        for layer, kv in zip(self.layers, kv_caches, strict=True):
            h = layer(h, kv, meta)
        return self.lm_head(self.norm(h))
