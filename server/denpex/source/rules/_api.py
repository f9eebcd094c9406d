"""What a source rule module declares, and what its detectors are handed.

A rule module (`source/rules/<rule_id>.py`, the rule id with `_` for `-`) defines one `RULE = SourceRule(...)`:
the rule id of its YAML in `rules/`, the hazards it reports, and its detectors for the hook points it needs:

- `claims`: on a call, the enabled rules' claims run in `precedence` order (lower first) and the first one that
  returns True takes the call: `x.item()` is an item read, never also a device copy. Precedence is data, spaced
  by 10 so that a new rule can slot in between.
- `on_call`: run on every call the capture reaches (after the claims), e.g. RNG and lazy-init checks.
- `on_condition`: a condition evaluated on the host (`if c:`, `while c:`, `assert c`, a conditional expression,
  an operand of `and`/`or`/`not`) that is not a capture guard.
- `on_node`: by tree-sitter node type (`subscript`, `assignment`, `augmented_assignment`, `with_statement`,
  `string`), on every such node the capture reaches.
- `around`: once per capture region, for the code around it (the replay side, settings, the optimizer...),
  in `order` (lower first).

The walker (`source/engine/walker.py`) does traversal, guards, branches and call following, and dispatches only to the
enabled rules: a disabled rule's detectors never run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from tree_sitter import Node

from denpex.source.capture.regions import CaptureRegion
from denpex.source.engine.hits import Sink
from denpex.source.model import CallStep, Fix, Severity, TextEdit
from denpex.source.resolve.callgraph import Env, Resolver
from denpex.source.resolve.index import FileIndex, FuncInfo, Kind


@dataclass(frozen=True)
class Hazard:
    """One detector outcome of a rule. `eager_fallback`: findings of this hazard in the capture's own file also
    offer the region's eager fallback (not where the hazard is harmless or only informative)."""

    id: str
    eager_fallback: bool = True


@dataclass
class Frame:
    """Where the walker is: the file, the bindings of the function entered, the call chain from the capture."""

    ix: FileIndex
    env: Env
    chain: tuple[str, ...]
    depth: int
    func: FuncInfo | None = None
    branch: str | None = None  # the first branch on the call path from the capture to this function
    steps: tuple[CallStep, ...] = ()  # the calls followed from the capture to this function, with positions
    maybe: str | None = None  # a call on the way was resolved through its callers' arguments (values.py)
    # parameters the entering call left at their defaults, with the default (known only for a call without splats)
    defaulted: tuple[tuple[str, Node], ...] = ()


@dataclass(frozen=True)
class CallSite:
    """A call the capture reaches, taken apart once for every detector."""

    node: Node
    frame: Frame
    func: Node  # the called expression
    qualname: str | None  # `torch.cuda.synchronize`, or None
    method: str | None  # `item` for `x.item()`
    receiver: Node | None  # `x` for `x.item()`
    receiver_kind: Kind | None
    args: list[Node]  # positional arguments
    stmt: Node  # the statement holding the call
    direct: bool  # a statement of the capture region itself (not of a called function)

    @property
    def ix(self) -> FileIndex:
        return self.frame.ix


class RegionFixes(Protocol):
    """The shared fix builders of one capture region (`source/fixes/builders.py`)."""

    def guard(self, stmt: Node, frame: Frame) -> Fix | None: ...
    def move_after_replay(self, stmt: Node, direct: bool) -> Fix | None: ...
    def move_before_capture(self, stmt: Node, direct: bool) -> Fix | None: ...
    def hoist(self, stmt: Node, direct: bool, call: Node, safe: bool = True) -> Fix | None: ...
    def warm_up(self) -> Fix | None: ...
    def after_each_replay(self, stmts: list[Node]) -> list[TextEdit] | None: ...
    def eager_fallback(self) -> Fix | None: ...
    def replays(self) -> list[Node] | None: ...


class Walk(Protocol):
    """What the walker offers a detector."""

    region: CaptureRegion
    resolver: Resolver
    sink: Sink
    torch: str  # the name `torch` is bound to in the capture's file
    @property
    def fixes(self) -> RegionFixes: ...

    state: dict[object, object]  # per capture region, keyed by rule id: what a rule remembers while walking

    def direct(self, stmt: Node, frame: Frame) -> bool:
        """`stmt` is a statement of the capture region itself (a fix may move it), not of a called function."""
        ...

    def kind(self, node: Node, frame: Frame) -> Kind: ...
    def tensorish(self, node: Node, frame: Frame) -> bool: ...
    def report(self, hazard: str, node: Node, frame: Frame, fixes: list[Fix | None] | None = None,
               severity: Severity | None = None, message: str | None = None) -> None: ...


class RegionScan(Protocol):
    """What an `around` detector is handed (`source/engine/around.py`)."""

    region: CaptureRegion
    resolver: Resolver
    sink: Sink

    @property
    def replay_side(self) -> ReplaySide | None: ...


class ReplaySide(Protocol):
    """The code after a capture that replays its graph, in the capture's scope (`source/engine/around.py`)."""

    inputs: dict[str, Node]  # names read by the capture that were bound before it -> first read
    inputs_q: set[str]
    outputs_q: set[str]
    first_replay: int  # start byte of the first replay after the capture
    replays: list[Node]  # the graph's replay calls in the capture's scope, in document order
    seen: set[tuple[str, int]]  # (hazard, node id) reported already by an earlier capture of the file
    body: Node  # the block of the capture's scope

    def recaptured_in(self, loop: Node) -> bool: ...

    def followed(self, table: str, names: Iterable[str]) -> list[Node]: ...
    def after(self, table: str, names: Iterable[str]) -> list[Node]: ...
    def replay_follows(self, node: Node) -> bool: ...
    def kind_cat(self, node: Node) -> str: ...


ClaimHook = Callable[[Walk, CallSite], bool]
CallHook = Callable[[Walk, CallSite], None]
ConditionHook = Callable[[Walk, Node, Frame, "Node | None", "Node | None"], None]  # cond, frame, if, ternary
NodeHook = Callable[[Walk, Node, Frame], None]
RegionHook = Callable[[RegionScan], None]

NODE_TYPES = frozenset({"subscript", "assignment", "augmented_assignment", "with_statement", "string"})


@dataclass(frozen=True)
class Claim:
    precedence: int
    detect: ClaimHook


@dataclass(frozen=True)
class Around:
    order: int
    run: RegionHook


@dataclass(frozen=True)
class SourceRule:
    id: str  # the rule's id in the rule book
    hazards: tuple[Hazard, ...]
    claims: tuple[Claim, ...] = ()
    on_call: tuple[CallHook, ...] = ()
    on_condition: tuple[ConditionHook, ...] = ()
    on_node: Mapping[str, tuple[NodeHook, ...]] = field(default_factory=dict)
    around: tuple[Around, ...] = ()
