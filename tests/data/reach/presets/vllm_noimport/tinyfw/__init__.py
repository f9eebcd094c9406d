"""A local stand-in for a serving engine: same names as the real one, no CUDA graphs."""
