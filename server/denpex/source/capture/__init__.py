"""Capture sites: where a file captures (regions), what frameworks capture (entry points and presets), a graph's replays and the state a runner keeps on self."""
