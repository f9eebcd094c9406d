"""Follow calls out of a capture region into the functions they run.

Resolves `f(...)` (closures, module functions, imports from workspace files), `self.m(...)` (methods, base
classes), `self.model(...)` / `model(...)` (an instance of a user class: its `forward` or `__call__`),
`obj.m(...)` for user-class instances, bound methods and callables passed as arguments (parameter bindings
flow into the callee; a parameter with no binding is looked up at the call sites of its function).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from weakref import WeakKeyDictionary

from tree_sitter import Node

from denpex.source.resolve import callsites
from denpex.source.resolve.args import accepts, bind
from denpex.source.resolve.index import ClassInfo, FileIndex, FuncInfo, decorator_target, positional
from denpex.source.resolve.value_types import ClassRef, FilesWith, Func, Inst, Lib, Seq, Value
from denpex.source.resolve.values import GUESS_CALLERS, GUESS_PARTIAL, NO_OPEN, Values
from denpex.source.syntax.parse import run_query, strip_parens


@dataclass(frozen=True)
class Binding:
    ix: FileIndex
    node: Node
    env: Env


@dataclass(frozen=True)
class Env:
    """Parameter bindings of one activation: param name -> the caller's argument expression."""

    params: tuple[tuple[str, Binding], ...] = ()
    # the resolver's values, for what the bindings do not say (a parameter of another function, typed from its
    # call sites in the workspace: param_kinds.py)
    values: Values | None = field(default=None, compare=False, repr=False)

    def get(self, name: str) -> Binding | None:
        for k, v in self.params:
            if k == name:
                return v
        return None


EMPTY_ENV = Env()
_HOOK_METHODS = ("register_forward_hook", "register_forward_pre_hook")
_FUNCTION = frozenset({"function_definition"})


@dataclass
class Target:
    ix: FileIndex
    func: FuncInfo
    env: Env
    label: str
    pre: Env = EMPTY_ENV  # parameters bound before the call: `self` of an instance, a functools.partial's arguments
    skip: int = 0  # positional parameters the pre-bound arguments fill (a partial's)
    guess: str | None = None  # reached through a parameter typed at its call sites: which expression
    role: str = ""  # "hook" (a forward hook of the instance called), "element" (of an nn.Sequential): run besides;
    # "kernel": a Triton kernel launched (`kernel[grid](...)`): GPU code, resolved but not walked


# a class statement's name and base list (a subclass search reads headers before it parses a class)
_CLASS_HEADER = re.compile(rb"^[ \t]*class[ \t]+(\w+)[ \t]*\(([^)]*)\)", re.M)
_HEADERS: WeakKeyDictionary[FileIndex, tuple[int, dict[str, list[str]]]] = WeakKeyDictionary()


def _class_headers(f: FileIndex) -> dict[str, list[str]]:
    """Each word of a base list of `f`'s class statements -> the classes whose bases spell it (read once per text:
    calling a mixin's `self` asks for every file that imports the mixin)."""
    got = _HEADERS.get(f)
    if got is None or got[0] != f.src.epoch:
        table: dict[str, list[str]] = {}
        for m in _CLASS_HEADER.finditer(f.src.data):
            for w in set(re.findall(rb"\w+", m.group(2))):
                table.setdefault(w.decode(), []).append(m.group(1).decode())
        got = _HEADERS[f] = (f.src.epoch, table)
    return got[1]

ModuleLookup = Callable[[str], "FileIndex | None"]


# decorators whose generated __init__ calls __post_init__ (pydantic's dataclasses do as the standard ones)
_DATACLASS_DECORATORS = frozenset({"dataclasses.dataclass", "dataclass", "pydantic.dataclasses.dataclass"})


def _first_method(mro: list[tuple[FileIndex, ClassInfo]], name: str) -> tuple[FileIndex, ClassInfo, FuncInfo] | None:
    for cix, cls in mro:
        m = cls.methods.get(name)
        if m is not None:
            return cix, cls, m
    return None


def _is_dataclass(ix: FileIndex, cls: ClassInfo) -> bool:
    """`cls` is decorated `@dataclass` / `@dataclasses.dataclass(...)` without `init=False`: its `__init__` is the
    generated one, which ends by calling `__post_init__`."""
    p = cls.node.parent
    if p is None or p.type != "decorated_definition":
        return False
    for d in p.named_children:
        if d.type != "decorator":
            continue
        text = "".join(ix.text(d).lstrip("@").split())
        name = decorator_target(ix, d) or text.split("(", 1)[0]
        if name in _DATACLASS_DECORATORS and "init=False" not in text:
            return True
    return False


