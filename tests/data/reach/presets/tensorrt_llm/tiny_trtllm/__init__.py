"""Importing the package registers the model with TensorRT-LLM's auto-model mapping."""

from . import modeling_tiny  # noqa: F401
