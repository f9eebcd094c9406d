"""Model base classes and the registry decorator, eager only."""

from collections.abc import Callable
from typing import Any, Generic, TypeVar

import torch
from torch import nn

T = TypeVar("T")
TModel = TypeVar("TModel")
TConfig = TypeVar("TConfig")
MODEL_CLASS_MAPPING: dict[str, type] = {}


def register_auto_model(name: str) -> Callable[[T], T]:
    def decorator(cls: T) -> T:
        MODEL_CLASS_MAPPING[name] = cls  # type: ignore[assignment]
        return cls

    return decorator


class DecoderModel(nn.Module):
    def __init__(self, model_config: Any) -> None:
        super().__init__()
        self.model_config = model_config


class DecoderModelForCausalLM(nn.Module, Generic[TModel, TConfig]):
    def __init__(self, model: Any, *, config: Any, hidden_size: int, vocab_size: int) -> None:
        super().__init__()
        self.model = model
        self.lm_head = nn.Linear(hidden_size, vocab_size, bias=False)

    def forward(
        self, attn_metadata: Any, input_ids: Any = None, position_ids: Any = None, **kwargs: Any
    ) -> torch.Tensor:
        return self.lm_head(
            self.model(attn_metadata, input_ids=input_ids, position_ids=position_ids)
        )

    def load_weights(self, weights: dict[str, torch.Tensor], weight_mapper: Any = None) -> None:
        self.load_state_dict(weights, strict=False)