def _triton_kernel(ix: FileIndex, fn: FuncInfo) -> bool:
    """`fn` is decorated `@triton.jit`, `@triton.autotune(...)` or `@triton.heuristics(...)` (through imports)."""
    return any((decorator_target(ix, d) or "").startswith("triton.") for d in fn.decorators)


def _fitting(ix: FileIndex, call: Node, targets: list[Target]) -> list[Target]:
    """The targets of a call less the alternatives it cannot run: where the callee is one of several functions (a
    factory's branches return different classes), one whose signature cannot take the call's arguments would raise
    TypeError, so the call is not of it. Hooks and a Sequential's elements run besides the callee and are kept; a
    partial's pre-bound keywords leave the signature open; when no alternative or every one fits, all are kept."""
    alts = [t for t in targets if not t.role]
    if len(alts) < 2:
        return targets
    unfit = {id(t) for t in alts if not any(n != "self" for n, _b in t.pre.params)
             and not accepts(ix, call, t.func, t.skip)}
    if not unfit or len(unfit) == len(alts):
        return targets
    return [t for t in targets if id(t) not in unfit]


@dataclass
class Resolver:
    lookup_module: ModuleLookup
    # (path, name) -> another file of the workspace may import `name` from `path` (and use it there)
    imported_elsewhere: Callable[[str, str], bool] | None = None
    files_with: FilesWith | None = None  # the workspace files that may call a function of a file (call sites)
    _open: dict[tuple[int, int, str], int] = field(default_factory=dict)  # parameters under way -> stack position
    _low: int = NO_OPEN  # the lowest of them the answer under way read (see Values._low)
    _hooks_cache: dict[tuple[str, int], list[tuple[Node, Node]]] = field(default_factory=dict)
    values: Values = field(init=False)

    def __post_init__(self) -> None:
        self.values = Values(self.lookup_module, self.files_with)

    def busy(self) -> bool:
        """A parameter's callables are under way (see Values.busy)."""
        return bool(self._open)

    # ---- entry points ------------------------------------------------------------------------------------
    def resolve_call(self, ix: FileIndex, call: Node, env: Env) -> list[Target]:
        func = call.child_by_field_name("function")
        if func is None:
            return []
        targets = _fitting(ix, call, self.resolve_callable(ix, func, env, depth=0) or self._constructors(ix, func, env))
        out: list[Target] = []
        for t in targets:
            # a dataclass's __post_init__ gets none of the call's arguments (its generated __init__ takes them)
            bound = EMPTY_ENV if t.role == "post_init" else self._bind(ix, call, t.func, env, drop_self=True,
                                                                        skip=t.skip)
            out.append(Target(t.ix, t.func, Env(t.pre.params + bound.params, self.values), t.label, guess=t.guess,
                              role="kernel" if t.role == "kernel" else ""))
        return out

    def resolve_callable(self, ix: FileIndex, expr: Node, env: Env, depth: int = 0) -> list[Target]:
        """Functions an expression that is *called* (or passed to be called) refers to."""
        if depth > 4:
            return []
        expr = strip_parens(expr)
        found: list[Target] = []
        if expr.type == "identifier":
            found = self._resolve_name(ix, expr, env, depth)
        elif expr.type == "attribute":
            found = self._resolve_attribute(ix, expr, env, depth)
        elif expr.type == "call":
            f = expr.child_by_field_name("function")
            if f is not None and (ix.qualname(f) or "").endswith("partial"):
                pos = positional(expr)
                if pos:
                    found = self.resolve_callable(ix, pos[0], env, depth + 1)
        elif expr.type == "lambda":
            return [Target(ix, ix.lambda_info(expr), EMPTY_ENV, "<lambda>")]
        elif expr.type == "subscript":
            kernel = expr.child_by_field_name("value")
            if kernel is not None and strip_parens(kernel).type in ("identifier", "attribute"):
                found = [replace(t, role="kernel") for t in self.resolve_callable(ix, kernel, env, depth + 1)
                         if _triton_kernel(t.ix, t.func)]
        # an unbound parameter: the calls of its function in this file gave `found`; those in other files may pass
        # others (DeepSpeed's graph_process(False, func, ...): local defs here, a bound method in bf16_optimizer.py)
        param = expr.type == "identifier" and env.get(ix.text(expr)) is None and ix.lookup(ix.text(expr), expr)[2]
        if (found and not param) or expr.type not in ("identifier", "attribute", "subscript", "call"):
            return found
        self.values.guessed = 0
        vals = self.values_of(ix, expr, env)
        targets = self.targets_of(vals, ix.text(expr))
        # inside a call made under capture (bindings present), a parameter typed from all its callers' arguments
        # need not be what this call passed: a may-be edge. At the capture's own level every caller runs it. A
        # value known for only some of the callers or of a factory's returns is a may-be edge at every level.
        g = self.values.guessed
        if (g & GUESS_CALLERS and env.params) or g & GUESS_PARTIAL:
            text = " ".join(ix.text(expr).split())[:60]
            targets = [replace(t, guess=text) for t in targets]
        if found:
            seen = {(id(t.ix), t.func.node.id) for t in found}
            return found + [t for t in targets if (id(t.ix), t.func.node.id) not in seen]
        return targets

    # ---- through values (values.py): instances, containers, factories, parameters from call sites -------
    def values_of(self, ix: FileIndex, expr: Node, env: Env) -> list[Value]:
        """The values of `expr` in an activation whose parameters `env` binds."""
        expr = strip_parens(expr)
        if expr.type == "identifier":
            bound = env.get(ix.text(expr))
            if bound is not None:
                return self.values_of(bound.ix, bound.node, bound.env)
        elif expr.type == "attribute":
            obj = expr.child_by_field_name("object")
            attr = expr.child_by_field_name("attribute")
            if obj is not None and attr is not None and env.params:
                return self.values.attribute(ix, self.values_of(ix, obj, env), ix.text(attr), 0, obj)
        return self.values.of(ix, expr)

    def targets_of(self, vals: list[Value], label: str) -> list[Target]:
        """The functions calling each value runs: a function; an instance's `forward` (nn.Module) or
        `__call__`, and the forward hooks registered on it; each element of an nn.Sequential in turn."""
        out: dict[tuple[int, int], Target] = {}
        for v in vals:
            if isinstance(v, Func):
                pre, skip = self._partial_args(v)
                t = Target(v.ix, v.func, EMPTY_ENV, label if v.func.name in label else f"{label} -> {v.func.name}",
                           pre, skip)
                out.setdefault((id(v.ix), v.func.node.id), t)
            elif isinstance(v, Inst):
                for t in self.instance_call(v, label):
                    out.setdefault((id(t.ix), t.func.node.id), t)
            elif isinstance(v, Seq) and v.runs:
                for t in self.targets_of(list(v.elems), f"{label}[...]"):
                    out.setdefault((id(t.ix), t.func.node.id), replace(t, role="element"))
        return list(out.values())

    def _constructors(self, ix: FileIndex, func: Node, env: Env) -> list[Target]:
        """A workspace class called (`Cls(...)`, not a class passed on: `isinstance(x, Cls)` runs nothing) runs its
        `__new__` and its `__init__`, each the first found along its workspace bases (none when only a library
        base defines one: an Enum, a NamedTuple, a plain nn.Module subclass). A dataclass's generated `__init__`
        runs its `__post_init__`. The `__init__` (else the `__new__`) is the call's target; the others run
        besides it (a role: they are no alternative signature for `_fitting` to choose among)."""
        out: list[Target] = []
        for v in self.values_of(ix, func, env):
            if not isinstance(v, ClassRef):
                continue
            mro = self.values.mro(v.ix, v.cls)
            label = ix.text(func)
            new = _first_method(mro, "__new__")
            init: tuple[FileIndex, ClassInfo, FuncInfo] | None = None
            post = None
            for cix, cls in mro:
                m = cls.methods.get("__init__")
                if m is not None:
                    init = (cix, cls, m)
                    break
                if _is_dataclass(cix, cls):
                    post = _first_method(mro, "__post_init__")
                    break
            if init is not None:
                out.append(Target(init[0], init[2], EMPTY_ENV, f"{label} -> {init[1].name}.__init__"))
            if new is not None:
                out.append(Target(new[0], new[2], EMPTY_ENV, f"{label} -> {new[1].name}.__new__",
                                  role="new" if init is not None else ""))
            if post is not None:
                out.append(Target(post[0], post[2], EMPTY_ENV, f"{label} -> {post[1].name}.__post_init__",
                                  role="post_init"))
        return out

    def instance_call(self, inst: Inst, label: str) -> list[Target]:
        """Calling an instance: an nn.Module's `forward`; a class's own `__call__`; a class with neither a module
        base nor a `__call__` of its own, its `forward`; plus the forward hooks registered on it.
        The instance is bound to `self` of the method when its construction site is known."""
        vals = self.values
        mro = vals.mro(inst.ix, inst.cls)
        own_call = any("__call__" in c.methods for _i, c in mro)
        # a class with a `__call__` of its own that is no nn.Module runs that; otherwise `forward` (an nn.Module,
        # or a duck-typed one whose library base we cannot see)
        names = ("__call__",) if own_call and not vals.is_module(inst.ix, inst.cls) else ("forward", "__call__")
        pre = Env((("self", Binding(inst.site_ix, inst.site, EMPTY_ENV)),)) if (
            inst.site is not None and inst.site_ix is not None) else EMPTY_ENV
        out: list[Target] = []
        for name in names:
            for cix, cls in mro:
                m = cls.methods.get(name)
                if m is not None:
                    out.append(Target(cix, m, EMPTY_ENV, f"{label} -> {cls.name}.{name}", pre))
                    break
            if out:
                break
        if not out and inst.site is None:
            out = self._subclass_calls(inst, label)
        out.extend(self._hooks(inst, label))
        return out

    def _subclass_calls(self, inst: Inst, label: str) -> list[Target]:
        """`self` of a class that defines neither `forward` nor `__call__` (a mixin: mamba's GenerationMixin passes
        `self` on to the code that captures `model(...)`): the object is an instance of a workspace subclass that
        does. Only when one subclass does: a mixin of many modules (NeMo's AdapterModuleMixin) says nothing of
        which one is called. Still a may-be edge (a subclass outside the workspace may be the one)."""
        out: list[Target] = []
        files = [inst.ix, *(self.files_with(inst.ix.path, inst.cls.name) if self.files_with is not None else [])]
        for f in files:
            for sub in self._subclasses(f, inst.cls):
                for t in self.instance_call(Inst(f, sub, None), f"{label} ({sub.name})"):
                    if t.role != "hook":
                        out.append(replace(t, guess=f"{label}: a {sub.name}, a subclass of {inst.cls.name}"))
                if len({t.func.node.id for t in out}) > 1:
                    return []
        return out

    def _subclasses(self, f: FileIndex, cls: ClassInfo) -> list[ClassInfo]:
        """The classes of `f` that have `cls` among their workspace bases, at any depth: the headers whose bases
        spell its name, then their linearisations."""
        self.values._asked(f)
        out: list[ClassInfo] = []
        for name in _class_headers(f).get(cls.name, ()):
            sub = f.classes.get(name)
            if sub is not None and sub is not cls and any(c is cls for _i, c in self.values.mro(f, sub)[1:]):
                out.append(sub)
        return out

    def _hooks(self, inst: Inst, label: str) -> list[Target]:
        """Forward (pre-)hooks registered on the instance (`m.register_forward_hook(fn)` where `m` is this
        instance, or `self.register_forward_hook(...)` in its class)."""
        out: list[Target] = []
        files = {id(inst.ix): inst.ix}
        if inst.site_ix is not None:
            files[id(inst.site_ix)] = inst.site_ix
        for f in files.values():
            for o, hook in self._hook_registrations(f):
                if not any(isinstance(v, Inst) and v.cls is inst.cls and (
                        v.site is None or inst.site is None or v.key() == inst.key()) for v in self.values.of(f, o)):
                    continue
                out.extend(replace(t, role="hook") for t in self.targets_of(self.values.of(f, hook),
                                                                             f"{label} hook {f.text(hook)}"))
        return out

    def _hook_registrations(self, f: FileIndex) -> list[tuple[Node, Node]]:
        """(module, hook) of every `module.register_forward_(pre_)hook(hook, ...)` in a file, found once per file
        (instance calls ask for every instance); a new registration anywhere in the file is a non-local edit."""
        if not f.has(b"register_forward"):
            return []
        for name in _HOOK_METHODS:
            f.watched.add(name)
        key = (f.path, id(f))
        found = self._hooks_cache.get(key)
        if found is None:
            found = self._hooks_cache[key] = []
            for name in _HOOK_METHODS:
                f.src.need_word(name)
            for call in run_query("(call function: (attribute) arguments: (argument_list)) @c", f.src.root).get("c", []):
                fnode = call.child_by_field_name("function")
                o = fnode.child_by_field_name("object") if fnode is not None else None
                m = fnode.child_by_field_name("attribute") if fnode is not None else None
                args = positional(call)
                if o is not None and m is not None and args and f.text(m) in _HOOK_METHODS:
                    found.append((o, args[0]))
        return found

    def _partial_args(self, v: Func) -> tuple[Env, int]:
        """The arguments a `functools.partial(f, a, k=v)` binds ahead of the call, when `v` came from one."""
        if v.partial is None or v.partial_ix is None:
            return EMPTY_ENV, 0
        pix, call = v.partial_ix, v.partial
        params = [p for p in v.func.params if not (p in ("self", "cls") and v.func.class_name is not None)]
        args = call.child_by_field_name("arguments")
        pairs: list[tuple[str, Binding]] = []
        pos = 0
        for a in (args.named_children if args is not None else [])[1:]:
            if a.type == "keyword_argument":
                n, val = a.child_by_field_name("name"), a.child_by_field_name("value")
                if n is not None and val is not None:
                    pairs.append((pix.text(n), Binding(pix, val, EMPTY_ENV)))
            elif a.type in ("list_splat", "dictionary_splat"):
                return EMPTY_ENV, 0  # unknown how many it binds
            elif a.type != "comment":
                if pos < len(params):
                    pairs.append((params[pos], Binding(pix, a, EMPTY_ENV)))
                pos += 1
        return Env(tuple(pairs)), pos

    def library_kind_site(self, ix: FileIndex, expr: Node, env: Env) -> Lib | None:
        """The one library construction (`torch.optim.AdamW(...)`, wherever it is) that `expr` evaluates to."""
        libs = [v for v in self.values_of(ix, expr, env) if isinstance(v, Lib)]
        return libs[0] if len(libs) == 1 else None

    # ---- names -------------------------------------------------------------------------------------------
    def _resolve_name(self, ix: FileIndex, ident: Node, env: Env, depth: int) -> list[Target]:
        name = ix.text(ident)
        bound = env.get(name)
        if bound is not None:
            return self.resolve_callable(bound.ix, bound.node, bound.env, depth + 1)
        assign, scope, is_param = ix.lookup(name, ident)
        if is_param and scope is not None:
            return self._from_call_sites(ix, scope.node, name, depth)
        if assign is not None and assign.value is not None:
            value = strip_parens(assign.value)
            if value.type == "call":
                cls = self._class_of_call(ix, value)
                if cls is not None:
                    return self._instance_call(cls[0], cls[1], name, (ix, _constructor(ix, value)))
                f = value.child_by_field_name("function")
                if f is not None and (ix.qualname(f) or "").endswith("partial"):
                    return self.resolve_callable(ix, value, env, depth + 1)
                return []
            if value.type in ("identifier", "attribute"):
                return self.resolve_callable(ix, value, env, depth + 1)
            return []
        # closures: functions defined in enclosing functions, then module functions
        local = ix.local_defs(name, ident)
        if local:
            return [Target(ix, info, EMPTY_ENV, name) for info in local]
        info = ix.module_func(name, ident)
        if info is not None:
            return [Target(ix, info, EMPTY_ENV, name)]
        imported = ix.imports.lookup(name)
        if imported is not None and "." in imported:
            mod, _, attr = imported.rpartition(".")
            other = self.lookup_module(mod)
            if other is not None:
                fn = other.module_funcs.get(attr)
                if fn is not None:
                    return [Target(other, fn, EMPTY_ENV, name)]
        return []

    def _class_of_call(self, ix: FileIndex, call: Node) -> tuple[FileIndex, ClassInfo] | None:
        """The user class a call instantiates (`M()`, `M().cuda()`, `mod.M(...)`)."""
        f = call.child_by_field_name("function")
        while f is not None and f.type == "attribute":
            attr = f.child_by_field_name("attribute")
            obj = f.child_by_field_name("object")
            if attr is not None and ix.text(attr) in ("cuda", "to", "eval", "train", "half", "float") and obj is not None and obj.type == "call":
                f = obj.child_by_field_name("function")
                continue
            break
        if f is None:
            return None
        return self._find_class(ix, f)

    def _find_class(self, ix: FileIndex, f: Node) -> tuple[FileIndex, ClassInfo] | None:
        text = ix.text(f)
        if f.type == "identifier":
            cls = ix.classes.get(text)
            if cls is not None:
                return ix, cls
        q = ix.qualname(f)
        if q is not None and "." in q:
            mod, _, attr = q.rpartition(".")
            other = self.lookup_module(mod)
            if other is not None and attr in other.classes:
                return other, other.classes[attr]
        return None

    def _instance_call(self, ix: FileIndex, cls: ClassInfo, label: str,
                       site: tuple[FileIndex, Node] | None = None) -> list[Target]:
        inst = Inst(ix, cls, site[1], site[0]) if site is not None else Inst(ix, cls, None)
        return self.instance_call(inst, label)

    def _method(self, ix: FileIndex, cls: ClassInfo, name: str, depth: int = 0) -> tuple[FileIndex, FuncInfo] | None:
        m = cls.methods.get(name)
        if m is not None:
            return ix, m
        if depth > 5:
            return None
        for base in cls.bases:
            short = base.rsplit(".", 1)[-1]
            if short in ix.classes and ix.classes[short] is not cls:
                found = self._method(ix, ix.classes[short], name, depth + 1)
                if found is not None:
                    return found
            if "." in base:
                other = self.lookup_module(base.rpartition(".")[0])
                if other is not None and short in other.classes:
                    found = self._method(other, other.classes[short], name, depth + 1)
                    if found is not None:
                        return found
        return None

    # ---- attributes --------------------------------------------------------------------------------------
    def _resolve_attribute(self, ix: FileIndex, attr_node: Node, env: Env, depth: int) -> list[Target]:
        obj = attr_node.child_by_field_name("object")
        attr = attr_node.child_by_field_name("attribute")
        if obj is None or attr is None:
            return []
        name = ix.text(attr)
        obj = strip_parens(obj)
        if obj.type == "identifier" and ix.text(obj) == "self":
            cls = ix.enclosing_class(attr_node)
            if cls is None:
                return []
            found = self._method(ix, cls, name)
            if found is not None:
                return [Target(found[0], found[1], EMPTY_ENV, f"self.{name}")]
            entry = ix.class_self_attr(cls, name)
            if entry is not None:
                value = strip_parens(entry[0])
                if value.type == "call":
                    c = self._class_of_call(ix, value)
                    if c is not None:
                        return self._instance_call(c[0], c[1], f"self.{name}", (ix, _constructor(ix, value)))
                    return []
                if env.get("self") is not None and value.type == "identifier" and ix.lookup(ix.text(value), value)[2]:
                    # a method's parameter on an instance whose construction is known: that construction's
                    # argument (values_of, through `self`), not every caller's (allocation-site precision)
                    return []
                return self.resolve_callable(ix, value, EMPTY_ENV, depth + 1)
            return []
        if obj.type == "identifier":
            oname = ix.text(obj)
            bound = env.get(oname)
            if bound is not None and bound.node.type in ("identifier", "attribute"):
                # a bound instance passed as argument: resolve the method on its class
                cls2 = self._instance_class(bound.ix, bound.node)
                if cls2 is not None:
                    found = self._method(cls2[0], cls2[1], name)
                    if found is not None:
                        return [Target(found[0], found[1], EMPTY_ENV, f"{oname}.{name}")]
                return []
            cls2 = self._instance_class(ix, obj)
            if cls2 is not None:
                found = self._method(cls2[0], cls2[1], name)
                if found is not None:
                    return [Target(found[0], found[1], EMPTY_ENV, f"{oname}.{name}")]
                return []
            # module attribute: helpers.step
            q = ix.imports.lookup(oname)
            if q is not None:
                other = self.lookup_module(q)
                if other is not None:
                    fn = other.module_funcs.get(name)
                    if fn is not None:
                        return [Target(other, fn, EMPTY_ENV, f"{oname}.{name}")]
        return []

    def _instance_class(self, ix: FileIndex, obj: Node) -> tuple[FileIndex, ClassInfo] | None:
        obj = strip_parens(obj)
        if obj.type == "attribute":
            o = obj.child_by_field_name("object")
            a = obj.child_by_field_name("attribute")
            if o is not None and a is not None and ix.text(o) == "self":
                cls = ix.enclosing_class(obj)
                if cls is not None:
                    entry = ix.class_self_attr(cls, ix.text(a))
                    if entry is not None and strip_parens(entry[0]).type == "call":
                        return self._class_of_call(ix, strip_parens(entry[0]))
            return None
        if obj.type != "identifier":
            return None
        assign, _scope, _p = ix.lookup(ix.text(obj), obj)
        if assign is None or assign.value is None:
            return None
        value = strip_parens(assign.value)
        if value.type == "call":
            return self._class_of_call(ix, value)
        return None

    # ---- bindings ----------------------------------------------------------------------------------------
    def _bind(self, ix: FileIndex, call: Node, fn: FuncInfo, env: Env, drop_self: bool, skip: int = 0) -> Env:
        return Env(tuple((name, Binding(ix, v, env)) for name, v in bind(ix, call, fn, skip).items()))

    def _from_call_sites(self, ix: FileIndex, fn_node: Node, param: str, depth: int) -> list[Target]:
        """The callables passed for parameter `param` at the calls of its function in the file, remembered per
        parameter (each argument resolved from the top, so a callable handed down any number of functions is
        found once; a cycle of hand-offs gives nothing through itself, and an answer that read a parameter still
        under way is not remembered)."""
        info = ix.by_node.get(fn_node.id)
        if info is None:
            return []
        params = list(info.params)
        if params and params[0] in ("self", "cls") and info.class_name is not None:
            params = params[1:]
        if param not in params:
            return []
        ix.watched.add(info.name)  # a call of it added anywhere in the file may bind the parameter
        key = (id(ix), fn_node.id, param)
        memo = self.values.targets_memo
        hit = memo.get(key)
        if hit is not None:
            ix.touched.extend(hit[1])
            return list(hit[0])
        at = self._open.get(key)
        if at is not None:
            self._low = min(self._low, at)
            return []
        me = self._open[key] = len(self._open)
        outer_low, self._low = self._low, NO_OPEN
        out: list[Target] = []
        read: list[tuple[int, int]] = []
        try:
            for call in callsites.calls_named(ix, info.name):
                owner = ix.enclosing_function(call)
                if owner is not None:
                    read.append((owner.node.start_byte, owner.node.end_byte))
                    ix.touched.append(read[-1])
                chosen = bind(ix, call, info).get(param)
                if chosen is not None:
                    out.extend(self.resolve_callable(ix, chosen, EMPTY_ENV, 1))
        finally:
            del self._open[key]
            low = self._low
            self._low = min(outer_low, low) if low < me else outer_low
        if low >= me:
            memo[key] = (list(out), read)
        return out


