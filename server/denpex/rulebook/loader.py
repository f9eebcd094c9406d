"""Load rule files, validate them against rules/rule.schema.json, and index them."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, cast

from denpex.errors import RuleBookError
from denpex.rulebook.cache import cached
from denpex.rulebook.codes import TABLE_GROUPS
from denpex.rulebook.model import (
    CodeEntry,
    GraphRelated,
    Hint,
    Role,
    Rule,
    Severity,
    Signature,
    SourceSide,
)
from denpex.rulebook.safety import problems

SCHEMA_NAME = "rule.schema.json"


def builtin_rules_dir() -> Path:
    """The rule book shipped with the package (wheel) or the checkout (editable install)."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "_rules", here.parent.parent / "rules"):
        if (candidate / SCHEMA_NAME).is_file():
            return candidate
    raise RuleBookError(f"built-in rule book not found next to {here}")


@cache
def _validator() -> Callable[[Any], Any]:
    import fastjsonschema  # imported here: a start from the cache needs none of these
    schema = json.loads((builtin_rules_dir() / SCHEMA_NAME).read_text(encoding="utf-8"))
    return cast(Callable[[Any], Any], fastjsonschema.compile(schema))


def _yaml_load(text: str) -> Any:
    import yaml
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(text, Loader=loader)


def _field_path(message: str) -> str:
    # fastjsonschema names the field as "data.log.signatures[0].regex must be ..."
    return message.replace("data.", "", 1) if message.startswith("data.") else message


def parse_rule(data: Mapping[str, Any], path: str, *, validate: bool = True) -> Rule:
    """Validate one rule mapping and build its typed view."""
    import fastjsonschema
    import regex
    try:
        if validate:
            _validator()(dict(data))
    except fastjsonschema.JsonSchemaValueException as exc:
        raise RuleBookError(f"{path}: invalid rule: {_field_path(exc.message)}") from None
    rule_id = str(data["id"])
    signatures: list[Signature] = []
    log = data.get("log") or {}
    for i, sig in enumerate(log.get("signatures", [])):
        literal = sig.get("literal")
        pattern = sig.get("regex")
        anchor = literal if literal is not None else sig["anchor"]
        ignore_case = bool(sig.get("ignore_case", False))
        table_group = None
        if pattern is not None:
            try:
                compiled = regex.compile(pattern, regex.IGNORECASE if ignore_case else 0)
            except regex.error as exc:
                raise RuleBookError(
                    f"{path}: invalid rule: log.signatures[{i}].regex does not compile: {exc}"
                ) from None
            groups = [g for g in TABLE_GROUPS if g in compiled.groupindex]
            if len(groups) > 1:
                raise RuleBookError(f"{path}: invalid rule: log.signatures[{i}].regex names more than one table group")
            if groups:
                if not log.get("codes"):
                    raise RuleBookError(
                        f"{path}: invalid rule: log.signatures[{i}].regex has a (?P<{groups[0]}>...) group "
                        "but the rule has no log.codes table"
                    )
                table_group = groups[0]
            unsafe = problems(pattern)
            if unsafe:
                raise RuleBookError(
                    f"{path}: invalid rule: log.signatures[{i}].regex can backtrack catastrophically "
                    f"({unsafe[0]}); bound the repeats, e.g. [^\\n]{{0,200}}"
                )
        signatures.append(
            Signature(
                rule_id=rule_id,
                index=i,
                role=cast(Role, sig["role"]),
                anchor=anchor,
                literal=literal,
                regex=pattern,
                variant=str(sig.get("variant", "")),
                ignore_case=ignore_case,
                wrapper=bool(sig.get("wrapper", False)),
                table_group=table_group,
            )
        )
    src = data.get("source")
    source = None
    if src:
        ex = src["examples"]
        source = SourceSide(
            hazards=tuple(src["hazards"]),
            message=str(src.get("message", data["title"])),
            invalid=str(ex["invalid"]),
            valid=str(ex["valid"]),
            fixed=ex.get("fixed"),
        )
    examples = log.get("examples", {})
    refine = log.get("refine") or {}
    if refine:
        for key in ("code", "context", "frames"):
            if key in refine:
                try:
                    regex.compile(refine[key])
                except regex.error as exc:
                    raise RuleBookError(
                        f"{path}: invalid rule: log.refine.{key} does not compile: {exc}"
                    ) from None
    return Rule(
        id=rule_id,
        code=str(data["code"]),
        title=str(data["title"]),
        family=str(data["family"]),
        severity=cast(Severity, data["severity"]),
        root_cause=str(data["root_cause"]).strip(),
        fix=str(data["fix"]).strip(),
        verify=str(data["verify"]).strip(),
        checklist=tuple(data["checklist"]),
        references=tuple(data["references"]),
        path=path,
        eager_fallback=str(data.get("eager_fallback", "")).strip(),
        folklore=str(data.get("folklore", "")).strip(),
        silent=bool(data.get("silent", False)),
        asynchronous=bool(data.get("asynchronous", False)),
        signatures=tuple(signatures),
        log_match_examples=tuple(examples.get("match", ())),
        log_no_match_examples=tuple(examples.get("no_match", ())),
        source=source,
        verified_on=tuple(dict(v) for v in data.get("verified_on", ())),
        refine_parents=tuple(refine.get("parents", ())),
        refine_code=refine.get("code"),
        refine_priority=int(refine.get("priority", 0)),
        refine_context=refine.get("context"),
        refine_phase=refine.get("phase"),
        refine_frames=refine.get("frames"),
        graph_related=cast(GraphRelated, data.get("graph_related", "yes")),
        in_capture=str(data.get("in_capture", "")).strip(),
        generic=bool(data.get("generic", False)),
        codes=tuple(_code_entry(c) for c in log.get("codes", ())),
        hints=tuple(_hint(h, path, i) for i, h in enumerate(data.get("hints", ()))),
        implies_phase=data.get("implies_phase"),
    )


