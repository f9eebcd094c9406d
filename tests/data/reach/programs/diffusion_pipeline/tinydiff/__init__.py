from .pipeline import DiffusionPipeline

__all__ = ["DiffusionPipeline"]
