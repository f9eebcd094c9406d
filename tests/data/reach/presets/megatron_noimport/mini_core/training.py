"""Eager single-process stand-ins for a training framework's entry points."""

import argparse
from dataclasses import dataclass
from enum import Enum
from typing import Any

import torch
from torch import nn


class ModelType(Enum):
    encoder_or_decoder = 1


class _ParallelState:
    @staticmethod
    def get_data_parallel_group() -> Any:
        return None


parallel_state = _ParallelState()
_ARGS = argparse.Namespace(
    seed=1234,
    seq_length=128,
    data_path=[],
    split="98,2,0",
    padded_vocab_size=512,
    max_position_embeddings=128,
)


def get_args() -> argparse.Namespace:
    return _ARGS


def get_tokenizer() -> Any:
    return None


def print_rank_0(message: str) -> None:
    print(message)


def core_transformer_config_from_args(args: argparse.Namespace) -> Any:
    from .transformer import TransformerConfig

    return TransformerConfig()


@dataclass
class _Spec:
    module: Any
    submodules: Any


def get_gpt_layer_with_transformer_engine_spec() -> _Spec:
    from .transformer import SelfAttention, TransformerLayer, TransformerLayerSubmodules

    return _Spec(
        TransformerLayer, TransformerLayerSubmodules(self_attention=_Spec(SelfAttention, None))
    )


class GPTModel(nn.Module):
    def __init__(
        self, config: Any, transformer_layer_spec: _Spec, vocab_size: int, **kwargs: Any
    ) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, config.hidden_size)
        self.layer = transformer_layer_spec.module(config, transformer_layer_spec.submodules)
        self.head = nn.Linear(config.hidden_size, vocab_size)

    def forward(self, tokens, position_ids, attention_mask, labels=None):
        hidden, _ = self.layer(self.embedding(tokens), attention_mask)
        return nn.functional.cross_entropy(
            self.head(hidden).transpose(1, 2), labels, reduction="none"
        )


@dataclass
class GPTDatasetConfig:
    random_seed: int
    sequence_length: int
    blend: Any
    split: str
    tokenizer: Any
    reset_position_ids: bool = False
    reset_attention_mask: bool = False
    eod_mask_loss: bool = False


class GPTDataset:
    pass


def get_blend_from_list(paths: list[str]) -> Any:
    return paths


class BlendedMegatronDatasetBuilder:
    def __init__(
        self, cls: type, sizes: Any, is_built_on_rank: Any, config: GPTDatasetConfig
    ) -> None:
        self.sizes = sizes

    def build(self) -> list[Any]:
        return [None, None, None]


def get_batch_on_this_tp_rank(data_iterator: Any) -> dict[str, torch.Tensor]:
    return next(data_iterator)


def pretrain(
    datasets_provider: Any,
    model_provider: Any,
    model_type: ModelType,
    forward_step: Any,
    **kwargs: Any,
) -> None:
    model = model_provider()
    train, _, _ = datasets_provider([1, 0, 0])
    del model, train
