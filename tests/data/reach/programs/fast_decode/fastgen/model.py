from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F


@dataclass
class ModelArgs:
    vocab: int = 32000
    dim: int = 512
    n_head: int = 8
    n_layer: int = 6
    max_seq: int = 2048


class KVCache(nn.Module):
    def __init__(self, batch: int, heads: int, max_seq: int, head_dim: int) -> None:
        super().__init__()
        shape = (batch, heads, max_seq, head_dim)
        self.register_buffer("k_cache", torch.zeros(shape, dtype=torch.bfloat16))
        self.register_buffer("v_cache", torch.zeros(shape, dtype=torch.bfloat16))
        self.max_seq = max_seq

    def update(self, input_pos: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        input_pos = input_pos.clamp(max=self.max_seq - 1)  # ok: compile-skip-cudagraphs
        self.k_cache[:, :, input_pos] = k  # ok: compile-skip-cudagraphs
        self.v_cache[:, :, input_pos] = v  # ok: compile-skip-cudagraphs
        return self.k_cache, self.v_cache


class Attention(nn.Module):
    def __init__(self, args: ModelArgs) -> None:
        super().__init__()
        self.n_head = args.n_head
        self.head_dim = args.dim // args.n_head
        self.wqkv = nn.Linear(args.dim, 3 * args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.kv_cache: KVCache | None = None

    def forward(self, x: torch.Tensor, mask: torch.Tensor, input_pos: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q, k, v = self.wqkv(x).split(x.size(-1), dim=-1)
        q, k, v = (z.view(b, t, self.n_head, self.head_dim).transpose(1, 2) for z in (q, k, v))
        if self.kv_cache is not None:
            k, v = self.kv_cache.update(input_pos, k, v)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.wo(y.transpose(1, 2).reshape(b, t, -1))


class TransformerBlock(nn.Module):
    def __init__(self, args: ModelArgs) -> None:
        super().__init__()
        self.attention = Attention(args)
        self.ffn = nn.Sequential(nn.Linear(args.dim, 4 * args.dim), nn.SiLU(), nn.Linear(4 * args.dim, args.dim))
        self.norm1 = nn.RMSNorm(args.dim)
        self.norm2 = nn.RMSNorm(args.dim)

    def forward(self, x: torch.Tensor, mask: torch.Tensor, input_pos: torch.Tensor) -> torch.Tensor:
        h = x + self.attention(self.norm1(x), mask, input_pos)
        return h + self.ffn(self.norm2(h))


class Transformer(nn.Module):
    def __init__(self, args: ModelArgs) -> None:
        super().__init__()
        self.args = args
        self.tok_embeddings = nn.Embedding(args.vocab, args.dim)
        self.layers = nn.ModuleList(TransformerBlock(args) for _ in range(args.n_layer))
        self.norm = nn.RMSNorm(args.dim)
        self.output = nn.Linear(args.dim, args.vocab, bias=False)
        self.causal_mask = torch.tril(torch.ones(args.max_seq, args.max_seq, dtype=torch.bool))

    def setup_caches(self, batch: int) -> None:
        for layer in self.layers:
            layer.attention.kv_cache = KVCache(batch, self.args.n_head, self.args.max_seq,
                                               self.args.dim // self.args.n_head)
        self.causal_mask = self.causal_mask.cuda()

    def forward(self, idx: torch.Tensor, input_pos: torch.Tensor) -> torch.Tensor:
        mask = self.causal_mask[None, None, input_pos]
        x = self.tok_embeddings(idx)
        for layer in self.layers:
            x = layer(x, mask, input_pos)
        return self.output(self.norm(x))
