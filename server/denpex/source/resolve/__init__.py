"""Resolution: the per-file index, imports and aliases, values of expressions, the call graph and the workspace."""
