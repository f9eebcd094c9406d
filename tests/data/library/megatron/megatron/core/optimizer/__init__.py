from .optimizer import ChainedOptimizer, MegatronOptimizer, MixedPrecisionOptimizer
