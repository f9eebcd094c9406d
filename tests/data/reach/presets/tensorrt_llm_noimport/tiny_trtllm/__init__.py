"""Importing the package registers the model with the local engine."""

from . import modeling_tiny  # noqa: F401
