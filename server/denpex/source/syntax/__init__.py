"""Parsing: tree-sitter trees of Python source, lazy top-level chunks, climbing a tree, name mentions."""