def _hint(h: Mapping[str, Any], path: str, i: int) -> Hint:
    import regex
    try:
        regex.compile(h["regex"])
    except regex.error as exc:
        raise RuleBookError(f"{path}: invalid rule: hints[{i}].regex does not compile: {exc}") from None
    unsafe = problems(h["regex"])
    if unsafe:
        raise RuleBookError(f"{path}: invalid rule: hints[{i}].regex can backtrack catastrophically ({unsafe[0]})")
    related = h.get("graph_related")
    return Hint(str(h["regex"]), str(h["note"]), cast(GraphRelated, related) if related else None)


def _code_entry(c: Mapping[str, Any]) -> CodeEntry:
    return CodeEntry(
        name=str(c["name"]),
        number=int(c["number"]) if c.get("number") is not None else None,
        messages=tuple(str(m) for m in c.get("messages", ())),
        aliases=tuple(str(a) for a in c.get("aliases", ())),
        since=str(c.get("since", "")),
        meaning=str(c.get("meaning", "")).strip(),
        fix=str(c.get("fix", "")).strip(),
        graph_related=cast(GraphRelated, c["graph_related"]) if c.get("graph_related") else None,
        asynchronous=bool(c.get("asynchronous", False)),
    )


def load_rule_file(path: Path, *, validate: bool = True) -> Rule:
    import yaml
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RuleBookError(f"{path}: cannot read rule file: {exc}") from None
    try:
        data = _yaml_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise RuleBookError(f"{path}: not valid YAML{where}") from None
    if not isinstance(data, dict):
        raise RuleBookError(f"{path}: invalid rule: the file must hold one mapping")
    return parse_rule(data, str(path), validate=validate)


def rule_files(directory: Path) -> list[Path]:
    """The .yaml/.yml files under directory, sorted as Paths sort (part by part).

    What sorted(p for p in directory.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())
    gives, walked with os.scandir: the pathlib walk cost 1-3 ms of every start (the built-in book's
    118 files are listed to check the snapshot). As there, folders behind a symlink are not entered,
    a symlink to a file counts, and an unreadable folder is skipped."""
    if not directory.is_dir():
        raise RuleBookError(f"{directory}: rules folder not found")
    found: list[tuple[str, ...]] = []

    def walk(path: str, parts: tuple[str, ...]) -> None:
        try:
            with os.scandir(path) as it:
                entries = list(it)
        except PermissionError:
            return
        for e in entries:
            name = e.name
            dot = name.rfind(".")  # Path.suffix: the last dot, not the first or last character
            if 0 < dot < len(name) - 1 and name[dot:] in (".yaml", ".yml") and os.path.isfile(e.path):
                found.append((*parts, name))
            try:
                sub = e.is_dir() and not e.is_symlink()
            except OSError:
                sub = False
            if sub:
                walk(e.path, (*parts, name))

    walk(os.fspath(directory), ())
    found.sort()  # Paths under one folder compare by their parts
    return [directory.joinpath(*parts) for parts in found]


@dataclass
class RuleBook:
    rules: list[Rule]
    by_key: dict[str, Rule] = field(default_factory=dict)
    # what other layers build from a book once and reuse (the log matcher); never compared
    derived: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        for rule in self.rules:
            for key in (rule.id, rule.code):
                other = self.by_key.get(key)
                if other is not None and other is not rule:
                    raise RuleBookError(
                        f"{rule.path}: invalid rule: id or code {key!r} is also used by {other.path}"
                    )
                self.by_key[key] = rule

    def get(self, key: str) -> Rule | None:
        return self.by_key.get(key) or self.by_key.get(key.upper())

    def resolve(self, keys: Iterable[str]) -> set[str]:
        """Map ids or codes to rule ids; unknown keys raise."""
        out: set[str] = set()
        for key in keys:
            rule = self.get(key.strip())
            if rule is None:
                raise RuleBookError(f"unknown rule {key!r} (see `denpex rules`)")
            out.add(rule.id)
        return out

    @property
    def signatures(self) -> list[Signature]:
        return [s for r in self.rules for s in r.signatures]


@cache
def _builtin_rules() -> tuple[Rule, ...]:
    # The shipped rules are schema-checked by the test suite (tests/logs/test_rulebook.py), so a
    # start-up (the language server's first diagnostics) does not pay for compiling the validator.
    # Users' rule folders are always validated.
    from denpex import snapshot

    directory = builtin_rules_dir()
    files = rule_files(directory)
    parsed = snapshot.rulebook(directory, files)  # parsed when the package was built, if still current
    if parsed is not None:
        return parsed
    return cached("rulebook", files, lambda: tuple(load_rule_file(p, validate=False) for p in files))


@cache
def _builtin_book() -> RuleBook:
    return RuleBook(list(_builtin_rules()))


def load_rulebook(extra_dirs: Iterable[str | Path] = ()) -> RuleBook:
    """The built-in rules plus the user's rule folders, all validated the same way.

    Without extra folders every caller shares one book, and so whatever is derived from it."""
    dirs = list(extra_dirs)
    if not dirs:
        return _builtin_book()
    rules = list(_builtin_rules())
    for directory in dirs:
        rules.extend(load_rule_file(p) for p in rule_files(Path(directory)))
    return RuleBook(rules)
