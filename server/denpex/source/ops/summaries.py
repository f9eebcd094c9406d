"""What torch's own Python functions do on the host, for the arguments given: `torch_summaries.json`, generated
from the installed torch's source by `bench/gen_torch_summaries.py` with Denpex's parser and index, keyed by torch
minor version. No torch is needed to read it.

A summary lists a function's hazards (a host read, a data-dependent shape, a random draw, an explicit sync),
each with the conditions it sits under in the function's own terms (`error_if_nonfinite`, `not (capturable)`,
`self._validate_args`). `judge(name, positional, keywords)` puts a call's arguments (or the defaults) into those
conditions: a hazard whose conditions all become true is sure, one with a condition left undecided may happen,
one with a false condition is gone.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

_FILE = Path(__file__).with_name("torch_summaries.json")
# what holds in an eagerly run program that a CUDA graph captures: no TorchScript, no tracing, no compiling
# (the conditions torch's code tests to pick its compiled paths)
EAGER = {"torch.jit.is_scripting()": "False", "torch.jit.is_tracing()": "False",
         "torch.compiler.is_compiling()": "False", "torch._dynamo.is_compiling()": "False",
         "torch._utils.is_compiling()": "False", "is_compiling()": "False",
         "torch._C._get_tracing_state()": "None", "__debug__": "True"}
_WORD = re.compile(r"\b[A-Za-z_]\w*\b")


def substitute(cond: str, binding: Mapping[str, str]) -> str:
    """`cond` with each whole name of `binding` replaced by its expression (not attributes of the same name)."""
    def rep(m: re.Match[str]) -> str:
        if m.start() > 0 and cond[m.start() - 1] == ".":
            return m[0]
        v = binding.get(m[0])
        if v is None:
            return m[0]
        return v if re.fullmatch(r"[\w.]+", v) else f"({v})"
    out = _WORD.sub(rep, cond)
    for k, v in EAGER.items():
        out = out.replace(k, v)
    return out


def decide(conds: Sequence[str]) -> list[str] | None:
    """The clauses left once constants are decided: None when one is false; true ones dropped."""
    out: list[str] = []
    for c in conds:
        e = fold(substitute(c, {}))
        if isinstance(e, ast.Constant):
            if not e.value:
                return None
            continue
        text = ast.unparse(e) if not (isinstance(e, ast.Name) and e.id == "_unparsed") else c
        if text not in out:
            out.append(text)
    return out


def const(text: str) -> bool | None:
    """The truth of a condition made only of constants, `not`, `and`, `or`, `is`, `==`, `a if c else b`; else
    None."""
    e = fold(text)
    return bool(e.value) if isinstance(e, ast.Constant) else None


def fold(text: str) -> ast.expr:
    """The condition with its constant parts evaluated (`(False if False is not None else x)` -> `False`)."""
    try:
        return _fold(ast.parse(text, mode="eval").body)
    except SyntaxError:
        return ast.Name(id="_unparsed")


def _fold(e: ast.expr) -> ast.expr:
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
        v = _fold(e.operand)
        return ast.Constant(not v.value) if isinstance(v, ast.Constant) else ast.UnaryOp(ast.Not(), v)
    if isinstance(e, ast.BoolOp):
        vals = [_fold(v) for v in e.values]
        stop = isinstance(e.op, ast.Or)  # the value that decides: True for or, False for and
        if any(isinstance(v, ast.Constant) and bool(v.value) is stop for v in vals):
            return ast.Constant(stop)
        rest = [v for v in vals if not isinstance(v, ast.Constant)]
        if not rest:
            return ast.Constant(not stop)
        return rest[0] if len(rest) == 1 else ast.BoolOp(e.op, rest)
    if isinstance(e, ast.IfExp):
        t = _fold(e.test)
        if isinstance(t, ast.Constant):
            return _fold(e.body if t.value else e.orelse)
        return ast.IfExp(t, _fold(e.body), _fold(e.orelse))
    if isinstance(e, ast.Compare) and len(e.ops) == 1:
        a, b, op = _fold(e.left), _fold(e.comparators[0]), e.ops[0]
        if isinstance(a, ast.Constant) and isinstance(b, ast.Constant):
            if isinstance(op, ast.Is | ast.Eq):
                return ast.Constant(a.value == b.value)
            if isinstance(op, ast.IsNot | ast.NotEq):
                return ast.Constant(a.value != b.value)
        return ast.Compare(a, [op], [b])
    return e


@dataclass(frozen=True)
class SummaryHazard:
    kind: str  # host_sync | dynamic_shape | random | explicit_sync
    what: str
    at: str  # torch-relative path:line
    when: tuple[str, ...]
    via: tuple[str, ...] = ()


@dataclass(frozen=True)
class Judged:
    hazard: SummaryHazard
    sure: bool  # every condition holds for these arguments
    left: tuple[str, ...]  # the conditions left undecided (in the caller's terms)


@dataclass(frozen=True)
class FunctionSummary:
    name: str  # module.Class.func in torch
    params: tuple[str, ...]
    defaults: Mapping[str, str]
    hazards: tuple[SummaryHazard, ...]
    attrs: Mapping[str, str]  # class-level defaults of the `self.X` its conditions read

    def judge(self, positional: Sequence[str] = (), keywords: Mapping[str, str] | None = None) -> list[Judged]:
        """The hazards that may happen for a call with these argument texts (sure ones first)."""
        binding = dict(self.defaults)
        for p, a in zip(self.params, positional, strict=False):
            binding[p] = a
        binding.update(keywords or {})
        for attr, default in self.attrs.items():
            binding.setdefault(f"self.{attr}", default)
        out: list[Judged] = []
        for h in self.hazards:
            conds = [_attrs(substitute(c, binding), binding) for c in h.when]
            left = decide(conds)
            if left is not None:
                out.append(Judged(h, not left, tuple(left)))
        return sorted(out, key=lambda j: (not j.sure, j.hazard.at))


def _attrs(cond: str, binding: Mapping[str, str]) -> str:
    for k, v in binding.items():
        if k.startswith("self.") and k in cond:
            cond = re.sub(re.escape(k) + r"\b", v, cond)
    return cond


@lru_cache(maxsize=1)
def _doc() -> dict[str, dict[str, object]]:
    versions: dict[str, dict[str, object]] = json.loads(_FILE.read_text(encoding="utf-8"))["versions"]
    return versions


def _key(version: str | None) -> str:
    keys = sorted(_doc(), key=lambda k: tuple(int(p) for p in k.split(".") if p.isdigit()))
    if version is None:
        return keys[-1]
    want = tuple(int(p) for p in version.split("+")[0].split(".")[:2] if p.isdigit())
    older = [k for k in keys if tuple(int(p) for p in k.split(".")) <= want]
    return older[-1] if older else keys[0]


@lru_cache(maxsize=8)
def _index(version: str | None) -> dict[str, FunctionSummary]:
    raw = _doc()[_key(version)]["functions"]
    assert isinstance(raw, dict)
    out: dict[str, FunctionSummary] = {}
    for name, f in raw.items():
        s = FunctionSummary(
            name=name, params=tuple(f["params"]), defaults=dict(f["defaults"]),
            hazards=tuple(SummaryHazard(h["kind"], h["what"], h["at"], tuple(h["when"]), tuple(h.get("via", ())))
                          for h in f["hazards"]),
            attrs=dict(f.get("attrs", {})))
        out[name] = s
        for alias in f.get("aliases", []):
            out.setdefault(alias, s)
    return out


def summary(name: str, version: str | None = None) -> FunctionSummary | None:
    """The summary of `torch.nn.utils.clip_grad_norm_`, `torch.distributions.Normal.__init__`, ... (by its
    module path or a public alias), for torch `version` (default: the newest in the table)."""
    return _index(version).get(name)


def judge(name: str, positional: Sequence[str] = (), keywords: Mapping[str, str] | None = None,
          version: str | None = None) -> list[Judged]:
    s = summary(name, version)
    return s.judge(positional, keywords) if s is not None else []
