"""Configuration: one table of keys (keys.py), one resolver (resolve.py), one pyproject reader
(pyproject.py), shared by `denpex scan` and the language server."""

from denpex.config.keys import CLIENT_ONLY, KEYS, Key, RuleSeverity
from denpex.config.pyproject import find_pyproject, read_layer
from denpex.config.resolve import ConfigError, Layer, Resolved, resolve, rule_ids

__all__ = ["CLIENT_ONLY", "KEYS", "ConfigError", "Key", "Layer", "Resolved", "RuleSeverity", "find_pyproject",
           "read_layer", "resolve", "rule_ids"]
