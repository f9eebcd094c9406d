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
    # horovodrun's own launcher: "[3]<stderr>:", with --timestamp-output "Fri Sep 25 16:52:35 2020[3]<stderr>:"
    ("horovod", re.compile(r"^(?:[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})?\[(\d{1,6})\]<(?:stdout|stderr)>:")),
    ("vllm", re.compile(r"\((?:VllmWorker|Worker)[A-Za-z_]*\s+rank=(\d{1,6})\s+pid=(\d{1,8})\)")),
    # vLLM's worker names: (VllmWorker TP1 pid=N), (VllmWorker PP1_TP0 pid=N), (Worker_DP1_PP0_TP3_EP3 pid=N)
    ("vllm_tp", re.compile(r"\((VllmWorker[ _]|Worker_)((?:DP|PP|TP|EP|DCP)\d{1,5}(?:_(?:DP|PP|TP|EP|DCP)\d{1,5})*)"
                           r"\s+pid=(\d{1,8})\)")),
    # vLLM's executor naming the worker that died: "Worker proc VllmWorker-2 died unexpectedly"
    ("vllm_died", re.compile(r"\bWorker proc VllmWorker-(\d{1,6}) died\b")),
    # Ray's (Actor pid=N, ip=A) / (pid=N), and other "(Name pid=N)" process prefixes (vLLM's APIServer,
    # EngineCore_DP0); stacked ones (a Ray worker's line re-printed by vLLM's engine) give the innermost
    ("ray", re.compile(r"\((?:([\w.-]{1,80})\s+)?pid=(\d{1,8})(?:,\s*ip=([0-9a-fA-F.:]{3,45}))?\)")),
    # SGLang's scheduler prefix: [2025-04-22 15:12:46 DP1 PP0 TP3 EP3]
    ("sglang", re.compile(r"(?:^|[\s\[])((?:(?:DP|PP|ATTN_CP|MOE_DP)\d{1,5}\s+)*TP(\d{1,5})"
                          r"(?:\s+(?:EP|PP)\d{1,5})*)\]")),
    ("nccl", re.compile(r"(?:^|\s)([A-Za-z0-9][\w.-]{0,62}):(\d{1,8}):(\d{1,8}) \[(\d{1,3})\] NCCL ")),
    ("pg", re.compile(r"\[PG[^\]\n]{0,80}?\bRank (\d{1,6})\]")),
    ("self", re.compile(r"(?:^|[\s\[(])[Rr]ank[ =:]\s?(\d{1,6})(?:\]|\)|:|,|\s)")),
    ("slurm", re.compile(r"^\s{0,3}(\d{1,5}): ")),
    # TGI's launcher puts its shard's rank last: "... Starting shard rank=0", "... signal 4 rank=0"
    ("tgi", re.compile(r"(?:^|\s)rank=(\d{1,6})\s*$")),
    # weak: a torch.compile cache folder of vLLM (.../torch_compile_cache/<hash>/rank_<rank>_<dp rank>/)
    ("cache", re.compile(r"[/\\]rank_(\d{1,6})_(\d{1,4})(?![\w.])")),
)
_RAY = dict(_PREFIX_RULES)["ray"]
_TAG = re.compile(r"([A-Z][A-Z_]*?)(\d+)")

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
    weak: bool = False  # the rank is from weak evidence (a compile-cache path): any other source wins

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
            parts.append(process_label(self.process))
        return ", ".join(parts) or "unattributed"


def process_label(process: str) -> str:
    """A pid as "pid N"; a worker known by its name or tag (vLLM's Worker_PP1_TP0, SGLang's DP1 TP3) as it is."""
    return f"pid {process}" if process.isdigit() else f"process {process}"


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
_NEEDS: dict[str, str] = {"rank": "[rank", "local_rank": "[default", "mpi": "]<", "horovod": "]<", "vllm": "pid=",
                          "vllm_tp": "pid=", "vllm_died": "VllmWorker-", "ray": "pid=", "sglang": "TP",
                          "nccl": "] NCCL ", "pg": "[PG", "tgi": "rank=", "self": "ank", "slurm": ": ",
                          "cache": "rank_"}


