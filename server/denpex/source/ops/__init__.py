"""What PyTorch's own op tables say about a call: data-dependent output shape, host sync, random draw.

The data is `aten_tables.json`, generated from an installed torch by `bench/gen_op_tables.py` (operator tags,
docstrings, dispatch probes; see there) and keyed by torch minor version. Loading it needs no torch: product
code never imports it. A spelling is `torch.nonzero`, `torch.nn.functional.one_hot`, `Tensor.nonzero` (a method
on a tensor), or a builtin (`int`, `float`, `bool`, `complex` on a tensor).

An entry may hold only for some calls: `nargs` (positional arguments after the receiver), `when` (each test must
hold: an argument given, `True`, a tensor), `unless` (none may hold: `output_size=` given, `training=False`),
`alt` (other cases, any of which may hold). An argument's text decides `True` / `False` / zero; an argument
whose text says neither counts as possibly on, so `F.dropout(x, training=self.training)` may draw.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Literal

Category = Literal["dynamic_shape", "host_sync", "random"]
_FILE = Path(__file__).with_name("aten_tables.json")
_ZERO = frozenset({"0", "0.0", "0.", ".0"})


@dataclass(frozen=True)
class Test:
    param: str
    pos: int | None  # its position among the positional arguments (after the receiver); None: keyword only
    test: str  # given | true | false | not_true | absent_or_zero | tensor


@dataclass(frozen=True)
class CallArgs:
    """A call's arguments as a rule sees them: source texts, and optionally which of them are tensors."""

    positional: Sequence[str | None] = ()
    keywords: Mapping[str, str] = field(default_factory=dict)
    is_tensor: Callable[[int | str], bool] | None = None  # a position or a keyword name

    @staticmethod
    def count(nargs: int) -> CallArgs:
        return CallArgs(positional=(None,) * nargs)

    def find(self, t: Test) -> tuple[int | str, str | None] | None:
        if t.param in self.keywords:
            return t.param, self.keywords[t.param]
        if t.pos is not None and t.pos < len(self.positional):
            return t.pos, self.positional[t.pos]
        return None


def _holds(t: Test, call: CallArgs) -> bool:
    found = call.find(t)
    text = found[1] if found is not None else None
    if t.test == "given":
        return found is not None
    if t.test == "true":
        return text == "True"
    if t.test == "false":
        return text in ("False", "0")
    if t.test == "not_true":  # absent (the default is off) or plainly off
        return found is None or text in ("False", "0")
    if t.test == "absent_or_zero":
        return found is None or text in _ZERO
    if t.test == "tensor":
        return found is not None and call.is_tensor is not None and call.is_tensor(found[0])
    raise ValueError(f"unknown test {t.test!r}")


@dataclass(frozen=True)
class OpEntry:
    aten: tuple[str, ...]  # the aten overloads this spelling reaches
    via: str  # tags | tags+python | probe | docstring | documented
    nargs: frozenset[int] | None = None
    when: tuple[Test, ...] = ()
    unless: tuple[Test, ...] = ()
    sure: bool = True  # False: the docstring says "for some argument values" without a test here
    note: str = ""
    alt: tuple[OpEntry, ...] = ()
    tensor_receiver: bool = False  # a method Python's own types also have (`list.index`): only on a known tensor

    def holds(self, call: CallArgs) -> bool:
        return self._own(call) or any(a.holds(call) for a in self.alt)

    def _own(self, call: CallArgs) -> bool:
        if not self.sure:
            return False
        if self.nargs is not None and len(call.positional) not in self.nargs:
            return False
        return all(_holds(t, call) for t in self.when) and not any(_holds(t, call) for t in self.unless)


def _tests(raw: object) -> tuple[Test, ...]:
    if not isinstance(raw, list):
        return ()
    return tuple(Test(str(d["param"]), d.get("pos"), str(d["test"])) for d in raw if isinstance(d, dict))


def _entry(raw: Mapping[str, object]) -> OpEntry:
    nargs = raw.get("nargs")
    alt = raw.get("alt")
    aten = raw.get("aten")
    return OpEntry(
        aten=tuple(str(a) for a in aten) if isinstance(aten, list) else (),
        via=str(raw.get("via", "")),
        nargs=frozenset(int(n) for n in nargs) if isinstance(nargs, list) else None,
        when=_tests(raw.get("when")),
        unless=_tests(raw.get("unless")),
        sure=bool(raw.get("sure", True)),
        note=str(raw.get("note", "")),
        alt=tuple(_entry(a) for a in alt if isinstance(a, dict)) if isinstance(alt, list) else (),
        tensor_receiver=raw.get("receiver") == "tensor",
    )


