"""Status-code tables: a rule that carries a library's codes (cudaError_t, CUresult, cublasStatus_t, ...)
matches a line only when the text its signature captures names one of them."""

from __future__ import annotations

from dataclasses import dataclass, field

from denpex.rulebook.model import CodeEntry, Rule

TABLE_GROUPS = ("name", "message", "number")


@dataclass
class CodeTable:
    by_name: dict[str, CodeEntry] = field(default_factory=dict)
    by_number: dict[int, CodeEntry] = field(default_factory=dict)
    # longest first, so "invalid device ordinal" is tried before "invalid device"
    by_message: list[tuple[str, CodeEntry]] = field(default_factory=list)

    @classmethod
    def of(cls, rule: Rule) -> CodeTable:
        table = cls()
        for entry in rule.codes:
            for name in (entry.name, *entry.aliases):
                table.by_name.setdefault(name, entry)
            if entry.number is not None:
                table.by_number.setdefault(entry.number, entry)
            for msg in entry.messages:
                table.by_message.append((msg, entry))
        table.by_message.sort(key=lambda item: -len(item[0]))
        return table

    def lookup(self, group: str, text: str) -> CodeEntry | None:
        """The entry that `text` (what the signature's named group captured) names, if any."""
        if group == "name":
            return self.by_name.get(text)
        if group == "number":
            try:
                return self.by_number.get(int(text))
            except ValueError:
                return None
        for msg, entry in self.by_message:
            # the message must end where the text ends or at a non-word character: "out of memory"
            # names "out of memory (malloc at ...)" but "invalid device" does not name "invalid devices"
            if text.startswith(msg) and (len(text) == len(msg) or not (text[len(msg)].isalnum() or text[len(msg)] == "_")):
                return entry
        return None
