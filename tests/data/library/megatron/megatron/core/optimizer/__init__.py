from .optimizer import ChainedOptimizer, MegatronOptimizer, MixedPrecisionOptimizer

__all__ = ["ChainedOptimizer", "MegatronOptimizer", "MixedPrecisionOptimizer"]
