"""A Triton-free reference decode backend used to debug numerics."""

import torch
from sglang.srt.layers.attention.base_attn_backend import AttentionBackend
from sglang.srt.layers.radix_attention import RadixAttention
from sglang.srt.model_executor.forward_batch_info import ForwardBatch, ForwardMode


class ReferenceDecodeBackend(AttentionBackend):
    def __init__(self, model_runner) -> None:
        super().__init__()
        self.device = model_runner.device
        self.req_to_token = model_runner.req_to_token_pool.req_to_token
        self.max_context_len = model_runner.model_config.context_len
        self.cuda_graph_max_seq_len = 0

    def init_forward_metadata(self, forward_batch: ForwardBatch) -> None:
        # Eager batches: plan on the host.
        longest = forward_batch.seq_lens.max().item()  # ok: capture-item-sync
        self.cuda_graph_max_seq_len = int(longest)

    def init_cuda_graph_state(self, max_bs: int, max_num_tokens: int) -> None:
        self.kv_indices = torch.zeros(
            max_bs * self.max_context_len, dtype=torch.int64, device=self.device
        )

    def init_forward_metadata_capture_cuda_graph(
        self,
        bs: int,
        num_tokens: int,
        req_pool_indices: torch.Tensor,
        seq_lens: torch.Tensor,
        encoder_lens: torch.Tensor | None,
        forward_mode: ForwardMode,
        spec_info,
    ) -> None:
        # Runs before the capture starts.
        self.cuda_graph_max_seq_len = int(seq_lens.max().item())  # ok: capture-item-sync

    def init_forward_metadata_replay_cuda_graph(
        self,
        bs: int,
        req_pool_indices: torch.Tensor,
        seq_lens: torch.Tensor,
        seq_lens_sum: int,
        encoder_lens: torch.Tensor | None,
        forward_mode: ForwardMode,
        spec_info,
        seq_lens_cpu: torch.Tensor | None,
    ) -> None:
        # Runs before each replay, on the host.
        seq_lens_host = seq_lens.cpu()  # ok: capture-host-copy
        self.cuda_graph_max_seq_len = int(seq_lens_host.max())  # ok: capture-item-sync

    def get_cuda_graph_seq_len_fill_value(self) -> int:
        return 1

    def forward_extend(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        layer: RadixAttention,
        forward_batch: ForwardBatch,
        save_kv_cache: bool = True,
    ) -> torch.Tensor:
        forward_batch.token_to_kv_pool.set_kv_buffer(layer, forward_batch.out_cache_loc, k, v)
        return self._attend(q, layer, forward_batch, self.max_context_len)

    def forward_decode(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        layer: RadixAttention,
        forward_batch: ForwardBatch,
        save_kv_cache: bool = True,
    ) -> torch.Tensor:
        forward_batch.token_to_kv_pool.set_kv_buffer(layer, forward_batch.out_cache_loc, k, v)
        longest = forward_batch.seq_lens.max().item()  # ruleid: capture-item-sync
        return self._attend(q, layer, forward_batch, longest)

    def _attend(
        self, q: torch.Tensor, layer: RadixAttention, forward_batch: ForwardBatch, span: int
    ) -> torch.Tensor:
        rows = self.req_to_token[forward_batch.req_pool_indices, :span]
        k_cache = forward_batch.token_to_kv_pool.get_key_buffer(layer.layer_id)[rows]
        v_cache = forward_batch.token_to_kv_pool.get_value_buffer(layer.layer_id)[rows]
        query = q.view(-1, 1, layer.tp_q_head_num, layer.qk_head_dim).transpose(1, 2)
        group = layer.tp_q_head_num // layer.tp_k_head_num
        keys = k_cache.transpose(1, 2).repeat_interleave(group, dim=1)
        values = v_cache.transpose(1, 2).repeat_interleave(group, dim=1)
        out = torch.nn.functional.scaled_dot_product_attention(
            query, keys, values, scale=layer.scaling
        )
        return out.transpose(1, 2).reshape(q.shape[0], -1)