def resolve_region_callable(resolver: Resolver, ix: FileIndex, expr: Node) -> list[Target]:
    """A callable handed to make_graphed_callables / torch.compile: a function, a module instance (its
    forward), a bound method, or a tuple of those."""
    expr = strip_parens(expr)
    if expr.type in ("tuple", "list"):
        return [t for e in expr.named_children for t in resolve_region_callable(resolver, ix, e)]
    targets = resolver.resolve_callable(ix, expr, EMPTY_ENV)
    if targets:
        return targets
    cls = resolver._instance_class(ix, expr)
    if cls is not None:
        return resolver._instance_call(cls[0], cls[1], ix.text(expr))
    vals = resolver.values.of(ix, expr)
    elems = resolver.values.elements([v for v in vals if isinstance(v, Seq)])
    plain: list[Value] = [v for v in vals if not isinstance(v, Seq)]
    return resolver.targets_of(plain + elems, ix.text(expr))


def _constructor(ix: FileIndex, value: Node) -> Node:
    """The constructor call of `M(...).cuda().eval()`: the innermost call of the chain."""
    call = value
    while True:
        f = call.child_by_field_name("function")
        obj = f.child_by_field_name("object") if f is not None and f.type == "attribute" else None
        if obj is None or strip_parens(obj).type != "call":
            return call
        call = strip_parens(obj)
