import torch
from torch import nn

from .embeddings import TimestepEmbedding


class ResBlock(nn.Module):
    def __init__(self, ch: int, emb: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(ch, ch, 3, padding=1)
        self.conv2 = nn.Conv2d(ch, ch, 3, padding=1)
        self.emb = nn.Linear(emb, ch)
        self.norm = nn.GroupNorm(8, ch)

    def forward(self, x: torch.Tensor, temb: torch.Tensor) -> torch.Tensor:
        h = self.conv1(torch.nn.functional.silu(self.norm(x)))
        h = h + self.emb(temb)[:, :, None, None]
        return x + self.conv2(torch.nn.functional.silu(h))


class CrossAttention(nn.Module):
    def __init__(self, ch: int, ctx: int) -> None:
        super().__init__()
        self.q = nn.Linear(ch, ch)
        self.kv = nn.Linear(ctx, 2 * ch)

    def forward(self, x: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        b, c, h, w = x.shape
        context = context.nan_to_num(0.0)  # ok: compile-skip-cudagraphs
        q = self.q(x.flatten(2).transpose(1, 2))
        k, v = self.kv(context).chunk(2, dim=-1)
        valid = context.abs().sum(-1) > 0
        # boolean-mask indexing: a graph break under torch.compile, not a capture failure
        k = k[valid].view(b, -1, c)  # ok: capture-dynamic-shape-op
        v = v[valid].view(b, -1, c)  # ok: capture-dynamic-shape-op
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        return x + out.transpose(1, 2).reshape(b, c, h, w)


class UNet2DConditionModel(nn.Module):
    def __init__(self, ch: int = 64, ctx: int = 77) -> None:
        super().__init__()
        self.conv_in = nn.Conv2d(4, ch, 3, padding=1)
        self.time_embedding = TimestepEmbedding(ch)
        self.down = nn.ModuleList([ResBlock(ch, ch), ResBlock(ch, ch)])
        self.mid_attn = CrossAttention(ch, ctx)
        self.up = nn.ModuleList([ResBlock(ch, ch), ResBlock(ch, ch)])
        self.conv_out = nn.Conv2d(ch, 4, 3, padding=1)

    def forward(self, sample: torch.Tensor, timestep: torch.Tensor, encoder_hidden_states: torch.Tensor) -> torch.Tensor:
        temb = self.time_embedding(timestep)
        h = self.conv_in(sample)
        for block in self.down:
            h = block(h, temb)
        h = self.mid_attn(h, encoder_hidden_states)
        for block in self.up:
            h = block(h, temb)
        return self.conv_out(h)
