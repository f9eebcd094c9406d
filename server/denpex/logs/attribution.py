"""Who wrote a line: rank, node, process, from what real launchers and libraries print.

Every attribution records its evidence (which prefix or phrase it came from), because
the prefixes disagree: torchrun's [defaultN] is a local rank, c10d's [rankN] a global one,
and ProcessGroupNCCL's [PG ... Rank r] a rank inside a process group.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Ordered: the first matching rule for each field wins; prefixes may be stacked.
_PREFIX_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("rank", re.compile(r"\[rank(\d{1,6})\]:?")),
    ("local_rank", re.compile(r"\[default(\d{1,5})\]:")),
    ("mpi", re.compile(r"^\[(\d{1,6}),(\d{1,6})\]<(?:stdout|stderr)>:")),
    ("vllm", re.compile(r"\((?:VllmWorker|Worker)[A-Za-z_]*\s+rank=(\d{1,6})\s+pid=(\d{1,8})\)")),
    ("vllm_tp", re.compile(r"\((?:VllmWorker|Worker|EngineCore)_?(?:TP|DP|PP)(\d{1,5})[A-Za-z0-9_]*\s+pid=(\d{1,8})\)")),
    ("ray", re.compile(r"\((\w+)\s+pid=(\d{1,8}),\s*ip=([0-9a-fA-F.:]{3,45})\)")),
    ("sglang", re.compile(r"(?:^|[\s\[])(?:DP(\d{1,4})\s+)?TP(\d{1,5})(?:\s+EP\d{1,5})?\]")),
    ("nccl", re.compile(r"(?:^|\s)([A-Za-z0-9][\w.-]{0,62}):(\d{1,8}):(\d{1,8}) \[(\d{1,3})\] NCCL ")),
    ("pg", re.compile(r"\[PG[^\]\n]{0,80}?\bRank (\d{1,6})\]")),
    ("self", re.compile(r"(?:^|[\s\[(])[Rr]ank[ =:]\s?(\d{1,6})(?:\]|\)|:|,|\s)")),
    ("slurm", re.compile(r"^\s{0,3}(\d{1,5}): ")),
)
# A rank prefix glued after other text by an interleaved writer ("...2.0[rank0] warmup");
# not a stacked prefix such as "[default0]:[rank0]:".
_GLUED = re.compile(r"(?<=.)(?<![\s\]:])(?=\[(?:rank|default)\d{1,6}\])")


@dataclass
class Attribution:
    rank: int | None = None
    local_rank: int | None = None
    node: str | None = None
    process: str | None = None
    device: int | None = None
    evidence: list[str] = field(default_factory=list)

    def key(self) -> tuple[int | None, int | None, str | None, str | None]:
        return (self.rank, self.local_rank, self.node, self.process)

    def label(self) -> str:
        parts = []
        if self.rank is not None:
            parts.append(f"rank {self.rank}")
        elif self.local_rank is not None:
            parts.append(f"local rank {self.local_rank}")
        if self.node:
            parts.append(f"node {self.node}")
        if self.process:
            parts.append(f"pid {self.process}")
        return ", ".join(parts) or "unattributed"


def split_glued(text: str) -> list[tuple[int, str]]:
    """Split a line where another rank's prefix was glued on mid-line: (offset, piece)."""
    if "[rank" not in text and "[default" not in text:
        return [(0, text)]
    cuts = [m.start() for m in _GLUED.finditer(text)]
    if not cuts:
        return [(0, text)]
    bounds = [0, *cuts, len(text)]
    return [(bounds[i], text[bounds[i] : bounds[i + 1]]) for i in range(len(bounds) - 1)]


# A literal each rule's pattern cannot match without: most lines hold none of them, and a
# substring test costs a fraction of a regex search (a thousand ranks' contexts ran 250,000).
_NEEDS: dict[str, str] = {"rank": "[rank", "local_rank": "[default", "mpi": "]<", "vllm": "pid=",
                          "vllm_tp": "pid=", "ray": "pid=", "sglang": "TP", "nccl": "] NCCL ",
                          "pg": "[PG", "self": "ank", "slurm": ": "}


def attribute(text: str) -> Attribution:
    """Attribute one (cleaned, unglued) line."""
    a = Attribution()
    for name, pattern in _PREFIX_RULES:
        if _NEEDS[name] not in text:
            continue
        m = pattern.search(text)
        if not m:
            continue
        if name == "rank" and a.rank is None:
            a.rank = int(m.group(1))
            a.evidence.append(f"prefix {m.group(0).rstrip(':')}")
        elif name == "local_rank" and a.local_rank is None:
            a.local_rank = int(m.group(1))
            a.evidence.append(f"torchrun --tee prefix {m.group(0)} (local rank)")
        elif name == "mpi" and a.rank is None:
            a.rank = int(m.group(2))
            a.evidence.append(f"MPI prefix {m.group(0)}")
        elif (name == "vllm" and a.rank is None) or (name == "vllm_tp" and a.rank is None):
            a.rank, a.process = int(m.group(1)), m.group(2)
            a.evidence.append(f"vLLM worker prefix {m.group(0)}")
        elif name == "ray" and a.process is None:
            a.process, a.node = m.group(2), m.group(3)
            a.evidence.append(f"Ray actor prefix {m.group(0)}")
        elif name == "sglang" and a.rank is None:
            a.rank = int(m.group(2))
            a.evidence.append(f"SGLang TP prefix {m.group(0).strip(' [')}")
        elif name == "nccl" and a.process is None:
            a.node, a.process, a.device = m.group(1), m.group(2), int(m.group(4))
            a.evidence.append(f"NCCL host:pid:tid [dev] {m.group(1)}:{m.group(2)} [{m.group(4)}]")
        elif name == "pg" and a.rank is None:
            a.rank = int(m.group(1))
            a.evidence.append(f"ProcessGroupNCCL prefix {m.group(0)} (rank in its group)")
        elif name == "self" and a.rank is None:
            a.rank = int(m.group(1))
            a.evidence.append(f"the line names its rank ({m.group(0).strip()})")
        elif name == "slurm" and a.rank is None and a.local_rank is None:
            a.rank = int(m.group(1))
            a.evidence.append(f"srun --label task prefix {m.group(1)}:")
    return a


_PREFIX_STRIP = re.compile(
    r"^(?:\s{0,3}\d{1,5}: |\[\d{1,6},\d{1,6}\]<(?:stdout|stderr)>:|\[(?:rank|default)\d{1,6}\]:?\s?)+"
)


def strip_prefixes(text: str) -> str:
    """The line as the worker wrote it, without launcher prefixes."""
    return _PREFIX_STRIP.sub("", text)
