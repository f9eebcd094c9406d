from dataclasses import dataclass
from enum import Enum
from typing import ClassVar, Generic, TypeVar

import torch


class AttentionCGSupport(Enum):
    NEVER = 0
    UNIFORM_SINGLE_TOKEN_DECODE = 1


class AttentionMetadata:
    pass


@dataclass
class CommonAttentionMetadata:
    seq_lens: torch.Tensor
    block_table_tensor: torch.Tensor
    slot_mapping: torch.Tensor


M = TypeVar("M")


class AttentionMetadataBuilder(Generic[M]):
    _cudagraph_support: ClassVar[AttentionCGSupport] = AttentionCGSupport.NEVER


class AttentionImpl(Generic[M]):
    pass


class AttentionBackend:
    pass
