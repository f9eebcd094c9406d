"""The analyser's configuration (ScanConfig) and `[tool.denpex]` for `denpex scan`.

    [tool.denpex]
    select = ["DPX1", "replay-rebound-static-input"]   # ids, codes or code prefixes; default: all
    ignore = ["empty-cache-around-capture"]
    capture-wrappers = ["capture_to_graph", "mypkg.graphs.capture"]  # extra capture openers
    graphed-callables = ["mypkg.graphs.graphed"]      # extra calls that capture their first argument
    capture-entry-points = ["mypkg.model:Net.forward"] # functions the project captures with no capture site here
    guards = ["is_graph_capturing"]                    # extra "am I capturing?" predicates
    max-depth = 4                                      # call-following depth
    unsafe-fixes = true                                # --fix applies unsafe fixes too
    [tool.denpex.severity]
    pinned-nonblocking-copy = "warning"

The keys, their checks and their error texts are `denpex.config`'s, shared with the language server; reading
`[tool.denpex]` into a ScanConfig is `denpex.config.project`'s (the analyser does not read files).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from denpex.source.model import Severity


@dataclass(frozen=True)
class ScanConfig:
    select: frozenset[str] | None = None  # rule ids; None: every rule
    ignore: frozenset[str] = frozenset()
    severity: Mapping[str, Severity] = field(default_factory=dict)  # rule id -> severity
    capture_wrappers: frozenset[str] = frozenset()
    guards: frozenset[str] = frozenset()
    max_depth: int = 4
    graphed_callables: frozenset[str] = frozenset()
    capture_entry_points: frozenset[str] = frozenset()  # "pkg.mod:Class.method": captured by the project's code

    def enabled(self, rule_id: str) -> bool:
        if rule_id in self.ignore:
            return False
        return self.select is None or rule_id in self.select
