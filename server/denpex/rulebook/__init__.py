"""The rule book: one data file per CUDA-graph failure mode, loaded and validated here."""

from denpex.rulebook.loader import RuleBook, builtin_rules_dir, load_rulebook
from denpex.rulebook.model import CodeEntry, Rule, Signature

__all__ = ["CodeEntry", "Rule", "RuleBook", "Signature", "builtin_rules_dir", "load_rulebook"]
