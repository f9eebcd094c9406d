"""Denpex: local diagnosis of CUDA-graph failures in PyTorch work."""

__version__ = "0.1.0"
