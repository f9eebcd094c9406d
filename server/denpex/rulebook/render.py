"""A rule as Markdown, rendered one way for `denpex explain` and the editor's hover.

The hover is the short form (what fails and why, the fix, the eager fallback, how to verify, the
references); `denpex explain` adds the folklore, the checklist, the log signatures and where the rule
was verified.
"""

from __future__ import annotations

from denpex.rulebook.model import Rule


def rule_markdown(rule: Rule, *, message: str | None = None, full: bool = True) -> str:
    """`message`: the finding's own wording, shown under the title when it says more than the title."""
    out = [f"## {rule.code} `{rule.id}`: {rule.title}", "",
           f"{rule.family} · severity **{rule.severity}**", ""]
    if message and message != rule.title:
        out += [message, ""]
    out += ["### What fails, and why under capture", rule.root_cause, "", "### Fix", rule.fix, ""]
    if rule.eager_fallback:
        out += ["### Eager fallback", rule.eager_fallback, ""]
    out += ["### Verify", "```sh", rule.verify_command(), "```", ""]
    if full:
        if rule.folklore:
            out += ["### Folklore vs. what PyTorch does", rule.folklore, ""]
        if rule.checklist:
            out += ["### Checklist", *[f"- [ ] {c}" for c in rule.checklist], ""]
        if rule.signatures:
            out += ["### Log signatures", *[f"- {s.role}: `{s.literal or s.regex}`" for s in rule.signatures], ""]
        if rule.verified_on:
            out += ["### Verified on", *[f"- torch {v.get('torch')} {v.get('gpu', '')}: {v.get('evidence')}"
                                         for v in rule.verified_on], ""]
    if rule.references:
        out += ["### References", *[f"- <{ref}>" for ref in rule.references], ""]
    return "\n".join(out).rstrip() + "\n"