@dataclass(frozen=True)
class OpTables:
    key: str  # torch minor version the entry was generated for
    torch: str  # the exact version it was generated from
    spellings: Mapping[str, Mapping[str, OpEntry]]
    explicit_sync: frozenset[str]

    def lookup(self, category: Category, name: str) -> OpEntry | None:
        table = self.spellings.get(category, {})
        e = table.get(name)
        if e is not None or not name.startswith(_ALIASED):  # the walker asks this for every call it reaches
            return e
        return table.get(normalise(name))


_ALIASES = (("torch._VF.", "torch."), ("torch._C._VariableFunctions.", "torch."), ("torch._C._nn.", "torch.nn.functional."),
            ("torch._C._linalg.linalg_", "torch.linalg."), ("torch._C._special.special_", "torch.special."),
            ("torch._C._fft.fft_", "torch.fft."))


_ALIASED = ("torch.Tensor.", "torch._", "builtins.")


def normalise(name: str) -> str:
    """`torch.Tensor.x` and `torch._C.TensorBase.x` -> `Tensor.x`; `torch._VF.x` -> `torch.x`, `torch._C._nn.x`
    -> `torch.nn.functional.x`; `builtins.int` -> `int`."""
    for pre in ("torch.Tensor.", "torch._C.TensorBase.", "torch._C._TensorBase."):
        if name.startswith(pre):
            return "Tensor." + name[len(pre):]
    for pre, to in _ALIASES:  # the bindings torch's own Python code calls ops through
        if name.startswith(pre):
            return to + name[len(pre):]
    return name[len("builtins."):] if name.startswith("builtins.") else name


def _version_tuple(key: str) -> tuple[int, ...]:
    return tuple(int(p) for p in key.split(".") if p.isdigit())


def available() -> list[str]:
    """The torch versions the shipped table has entries for, oldest first."""
    return sorted(_raw()["versions"], key=_version_tuple)


@lru_cache(maxsize=1)
def _raw() -> dict[str, dict[str, dict[str, object]]]:
    doc = json.loads(_FILE.read_text(encoding="utf-8"))
    return {"versions": doc["versions"]}


@lru_cache(maxsize=8)
def tables(version: str | None = None) -> OpTables:
    """The entry for torch `version` (`2.13`, `2.13.0+cu128`): that minor version's, else the newest one older
    than it, else the oldest; without a version the newest."""
    keys = available()
    key = keys[-1]
    if version is not None:
        want = _version_tuple(".".join(version.split("+")[0].split(".")[:2]))
        older = [k for k in keys if _version_tuple(k) <= want]
        key = older[-1] if older else keys[0]
    raw = _raw()["versions"][key]
    sp = raw["spellings"]
    assert isinstance(sp, dict)
    spellings = {cat: {name: _entry(e) for name, e in entries.items()} for cat, entries in sp.items()}
    ex = raw.get("explicit_sync", [])
    return OpTables(key=key, torch=str(raw.get("torch", key)), spellings=spellings,
                    explicit_sync=frozenset(str(q) for q in ex) if isinstance(ex, list) else frozenset())


def _ask(category: Category, name: str, call: CallArgs | int | None) -> bool:
    e = tables().lookup(category, name)
    if e is None:
        return False
    if call is None:  # for some arguments
        return e.sure or any(a.sure for a in e.alt)
    return e.holds(CallArgs.count(call) if isinstance(call, int) else call)


def is_dynamic_shape(name: str, nargs: CallArgs | int | None = None) -> bool:
    """The call's output size is read from the data (so the host reads it). `nargs`: the number of positional
    arguments, or the whole call; None: for some arguments."""
    return _ask("dynamic_shape", name, nargs)


def is_host_sync(name: str, call: CallArgs | int | None = None) -> bool:
    """The call reads a device value on the host (item, nonzero, linalg error checks, ...)."""
    return _ask("host_sync", name, call)


def is_random(name: str, call: CallArgs | int | None = None) -> bool:
    """The call draws from a random generator (for the arguments given)."""
    return _ask("random", name, call)


def is_explicit_sync(name: str) -> bool:
    """`torch.cuda.synchronize`, `torch.cuda.Event.query`, ...: a wait on the device named as such."""
    return name in tables().explicit_sync


def names(category: Category) -> frozenset[str]:
    """Every spelling of a category, whatever the conditions."""
    return frozenset(tables().spellings.get(category, {}))
