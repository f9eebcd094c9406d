"""A local stand-in for a serving runtime: same names as the real one, eager only."""
