"""The engine: the public analysis entry points, the capture walker, the after-capture pass, hits and shared facts."""
