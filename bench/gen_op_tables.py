"""Write server/denpex/source/ops/aten_tables.json: which Python spellings of PyTorch ops have data-dependent
output shapes, read device values on the host, or draw random numbers, generated from an installed torch.

    .venv/bin/python bench/gen_op_tables.py            # adds/replaces the installed torch's entry
    .venv/bin/python bench/gen_op_tables.py --check    # exit 1 when the committed entry differs

A CPU wheel is enough: nothing here runs on a device. Where the knowledge comes from, in order:

1. Operator tags (`torch.ops.aten.<op>.<overload>.tags`, from native_functions.yaml): `dynamic_output_shape`
   (the output size is read from the data), `data_dependent_output` (the value goes to the host),
   `nondeterministic_seeded` (draws from a generator).
2. Docstrings of the public functions: the notes "this function synchronizes that device with the CPU",
   "causes host-device synchronization", "synchronizes only when check_errors = True", "If given, it will avoid
   stream synchronization" (torch.linalg, nonzero, repeat_interleave, normal).
3. Probes: a short list of calls run on small CPU tensors under a TorchDispatchMode; the aten ops they reach
   decide. This covers composite spellings whose own schema has no tag (single-argument `torch.where` reaches
   `nonzero`; `torch.unique` reaches `_unique2`; `int(t)` reaches `_local_scalar_dense`) and conditions that a
   second probe shows (`F.dropout(x, training=False)` draws nothing). A probe that no longer reaches what it
   claims is an error: the generator stops rather than write a table it cannot back.
4. What none of these can see, listed below with the reason (`DOCUMENTED`).

A spelling maps to its aten op by name: `torch.x`, `Tensor.x`, `torch.nn.functional.x` -> `aten::x`,
`torch.special.x` -> `aten::special_x`, `torch.linalg.x` -> `aten::linalg_x`, `torch.fft.x` -> `aten::fft_x`
(in-place `x_` forms are ops of their own and come with their own tags). Where only some arities of a spelling
reach a tagged overload, the entry says which (`nargs`, positional arguments after the receiver).
"""

from __future__ import annotations

import argparse
import ast
import inspect
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "server" / "denpex" / "source" / "ops" / "aten_tables.json"
CATEGORIES = ("dynamic_shape", "host_sync", "random")
NAMESPACES = (("torch", ""), ("torch.special", "special_"), ("torch.linalg", "linalg_"), ("torch.fft", "fft_"),
              ("torch.nn.functional", ""))
# aten ops whose kernels read a device value on the host although no tag says so (seen in probes' traces)
SYNC_OPS = {"_linalg_check_errors": "reads the LAPACK info tensor on the host to raise (linalg without _ex)"}
# host reads that dispatch no aten op at all (the memory is read directly), so neither tags nor probes see them
DOCUMENTED: dict[str, dict[str, dict[str, Any]]] = {
    "host_sync": {
        "Tensor.tolist": {"note": "reads the tensor's memory on the host (a device tensor is copied first)"},
        "Tensor.numpy": {"note": "a host view of the memory; a device tensor raises"},
    },
}
# captures run on a GPU by bench/check_op_tables_gpu.py: a bare spelling whose capture failed there and that
# nothing above lists is a host sync as measured (torch.linalg.svd copies to the host; histc reads its range)
MEASURED = ROOT / "bench" / "results_op_tables_h200.json"
# torch.cuda's explicit waits: Python API, no aten op; checked to exist in the installed torch
EXPLICIT_SYNC = ("torch.cuda.synchronize", "torch.accelerator.synchronize", "torch.cuda.Stream.synchronize",
                 "torch.cuda.Stream.query", "torch.cuda.Event.synchronize", "torch.cuda.Event.query")


def _ns(torch: Any, dotted: str) -> Any:
    obj = torch
    for part in dotted.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


