"""The Python names a capture depended on, so a replay can tell when they changed.

Two kinds:
- **Bindings of inputs.** Which names held each static input when the capture ended: a module global, a local
  of the capturing function, an attribute of `self`, or one item of a dict held there. A replay whose name
  now holds another tensor, while the captured one was not written since the last replay, was rebound
  (`static_x = batch` instead of `static_x.copy_(batch)`).
- **Python values read by captured lines.** While the capture runs, a line tracer notes each plain name and
  `self.attr` a captured line reads that holds a Python scalar (bool, int, float, str, None), and each one it
  assigns. The graph froze those values: a replay after one changed computes with the old one.

Nothing here calls user code: values are read from frame locals, module dicts and instance `__dict__`s only."""

from __future__ import annotations

import contextlib
import io
import keyword
import linecache
import sys
import tokenize
import weakref
from dataclasses import dataclass, field
from types import CodeType, FrameType
from typing import Any

from denpex.guard.sites import drop_snapshot, is_user_file, locals_of, user_frames

MISSING = object()
SCALARS = (bool, int, float, str, type(None))


class Stack(list[FrameType]):
    """The user frames of one replay's caller; each frame's locals are read at most once."""

    def __init__(self, frames: list[FrameType]) -> None:
        super().__init__(frames)
        self._locals: dict[int, dict[str, object]] = {}

    def local(self, code: CodeType, name: str) -> Any:
        for frame in self:
            if frame.f_code is code:
                names = self._locals.get(id(frame))
                if names is None:
                    names = self._locals[id(frame)] = locals_of(frame)
                return names.get(name, MISSING)
        return MISSING


@dataclass(frozen=True)
class Root:
    """Where a name lives: a module's globals, a function's locals (found again on the stack by its code
    object), or an object's instance attributes (held weakly)."""

    kind: str  # "global" | "local" | "attr" | "group" (an optimizer's param_groups[i][key])
    name: str
    scope: Any  # the globals dict | the CodeType | weakref to the object

    def read(self, stack: list[FrameType], in_trace: bool = False) -> Any:
        if self.kind == "global":
            return self.scope.get(self.name, MISSING)
        if self.kind == "attr":
            obj = self.scope()
            if obj is None:
                return MISSING
            return getattr(obj, "__dict__", {}).get(self.name, MISSING)
        if self.kind == "group":
            opt = self.scope()
            index, _, key = self.name.partition(":")
            groups = getattr(opt, "__dict__", {}).get("param_groups") if opt is not None else None
            if not isinstance(groups, list) or int(index) >= len(groups):
                return MISSING
            return groups[int(index)].get(key, MISSING)
        if isinstance(stack, Stack):
            return stack.local(self.scope, self.name)
        for frame in stack:
            if frame.f_code is self.scope:
                return locals_of(frame, in_trace=in_trace).get(self.name, MISSING)
        return MISSING

    def label(self) -> str:
        if self.kind == "group":
            index, _, key = self.name.partition(":")
            opt = self.scope()
            return f"{type(opt).__name__ if opt is not None else 'optimizer'}.param_groups[{index}][{key!r}]"
        if self.kind == "attr":
            obj = self.scope()
            owner = "self" if obj is None else _owner_name(obj)
            return f"{owner}.{self.name}"
        return self.name


def _owner_name(obj: Any) -> str:
    return "self" if not isinstance(obj, type) else obj.__name__


@dataclass(frozen=True)
class Binding:
    root: Root
    key: Any = MISSING  # an item of a dict held by the root

    def read(self, stack: list[FrameType]) -> Any:
        value = self.root.read(stack)
        if self.key is MISSING or value is MISSING:
            return value
        if isinstance(value, dict):
            return value.get(self.key, MISSING)
        return MISSING

    def label(self) -> str:
        return self.root.label() if self.key is MISSING else f"{self.root.label()}[{self.key!r}]"


def _weak(obj: Any) -> Any:
    try:
        return weakref.ref(obj)
    except TypeError:
        return None


def roots_of(frame: FrameType) -> list[tuple[Root, Any]]:
    """Each name a frame can see directly, with its value: locals (or globals at module level) and the
    instance attributes of `self`."""
    out: list[tuple[Root, Any]] = []
    module_level = frame.f_code.co_name == "<module>"
    names = locals_of(frame)
    for name, value in list(names.items()):
        if module_level:
            out.append((Root("global", name, frame.f_globals), value))
        else:
            out.append((Root("local", name, frame.f_code), value))
    owner = None if module_level else names.get("self")
    if owner is not None:
        ref = _weak(owner)
        if ref is not None:
            for name, value in list(getattr(owner, "__dict__", {}).items()):
                out.append((Root("attr", name, ref), value))
    return out


