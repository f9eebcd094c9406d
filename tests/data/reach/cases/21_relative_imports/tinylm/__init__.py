"""Package facade: the model class is re-exported from its submodule."""

from .model import TinyLM

__all__ = ["TinyLM"]
