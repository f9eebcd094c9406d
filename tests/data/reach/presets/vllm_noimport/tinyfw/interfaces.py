from dataclasses import dataclass, field

import torch


class SupportsPP:
    supports_pp = True


@dataclass
class IntermediateTensors:
    tensors: dict[str, torch.Tensor] = field(default_factory=dict)