def _parallel_rank(tags: dict[str, int]) -> int | None:
    """The global rank of a worker named by its parallel ranks, when the name gives enough for it.

    vLLM and SGLang name a parallel dimension only when its size is over 1, and their global rank is
    (dp * PP + pp) * TP + tp. It is the innermost named rank when every named rank outside it is 0
    (PP0_TP1 is rank 1 whatever the sizes); else it needs sizes the name does not give (PP1_TP0 is
    TP + 0). EP and the attention groups are views of the same ranks, no dimension of their own."""
    dims = [tags[d] for d in ("DP", "PP", "TP") if d in tags]
    return dims[-1] if dims and not any(dims[:-1]) else None


def _why(tags: dict[str, int]) -> str:
    named = [d for d in ("DP", "PP", "TP") if d in tags]
    unnamed = [d for d in ("DP", "PP", "TP") if d not in tags]
    parts = [f"{'/'.join(unnamed)} not named (size 1)"] if unnamed else []
    if len(named) > 1:
        parts.append(f"{' and '.join(d + '0' for d in named[:-1])} outside {named[-1]}")
    return ", ".join(parts)


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
        elif name == "horovod" and a.rank is None:
            a.rank = int(m.group(1))
            a.evidence.append(f"horovodrun prefix {m.group(0)}")
        elif name == "vllm" and a.rank is None:
            a.rank, a.process = int(m.group(1)), m.group(2)
            a.evidence.append(f"vLLM worker prefix {m.group(0)}")
        elif name == "vllm_tp" and a.rank is None and a.process is None:
            tags = {t.group(1): int(t.group(2)) for t in _TAG.finditer(m.group(2))}
            rank = _parallel_rank(tags)
            if rank is not None:
                a.rank, a.process = rank, m.group(3)
                a.evidence.append(f"vLLM worker prefix {m.group(0)} (global rank {rank}: "
                                  f"{_why(tags)})")
            else:
                a.process = m.group(0)[1:-1]
                a.evidence.append(f"vLLM worker prefix {m.group(0)} (rank unknown: it needs the parallel sizes)")
        elif name == "vllm_died" and a.rank is None and a.process is None:
            a.rank, a.process = int(m.group(1)), f"VllmWorker-{m.group(1)}"
            a.evidence.append(f"vLLM's executor: {m.group(0)[len('Worker proc '):]} (its worker of rank {m.group(1)})")
        elif name == "ray" and a.process is None:
            while True:  # stacked prefixes: the innermost one wrote the line
                nxt = _RAY.match(text, m.end() + 1) if text.startswith(" (", m.end()) else None
                if nxt is None:
                    break
                m = nxt
            a.process = m.group(2)
            if m.group(3):
                a.node = m.group(3)
            kind = "Ray actor" if m.group(3) or (m.group(1) or "").startswith("Ray") else "process"
            a.evidence.append(f"{kind} prefix {m.group(0)}")
        elif name == "sglang" and a.rank is None:
            tag = " ".join(m.group(1).split())
            tags = {t.group(1): int(t.group(2)) for t in _TAG.finditer(tag)}
            rank = _parallel_rank(tags)
            if rank is not None:
                a.rank = rank
                a.evidence.append(f"SGLang TP prefix {tag}] (global rank {rank}: {_why(tags)})")
            elif a.process is None:
                a.process = tag
                a.evidence.append(f"SGLang scheduler prefix {tag}] (rank unknown: it needs the parallel sizes)")
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
        elif name == "tgi" and a.rank is None:
            a.rank = int(m.group(1))
            a.evidence.append(f"a trailing rank={m.group(1)} field (TGI's launcher ends its shard records so)")
        elif name == "cache" and a.rank is None and a.local_rank is None and m.group(2) == "0":
            a.rank, a.weak = int(m.group(1)), True
            a.evidence.append(f"weak evidence: compile-cache path rank_{m.group(1)}_0 (vLLM's torch.compile "
                              f"cache of rank {m.group(1)}, DP rank 0; a path may name another rank's cache)")
    return a


_PREFIX_STRIP = re.compile(
    r"^(?:\s{0,3}\d{1,5}: |\[\d{1,6},\d{1,6}\]<(?:stdout|stderr)>:|\[(?:rank|default)\d{1,6}\]:?\s?"
    r"|(?:[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})?\[\d{1,6}\]<(?:stdout|stderr)>:)+"
)


def strip_prefixes(text: str) -> str:
    """The line as the worker wrote it, without launcher prefixes."""
    return _PREFIX_STRIP.sub("", text)