class Aten:
    """The aten overloads of the installed torch, by op name, with their tags and positional arities."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.by_name: dict[str, list[tuple[str, set[str], list[Any]]]] = {}
        for s in torch._C._jit_get_all_schemas():
            if not s.name.startswith("aten::"):
                continue
            name = s.name[len("aten::"):]
            packet = getattr(torch.ops.aten, name, None)
            op = getattr(packet, s.overload_name or "default", None) if packet is not None else None
            if op is None:
                continue
            tags = {t.name for t in op.tags}
            self.by_name.setdefault(name, []).append((s.overload_name or "default", tags, list(s.arguments)))
        self.sync_names = set(SYNC_OPS)
        for name, ovs in self.by_name.items():
            if any("data_dependent_output" in t or "dynamic_output_shape" in t for _, t, _ in ovs):
                self.sync_names.add(name)

    def category_of(self, name: str, overload: str) -> set[str]:
        out: set[str] = set()
        for ov, tags, _ in self.by_name.get(name, []):
            if ov != overload:
                continue
            if "dynamic_output_shape" in tags:
                out |= {"dynamic_shape", "host_sync"}
            if "data_dependent_output" in tags or name in SYNC_OPS:
                out.add("host_sync")
            if "nondeterministic_seeded" in tags:
                out.add("random")
        return out

    def tagged(self, category: str) -> list[str]:
        return sorted(f"{n}.{ov}" for n, ovs in self.by_name.items() for ov, _, _ in ovs
                      if category in self.category_of(n, ov))


def _arity(args: list[Any], method: bool) -> tuple[int, int] | None:
    """(required, most) positional arguments of an overload, after the receiver for a method; None where a
    method has no `self`."""
    pos = [a for a in args if not a.kwarg_only]
    if method:
        if not any(a.name == "self" for a in pos):
            return None
        pos = [a for a in pos if a.name != "self"]
    required = sum(1 for a in pos if not a.has_default_value())
    return required, len(pos)


def _schema_conditions(aten: Aten, name: str, category: str, method: bool) -> dict[str, Any] | None:
    """The entry for a spelling of `aten::name` in `category` from its overloads' tags, or None when none is
    tagged. Out overloads (keyword-only `out=`) follow their functional twin and are left out of the arity."""
    arities: dict[int, list[bool]] = {}
    hit_ovs: list[str] = []
    for ov, tags, args in aten.by_name.get(name, []):
        if "out" in tags:
            continue
        ar = _arity(args, method)
        if ar is None:
            continue
        hit = category in aten.category_of(name, ov)
        if hit:
            hit_ovs.append(f"{name}.{ov}")
        for n in range(ar[0], ar[1] + 1):
            arities.setdefault(n, []).append(hit)
    if not hit_ovs:
        return None
    entry: dict[str, Any] = {"aten": sorted(hit_ovs), "via": "tags"}
    if not all(all(v) for v in arities.values()):
        entry["nargs"] = sorted(n for n, v in arities.items() if any(v))
    if category == "random":
        entry.update(_seeded_conditions(aten, name, method))
    if category == "dynamic_shape" or category == "host_sync":
        entry.update(_shape_given(aten, name, method))
    return entry


def _seeded_conditions(aten: Aten, name: str, method: bool) -> dict[str, Any]:
    """A seeded op with a dropout probability defaulting to 0 draws only when it is given; one with a `train`
    flag only when it is not False (read from the schema's argument names and defaults)."""
    for _, tags, args in aten.by_name.get(name, []):
        if "nondeterministic_seeded" not in tags:
            continue
        pos = [a for a in args if not a.kwarg_only and not (method and a.name == "self")]
        for i, a in enumerate(pos):
            if a.name in ("dropout_p",) and a.has_default_value() and a.default_value == 0.0:
                return {"unless": [{"param": a.name, "pos": i, "test": "absent_or_zero"}]}
            if a.name in ("train", "training"):
                off_by_default = a.has_default_value() and a.default_value is False
                return {"unless": [{"param": a.name, "pos": i, "test": "not_true" if off_by_default else "false"}]}
    return {}


def _shape_given(aten: Aten, name: str, method: bool) -> dict[str, Any]:
    """A dynamic-shape op with an int size parameter defaulting to -1 (`one_hot(num_classes=-1)`) or None
    (`repeat_interleave(output_size=None)`) computes the size from the data only when that size is not given."""
    for _, tags, args in aten.by_name.get(name, []):
        if "dynamic_output_shape" not in tags:
            continue
        pos = [a for a in args if not (method and a.name == "self")]
        for i, a in enumerate(pos):
            t = str(a.type)
            if ("int" in t.lower()) and a.has_default_value() and a.default_value in (-1, None) and (
                    a.name.endswith("size") or a.name.startswith("num_")):
                return {"unless": [{"param": a.name, "pos": None if a.kwarg_only else i, "test": "given"}]}
    return {}


_SYNC_ALWAYS = re.compile(r"this function (?:synchronizes (?:that|its) device with the CPU|causes host-device "
                          r"synchroni[sz]ation)|causes host-device synchroni[sz]ation", re.I)
_SYNC_WHEN_TRUE = re.compile(r"synchronizes only when :attr:`(\w+)`\\?\s*`?=\s*True", re.I)
_SYNC_WHEN_TENSOR = re.compile(r"When :attr:`(\w+)` is a CUDA tensor, this function synchronizes", re.I)
_SYNC_UNLESS_GIVEN = re.compile(r"(\w+) \([^)]*\):[^:]*?If given, it will avoid stream synchroni[sz]ation", re.S)
_SYNC_IF = re.compile(r"synchronizes that device with the CPU if :attr:`(\w+)`", re.I)


def _doc_sync(obj: Any, method: bool) -> dict[str, Any] | None:
    """The host-sync entry a docstring states, with its condition, or None."""
    doc = getattr(obj, "__doc__", None)
    if not isinstance(doc, str) or "synchroni" not in doc:
        return None
    # a sentence about the backward pass (linalg.svd's complex gradients) says nothing about the call itself
    flat = " ".join(t for t in re.split(r"(?<=\.)\s+", " ".join(doc.split())) if "gradient" not in t)
    params = _param_positions(obj, method)
    if m := _SYNC_WHEN_TRUE.search(flat):
        return {"via": "docstring", "when": [{"param": m[1], "pos": params.get(m[1]), "test": "true"}]}
    if m := _SYNC_WHEN_TENSOR.search(flat):
        return {"via": "docstring", "when": [{"param": m[1], "pos": params.get(m[1]), "test": "tensor"}]}
    if m := _SYNC_UNLESS_GIVEN.search(doc):
        return {"via": "docstring", "unless": [{"param": m[1], "pos": params.get(m[1]), "test": "given"}]}
    if m := _SYNC_IF.search(flat):
        return {"via": "docstring", "sure": False, "note": f"only for some values of {m[1]}"}
    if _SYNC_ALWAYS.search(flat):
        return {"via": "docstring"}
    return None


def _param_positions(obj: Any, method: bool) -> dict[str, int | None]:
    """Positions of a function's parameters, from its signature or its docstring's first line (builtins)."""
    try:
        sig = inspect.signature(obj)
        out: dict[str, int | None] = {}
        i = 0
        for p in sig.parameters.values():
            if method and i == 0 and p.name == "self":
                continue
            pos_ok = p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            out[p.name] = i if pos_ok else None
            i += 1 if pos_ok else 0
        return out
    except (TypeError, ValueError):
        pass
    first = (getattr(obj, "__doc__", "") or "").strip().splitlines()[:1]
    m = re.match(r"[\w.]+\((.*)\)", first[0]) if first else None
    out = {}
    if m:
        i, kw_only = 0, False
        for part in m[1].split(","):
            part = part.strip()
            if part == "*":
                kw_only = True
                continue
            pname = re.split(r"[=:\s]", part, maxsplit=1)[0]
            if pname and pname != "self":
                out[pname] = None if kw_only else i
                i += 0 if kw_only else 1
    return out


def _spellings(torch: Any, aten: Aten) -> dict[str, dict[str, dict[str, Any]]]:
    tables: dict[str, dict[str, dict[str, Any]]] = {c: {} for c in CATEGORIES}
    for dotted, prefix in NAMESPACES:
        ns = _ns(torch, dotted)
        for attr in sorted(dir(ns)):
            if attr.startswith("__"):
                continue
            obj = getattr(ns, attr, None)
            if not callable(obj) or inspect.isclass(obj):
                continue
            spelling = f"{dotted}.{attr}"
            builtin = inspect.isbuiltin(obj)
            if (prefix + attr) in aten.by_name:
                for cat in CATEGORIES:
                    e = _schema_conditions(aten, prefix + attr, cat, method=False)
                    if e is None:
                        continue
                    if not builtin:
                        e = _python_wrapper(obj, e, cat)
                    tables[cat][spelling] = e
            d = _doc_sync(obj, method=False)
            if d is not None:
                tables["host_sync"].setdefault(spelling, d)
    plain: set[str] = set()
    for t in (dict, list, str, set, tuple, int, float, bytes):
        plain |= set(dir(t))
    for attr in sorted(dir(torch.Tensor)):
        if attr.startswith("__") or attr not in aten.by_name:
            continue
        for cat in CATEGORIES:
            e = _schema_conditions(aten, attr, cat, method=True)
            if e is not None:
                if attr in plain:  # `xs.index(v)` on a list: only on a value known to be a tensor
                    e["receiver"] = "tensor"
                tables[cat][f"Tensor.{attr}"] = e
    return tables


def _python_wrapper(obj: Any, entry: dict[str, Any], category: str) -> dict[str, Any]:
    """A Python function of the aten op's name: the schema's arity does not apply; its own `training`
    parameter (F.dropout, F.rrelu) does, with its default."""
    out = {k: v for k, v in entry.items() if k not in ("nargs", "unless")}
    out["via"] = "tags+python"
    if category == "random":
        pos = _param_positions(obj, method=False)
        try:
            params = inspect.signature(obj).parameters
        except (TypeError, ValueError):
            return out
        tr = params.get("training")
        if tr is not None:
            test = "false" if tr.default is True else "not_true"
            out["unless"] = [{"param": "training", "pos": pos.get("training"), "test": test}]
    return out


def _probes(torch: Any) -> list[tuple[str, str, dict[str, Any], Callable[[], object], Callable[[], object] | None]]:
    """(category, spelling, condition, call that must reach a tagged op, call that must not or None)."""
    F = torch.nn.functional
    b = torch.tensor([True, False, True])
    x = torch.tensor([1.0, 2.0, 3.0])
    s = torch.tensor(1.0)
    r = torch.tensor([1, 0, 2])
    return [
        ("dynamic_shape", "torch.where", {"nargs": [1]}, lambda: torch.where(b), lambda: torch.where(b, x, x)),
        ("dynamic_shape", "Tensor.nonzero", {}, lambda: x.nonzero(as_tuple=True), None),
        ("dynamic_shape", "torch.unique", {}, lambda: torch.unique(x), None),
        ("dynamic_shape", "Tensor.unique", {}, lambda: x.unique(), None),
        ("dynamic_shape", "torch.unique_consecutive", {}, lambda: torch.unique_consecutive(x), None),
        ("dynamic_shape", "Tensor.unique_consecutive", {}, lambda: x.unique_consecutive(), None),
        ("dynamic_shape", "Tensor.repeat_interleave",
         {"when": [{"param": "repeats", "pos": 0, "test": "tensor"}],
          "unless": [{"param": "output_size", "pos": None, "test": "given"}]},
         lambda: x.repeat_interleave(r), lambda: x.repeat_interleave(2)),
        ("dynamic_shape", "torch.repeat_interleave",
         {"when": [{"param": "repeats", "pos": 1, "test": "tensor"}],
          "unless": [{"param": "output_size", "pos": None, "test": "given"}]},
         lambda: torch.repeat_interleave(x, r), lambda: torch.repeat_interleave(x, 2)),
        ("host_sync", "int", {"when": [{"param": "x", "pos": 0, "test": "tensor"}]}, lambda: int(s), None),
        ("host_sync", "float", {"when": [{"param": "x", "pos": 0, "test": "tensor"}]}, lambda: float(s), None),
        ("host_sync", "bool", {"when": [{"param": "x", "pos": 0, "test": "tensor"}]}, lambda: bool(s), None),
        ("host_sync", "complex", {"when": [{"param": "x", "pos": 0, "test": "tensor"}]}, lambda: complex(s), None),
        ("host_sync", "Tensor.is_nonzero", {}, lambda: s.is_nonzero(), None),
        ("host_sync", "torch.is_nonzero", {}, lambda: torch.is_nonzero(s), None),
        ("random", "torch.nn.functional.dropout", {"unless": [{"param": "training", "pos": 2, "test": "false"}]},
         lambda: F.dropout(x), lambda: F.dropout(x, training=False)),
    ]


def _run_probes(torch: Any, aten: Aten, tables: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    from torch.utils._python_dispatch import TorchDispatchMode

    class Recorder(TorchDispatchMode):  # type: ignore[misc,no-untyped-call]
        def __init__(self) -> None:
            super().__init__()  # type: ignore[no-untyped-call]
            self.ops: list[tuple[str, str]] = []

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            packet, ov = func._schema.name.split("::", 1)[1], func._overloadname
            self.ops.append((packet, ov))
            return func(*args, **(kwargs or {}))

    def reached(call: Callable[[], object], cat: str) -> list[str]:
        rec = Recorder()
        with rec:
            call()
        return sorted({f"{n}.{ov}" for n, ov in rec.ops if cat in aten.category_of(n, ov)})

    errors: list[str] = []
    for cat, spelling, cond, yes, no in _probes(torch):
        hit = reached(yes, cat)
        if not hit:
            errors.append(f"probe {spelling} reaches no {cat} op")
            continue
        if no is not None and reached(no, cat):
            errors.append(f"probe {spelling}: the call outside the condition reaches {cat} ops too")
            continue
        entry: dict[str, Any] = {"aten": hit, "via": "probe", **cond}
        old = tables[cat].get(spelling)
        if old is not None and any(k in old for k in ("nargs", "when", "unless")):
            entry["alt"] = [old]  # the schema's case stays (torch.repeat_interleave(repeats) with one argument)
        tables[cat][spelling] = entry  # a probe sees what the call does; it outranks a name match
    return errors


def generate(torch: Any) -> dict[str, Any]:
    aten = Aten(torch)
    tables = _spellings(torch, aten)
    errors = _run_probes(torch, aten, tables)
    if errors:
        raise SystemExit("gen_op_tables: " + "; ".join(errors))
    for spelling, e in tables["dynamic_shape"].items():
        tables["host_sync"][spelling] = e  # the output size is read on the host, under the same condition
    for cat, entries in DOCUMENTED.items():
        for spelling, e in entries.items():
            tables[cat].setdefault(spelling, {"via": "documented", **e})
    if MEASURED.exists():
        run = json.loads(MEASURED.read_text(encoding="utf-8"))
        for row in run["rows"]:
            name = row["case"]
            known = any(name in tables[c] for c in CATEGORIES) or name in EXPLICIT_SYNC
            if row["got"] == "fail" and re.fullmatch(r"[\w.]+", name) and not known and _exists(torch, name):
                call = ast.parse(row["call"], mode="eval").body
                # only the arity measured: histc(x) reads its range from the data, histc(x, bins, min, max) not
                nargs = [len(call.args)] if isinstance(call, ast.Call) else None
                tables["host_sync"][name] = {"via": "measured", "nargs": nargs,
                                             "note": f"capture of `{row['call']}` failed on {run['gpu']}, torch "
                                                     f"{run['torch']}: {row['error'][:80]}"}
    explicit = [q for q in EXPLICIT_SYNC if _exists(torch, q)]
    return {
        "torch": torch.__version__,
        "aten": {cat: aten.tagged(cat) for cat in CATEGORIES},
        "sync_ops": SYNC_OPS,
        "spellings": {cat: dict(sorted(tables[cat].items())) for cat in CATEGORIES},
        "explicit_sync": explicit,
    }


def _exists(torch: Any, dotted: str) -> bool:
    obj: Any = torch
    for part in dotted.split(".")[1:]:
        obj = getattr(obj, part, None)
        if obj is None:
            return False
    return True


def version_key(version: str) -> str:
    """`2.13.0+cpu` -> `2.13`: op schemas change with minor releases, not with builds."""
    return ".".join(version.split("+")[0].split(".")[:2])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--check", action="store_true", help="compare with the committed entry, write nothing")
    a = ap.parse_args(argv)
    import warnings

    warnings.filterwarnings("ignore")
    import torch

    entry = generate(torch)
    doc: dict[str, Any] = json.loads(a.out.read_text(encoding="utf-8")) if a.out.exists() else {}
    doc.setdefault("format", 1)
    doc["generated_by"] = "bench/gen_op_tables.py"
    versions = doc.setdefault("versions", {})
    key = version_key(torch.__version__)
    if a.check:
        same = versions.get(key) == entry
        print(f"{key}: {'same' if same else 'differs'}")
        return 0 if same else 1
    versions[key] = entry
    doc["versions"] = dict(sorted(versions.items()))
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    counts = ", ".join(f"{c} {len(entry['spellings'][c])} spellings / {len(entry['aten'][c])} overloads"
                       for c in CATEGORIES)
    print(f"wrote {a.out} [{key}] ({torch.__version__}): {counts}; explicit_sync {len(entry['explicit_sync'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