def bindings_of(tensors: dict[int, Any], frame: FrameType | None, depth: int = 3) -> dict[int, list[Binding]]:
    """For each tensor (by id), the names that hold it in the capturing frames: directly, or as an item of a
    dict held by such a name."""
    found: dict[int, list[Binding]] = {}
    for f in user_frames(frame, depth):
        for root, value in roots_of(f):
            if id(value) in tensors and tensors[id(value)] is value:
                found.setdefault(id(value), []).append(Binding(root))
            elif isinstance(value, dict) and len(value) <= 256:
                for key, item in list(value.items()):
                    if id(item) in tensors and tensors[id(item)] is item and isinstance(key, (str, int)):
                        found.setdefault(id(item), []).append(Binding(root, key))
    return found


@dataclass
class Value:
    """A Python scalar that captured code read (or assigned) through a name."""

    root: Root
    value: Any
    line: str  # file:line of the captured line that read it
    condition: bool  # read in an if/elif/while condition (or a conditional expression)
    varies: bool = False  # it took more than one value during the capture: a loop variable, not frozen
    assigned: bool = False  # the captured code assigns it
    counter: bool = False  # ... with an augmented assignment (`steps += 1`): a side effect replays skip
    source: str = ""


@dataclass
class Tracer:
    """Line tracer for the duration of one capture: what captured user lines read and assign."""

    values: dict[tuple[str, Any, str], Value] = field(default_factory=dict)
    targets: set[tuple[str, Any, str]] = field(default_factory=set)
    _old: Any = None
    _frames: list[FrameType] = field(default_factory=list)

    def start(self, frame: FrameType | None) -> bool:
        if sys.gettrace() is not None:
            return False  # a debugger or coverage owns the trace hook: do not take it away
        self._old = sys.gettrace()
        sys.settrace(self._call)
        # the frames already running (the `with` body) get line events too
        for f in user_frames(frame, 4):
            f.f_trace = self._line
            f.f_trace_lines = True
            self._frames.append(f)
        return True

    def stop(self) -> None:
        sys.settrace(self._old)
        for f in self._frames:
            f.f_trace = None
            drop_snapshot(f)
        self._frames.clear()

    def _call(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event != "call":
            return None
        if is_user_file(frame.f_code.co_filename):
            return self._line
        if frame.f_code.co_name == "step" and "torch/optim/" in frame.f_code.co_filename.replace("\\", "/"):
            with contextlib.suppress(Exception):
                self._optimizer(frame)
        return None

    def _optimizer(self, frame: FrameType) -> None:
        """An optimizer step inside the capture bakes each group's Python-float hyperparameters (lr, ...)
        into the graph; a scheduler that changes them later changes nothing the graph does."""
        opt = frame.f_locals.get("self")
        groups = getattr(opt, "__dict__", {}).get("param_groups")
        ref = _weak(opt) if isinstance(groups, list) else None
        if ref is None or not isinstance(groups, list):
            return
        caller = user_frames(frame, 1)
        where = f"{caller[0].f_code.co_filename}:{caller[0].f_lineno}" if caller else "an unknown line"
        for i, group in enumerate(groups):
            for key in ("lr", "weight_decay", "momentum"):
                value = group.get(key)
                if isinstance(value, float) and not isinstance(value, bool):
                    root = Root("group", f"{i}:{key}", ref)
                    self.values.setdefault(_key(root), Value(root, value, where, False,
                                                             source=f"{type(opt).__name__}.step()"))

    def _line(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            with contextlib.suppress(Exception):
                self._note(frame)
        return self._line

    def _note(self, frame: FrameType) -> None:
        code = frame.f_code
        parsed = parse_line(code.co_filename, frame.f_lineno)
        if parsed is None:
            return
        reads, writes, is_condition, text = parsed
        code_text = text.split("#", 1)[0]
        augmented = any(op in code_text for op in _AUG)
        module_level = code.co_name == "<module>"
        where = f"{code.co_filename}:{frame.f_lineno}"
        for chain in writes:
            root = self._root(frame, chain, module_level)
            if root is not None:
                self.targets.add(_key(root))
                if root.kind != "local":
                    value = root.read([frame], in_trace=True)
                    key = _key(root)
                    if key not in self.values and isinstance(value, SCALARS):
                        self.values[key] = Value(root, value, where, False, assigned=True, source=text)
                    if key in self.values:
                        self.values[key].assigned = True
                        # `steps += 1`, or `steps = steps + 1`: the line reads what it writes
                        self.values[key].counter |= augmented or (chain in reads and ("+" in code_text
                                                                                      or "-" in code_text))
                        self.values[key].line = where
        for chain in reads:
            root = self._root(frame, chain, module_level)
            if root is None:
                continue
            value = root.read([frame], in_trace=True)
            if value is MISSING or not isinstance(value, SCALARS):
                continue
            key = _key(root)
            seen = self.values.get(key)
            if seen is None:
                self.values[key] = Value(root, value, where, is_condition, source=text)
            elif type(seen.value) is not type(value) or seen.value != value:
                seen.varies = True

    @staticmethod
    def _root(frame: FrameType, chain: tuple[str, ...], module_level: bool) -> Root | None:
        if len(chain) == 2:
            if chain[0] != "self" or module_level:
                return None
            owner = frame.f_locals.get("self")  # in a trace call: the interpreter's own snapshot
            ref = _weak(owner) if owner is not None else None
            return None if ref is None else Root("attr", chain[1], ref)
        name = chain[0]
        if module_level:
            return Root("global", name, frame.f_globals)
        if name in frame.f_code.co_varnames or name in frame.f_code.co_cellvars or name in frame.f_code.co_freevars:
            return Root("local", name, frame.f_code)
        if name in frame.f_globals:
            return Root("global", name, frame.f_globals)
        return None  # a builtin

    def frozen(self) -> list[Value]:
        """Values the graph froze: read, never varying during capture, not assigned by captured code."""
        return [v for k, v in self.values.items()
                if not v.varies and not v.assigned and k not in self.targets]

    def side_effects(self) -> list[Value]:
        """Numbers outside any function's locals that captured code counts (`+=`): replays skip it."""
        return [v for v in self.values.values()
                if v.counter and v.root.kind != "local" and isinstance(v.value, (int, float))
                and not isinstance(v.value, bool)]


def _key(root: Root) -> tuple[str, Any, str]:
    scope = root.scope
    ident: Any = id(scope()) if root.kind in ("attr", "group") else id(scope)
    return (root.kind, ident, root.name)


_parsed: dict[tuple[str, int], tuple[list[tuple[str, ...]], list[tuple[str, ...]], bool, str] | None] = {}
_CONDITION_WORDS = {"if", "elif", "while", "assert"}
_AUG = {"+=", "-=", "*=", "/=", "//=", "%=", "**=", "|=", "&=", "^=", ">>=", "<<=", "@="}


def parse_line(filename: str, lineno: int) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]], bool, str] | None:
    """(names and self.attr chains read, those assigned, whether the line is a condition, its text) of one
    source line, from its tokens. Function names (`f(`), keyword arguments, attributes other than of `self`
    and `for` targets are left out."""
    key = (filename, lineno)
    if key in _parsed:
        return _parsed[key]
    text = linecache.getline(filename, lineno).strip()
    result = None
    if text and not text.startswith("#"):
        result = _scan(text)
    _parsed[key] = result
    return result


