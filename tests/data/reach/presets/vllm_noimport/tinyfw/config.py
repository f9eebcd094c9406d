from dataclasses import dataclass
from typing import Any


@dataclass
class VllmConfig:
    model_config: Any
    cache_config: Any = None
    quant_config: Any = None
