"""Every configuration key Denpex reads, in one table: its type, its default, where it may be set.

`[tool.denpex]` in pyproject.toml (read by `denpex scan` and by the language server) takes the keys
marked `project`; the editor's settings take all of them. pyproject spells keys in kebab-case
(`capture-wrappers`), editors in camelCase (`captureWrappers`); snake_case works too, everywhere.
A value is checked the same way wherever it comes from, and a problem is reported with the same text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

KeyKind = Literal["rules", "severity", "names", "bool", "count", "run", "template"]
RuleSeverity = Literal["error", "warning", "info", "hint", "off"]
SEVERITIES: tuple[RuleSeverity, ...] = ("error", "warning", "info", "hint", "off")
_SEVERITY_ALIASES: dict[str, RuleSeverity] = {"warn": "warning", "information": "info", "none": "off"}

Value = tuple[str, ...] | Mapping[str, RuleSeverity] | bool | int | str


@dataclass(frozen=True)
class Key:
    field: str
    kind: KeyKind
    default: Value
    project: bool
    """May be set in `[tool.denpex]` (and so applies to `denpex scan` too)."""
    help: str
    aliases: tuple[str, ...] = ()
    vscode: bool = True
    """The VS Code extension offers it (package.json `contributes.configuration`, as `denpex.<editor_name>`)."""

    @property
    def pyproject_name(self) -> str:
        return self.field.replace("_", "-")

    @property
    def editor_name(self) -> str:
        head, *rest = self.field.split("_")
        return head + "".join(p.capitalize() for p in rest)


KEYS: tuple[Key, ...] = (
    Key("select", "rules", (), True, "rule ids, codes or code prefixes to report (empty: every rule)"),
    Key("ignore", "rules", (), True, "rule ids, codes or code prefixes never to report"),
    Key("severity", "severity", {}, True,
        "severity per rule id, code or code prefix: error, warning, info, hint or off (the most specific key wins)"),
    Key("capture_wrappers", "names", (), True, "extra qualified names that open a capture region",
        aliases=("extraCaptureWrappers", "wrappers")),
    Key("graphed_callables", "names", (), True,
        "extra qualified names of calls that capture the callable passed as their first argument"),
    Key("capture_entry_points", "names", (), True,
        'functions captured by code Denpex cannot see, as "pkg.module:Class.method" or "pkg.module:function"'),
    Key("guards", "names", (), True, 'extra names of "are we capturing?" predicates', aliases=("guardNames",)),
    Key("max_depth", "count", 4, True, "how many calls deep a capture region is followed"),
    Key("unsafe_fixes", "bool", False, True,
        "fix-all (`denpex scan --fix`, the editor's source.fixAll.denpex) applies unsafe fixes too"),
    Key("run", "run", "onType", False, "analyse on every change (onType) or only on open and save (onSave)",
        aliases=("lint.run",)),
    Key("debounce_ms", "count", 0, False, "delay before analysing after a change (0: coalesce only)",
        vscode=False),
    Key("fix_violation", "bool", True, False, "offer one quick fix per fix of a finding",
        aliases=("codeAction.fixViolation.enable",), vscode=False),
    Key("disable_rule_comment", "bool", True, False, 'offer "Disable RULE for this line"',
        aliases=("codeAction.disableRuleComment.enable",), vscode=False),
    Key("fix_all", "bool", True, False, "offer source.fixAll.denpex", vscode=False),
    Key("log_documents", "bool", True, False, "diagnose .log/.out/.err documents"),
    Key("max_file_bytes", "count", 4_000_000, False, "skip analysing documents larger than this", vscode=False),
    Key("docs_url", "template", "", False, "codeDescription link with {id}/{code}; empty: the rule file",
        vscode=False),
)

# The VS Code extension's own settings (how to start the server, its UI): known, never the server's.
CLIENT_ONLY = frozenset({"serverPath", "interpreter", "usePythonExtension", "showReportOnDiagnose", "trace.server",
                         "trace"})


def norm(name: str) -> str:
    return re.sub(r"[-_]", "", name).lower()


BY_NAME: dict[str, Key] = {}
for _k in KEYS:
    for _n in (_k.field, _k.pyproject_name, _k.editor_name, *_k.aliases):
        BY_NAME[norm(_n)] = _k
_CLIENT_ONLY_NORM = frozenset(norm(n) for n in CLIENT_ONLY)


def lookup(name: str) -> Key | None:
    return BY_NAME.get(norm(name))


def client_only(name: str) -> bool:
    return norm(name) in _CLIENT_ONLY_NORM


class ValueProblem(ValueError):
    """What is wrong with a value, as the end of a sentence that starts with the key's name."""


def _strings(raw: object) -> tuple[str, ...]:
    if isinstance(raw, list | tuple) and all(isinstance(s, str) for s in raw):
        return tuple(s.strip() for s in raw if s.strip())
    raise ValueProblem("must be a list of strings")


def severity_value(raw: object) -> RuleSeverity:
    v = str(raw).lower()
    v = _SEVERITY_ALIASES.get(v, v)
    for s in SEVERITIES:
        if v == s:
            return s
    raise ValueProblem(f"must be one of {', '.join(SEVERITIES)}")


def coerce(key: Key, raw: object) -> Value:
    """The checked value of `key`; ValueProblem says what is wrong."""
    if key.kind in ("rules", "names"):
        return _strings(raw)
    if key.kind == "severity":
        if not isinstance(raw, Mapping):
            raise ValueProblem("must be a table of rule = severity")
        out: dict[str, RuleSeverity] = {}
        for k, v in raw.items():
            try:
                out[str(k)] = severity_value(v)
            except ValueProblem as exc:
                raise ValueProblem(f"{k}: {exc}") from None
        return out
    if key.kind == "bool":
        if not isinstance(raw, bool):
            raise ValueProblem("must be true or false")
        return raw
    if key.kind == "count":
        if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
            raise ValueProblem("must be a non-negative integer")
        return raw
    if key.kind == "run":
        if raw not in ("onType", "onSave"):
            raise ValueProblem("must be 'onType' or 'onSave'")
        return str(raw)
    if not isinstance(raw, str):
        raise ValueProblem("must be a string")
    return raw