def _scan(text: str) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]], bool, str] | None:
    try:
        toks = [t for t in tokenize.generate_tokens(io.StringIO(text + "\n").readline)
                if t.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT, tokenize.ENDMARKER,
                                  tokenize.INDENT, tokenize.DEDENT)]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    words = [t.string for t in toks]
    condition = bool(words) and (words[0] in _CONDITION_WORDS or (" if " in f" {text} " and " else " in text))
    # the top-level assignment operator, if any: names before it are written, after it read
    split = None
    depth = 0
    for i, w in enumerate(words):
        if w in "([{":
            depth += 1
        elif w in ")]}":
            depth -= 1
        elif depth == 0 and (w == "=" or w in _AUG):
            split = i
            break
    chains_read: list[tuple[str, ...]] = []
    chains_written: list[tuple[str, ...]] = []
    # a `for` target (of a loop or a comprehension) is bound by the line itself wherever it appears in it
    for_names: set[str] = set()
    for i, w in enumerate(words):
        if w == "for":
            j = i + 1
            while j < len(words) and words[j] != "in":
                for_names.add(words[j])
                j += 1
    for_targets = {i for i, w in enumerate(words) if w in for_names}
    i = 0
    while i < len(toks):
        t = toks[i]
        if t.type != tokenize.NAME or keyword.iskeyword(t.string) or i in for_targets:
            i += 1
            continue
        prev = words[i - 1] if i else ""
        nxt = words[i + 1] if i + 1 < len(words) else ""
        if prev == ".":
            i += 1
            continue
        chain: tuple[str, ...] = (t.string,)
        end = i
        if nxt == "." and i + 2 < len(words) and toks[i + 2].type == tokenize.NAME:
            if t.string != "self":
                i += 3
                continue  # obj.attr of anything but self: leave it (properties, modules)
            chain = ("self", words[i + 2])
            end = i + 2
        after = words[end + 1] if end + 1 < len(words) else ""
        if after == "(" or after == ".":
            i = end + 1
            continue  # a call (f(...), self.f(...)) or a deeper chain
        if after == "=" and split is not None and end > split:
            i = end + 1
            continue  # a keyword argument f(x=...)
        target = split is not None and end < split
        if target:
            chains_written.append(chain)
            if split is not None and words[split] in _AUG:
                chains_read.append(chain)
        else:
            chains_read.append(chain)
        i = end + 1
    if not chains_read and not chains_written:
        return None
    return chains_read, chains_written, condition, text

