"""Who is to blame when the lines do not say: local ranks made global, and the suspect of a hang.

A torchrun ``[defaultN]:`` prefix or ``--log-dir`` folder is a *local* rank. It becomes a global
rank when something gives the mapping: torchrun's failure table (``rank: 9 (local_rank: 1)`` with
its ``host :`` line, printed by ``torch/distributed/elastic/multiprocessing/errors``), the
worker's own ``[rankN]:`` prefixes in its file, ``--node-rank``/``--nproc-per-node``
(global = node_rank * nproc_per_node + local_rank, torchrun's rule for equal nodes), or a single
node (global = local).

When every rank only reports the NCCL watchdog, the suspect is the rank whose ProcessGroupNCCL
"last enqueued work" is lowest (it never enqueued the collective the others timed out on), or
the rank that never reported the collective at all (no watchdog line while the others have one).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from denpex.logs.attribution import Attribution

_HOST = re.compile(r"^\s*host\s*:\s*(\S+)")
_TABLE_RANK = re.compile(r"^\s*rank\s*:\s*(\d+) \(local_rank: (\d+)\)")


@dataclass(frozen=True)
class TableEntry:
    rank: int
    local_rank: int
    host: str | None


def table_entry(text: str, before: list[tuple[int, str]]) -> TableEntry | None:
    """A failure-table entry from its ``rank : N (local_rank: M)`` line and the lines above it."""
    from denpex.logs.attribution import strip_prefixes

    m = _TABLE_RANK.match(strip_prefixes(text))
    if m is None:
        return None
    host = None
    for _no, line in reversed(before[-4:]):
        h = _HOST.match(strip_prefixes(line))
        if h:
            host = h.group(1)
            break
    return TableEntry(int(m.group(1)), int(m.group(2)), host)


def fill(who: Attribution, base: Attribution | None) -> Attribution:
    """A line's attribution completed with what its file's path says (the line wins)."""
    if base is None:
        return who
    if who.weak and base.rank is not None:  # a compile-cache path gives way to the path's rank
        who = Attribution(local_rank=who.local_rank, node=who.node, process=who.process, device=who.device,
                          evidence=[e for e in who.evidence if not e.startswith("weak evidence:")])
    need_rank = who.rank is None and base.rank is not None
    need_local = who.local_rank is None and base.local_rank is not None
    need_node = who.node is None and base.node is not None
    if not (need_rank or need_local or need_node):
        return who
    return Attribution(
        rank=base.rank if need_rank else who.rank,
        local_rank=base.local_rank if need_local else who.local_rank,
        node=base.node if need_node else who.node,
        process=who.process, device=who.device,
        evidence=[*who.evidence, *base.evidence],
    )


def global_from_table(local_rank: int, node: str | None, table: list[TableEntry]) -> tuple[int, str] | None:
    """The global rank of (node, local rank) by torchrun's failure table, with its evidence."""
    hosts = {e.host for e in table}
    for e in table:
        if e.local_rank != local_rank:
            continue
        if (node is not None and e.host == node) or (len(hosts) == 1 and (node is None or e.host is None)):
            where = f" on host {e.host}" if e.host else ""
            return e.rank, f"torchrun's failure table: rank {e.rank} (local_rank: {local_rank}){where}"
    return None


@dataclass(frozen=True)
class Suspect:
    writer: str  # "rank 3", or "node X local rank 3" when no global rank is known
    rank: int | None
    evidence: str
    also: tuple[str, ...] = ()


def choose_suspect(timed_out: dict[str, int], last_enqueued: dict[str, int],
                   writers: list[str], rank_of: dict[str, int | None]) -> Suspect | None:
    """The writer that held the others up: lowest last enqueued work below the SeqNum the others
    timed out on; else the one writer (of a per-rank folder) that never reported that collective."""
    if not timed_out:
        return None
    seq = min(timed_out.values())
    behind = {w: n for w, n in last_enqueued.items() if n < seq}
    waiting = sorted(w for w in timed_out if w not in behind)
    if behind:
        low = min(behind.values())
        lows = sorted((w for w, n in behind.items() if n == low), key=_writer_order)
        w = lows[0]
        ev = (f"suspect: {w}'s last enqueued NCCL work is {low}, the lowest, below SeqNum={seq} "
              f"that {_few(waiting) or 'the others'} timed out on")
        return Suspect(w, rank_of.get(w), ev, tuple(lows[1:]))
    silent = sorted((w for w in writers if w not in timed_out and w not in last_enqueued), key=_writer_order)
    if len(silent) >= 1 and len(timed_out) >= 1 and len(silent) < len(writers):
        w = silent[0]
        ev = (f"suspect: {w} never reported collective SeqNum={seq} (no watchdog line in its log) while "
              f"{_few(waiting)} timed out waiting on it")
        return Suspect(w, rank_of.get(w), ev, tuple(silent[1:]))
    return None


def writer_name(rank: int | None, local_rank: int | None, node: str | None) -> str | None:
    if rank is not None:
        return f"rank {rank}"
    if local_rank is not None:
        return f"node {node} local rank {local_rank}" if node else f"local rank {local_rank}"
    return None


def _writer_order(w: str) -> tuple[int, str]:
    tail = w.rsplit(" ", 1)[-1]
    return (int(tail) if tail.isdigit() else 1 << 30, w)


def _few(ws: list[str], n: int = 6) -> str:
    ws = sorted(ws, key=_writer_order)
    if len(ws) <= n:
        return ", ".join(ws)
    return ", ".join(ws[:n]) + f" and {len(ws) - n} more"


_NODE_RANK = re.compile(r"--node[_-]rank[= ]+(\d{1,5})\b")
_NPROC = re.compile(r"--nproc[_-]per[_-]node[= ]+(\d{1,4})\b")
_NNODES = re.compile(r"--nnodes[= ]+(\d{1,5})(?::(\d{1,5}))?\b")


@dataclass(frozen=True)
class Launch:
    """What a launcher command line echoed at the top of a log says (``set -x``, a job script)."""

    node_rank: int | None = None
    nproc_per_node: int | None = None
    single_node: bool = False
    evidence: str = ""

    def global_rank(self, local_rank: int) -> tuple[int, str] | None:
        if self.node_rank is not None and self.nproc_per_node is not None:
            r = self.node_rank * self.nproc_per_node + local_rank
            return r, (f"{self.evidence}: global rank = node_rank {self.node_rank} x nproc_per_node "
                       f"{self.nproc_per_node} + local rank {local_rank}")
        if self.single_node:
            return local_rank, f"{self.evidence}: one node, global rank = local rank"
        return None


def launch_facts(head: str) -> Launch:
    """torchrun's --node_rank / --nproc_per_node / --nnodes / --standalone from a log's first lines."""
    if "torchrun" not in head and "torch.distributed.run" not in head and "--node" not in head:
        return Launch()
    nr, npn, nn = _NODE_RANK.search(head), _NPROC.search(head), _NNODES.search(head)
    single = "--standalone" in head or (nn is not None and nn.group(1) == "1" and nn.group(2) in (None, "1"))
    if nr is None and not single:
        return Launch()
    bits = [m.group(0) for m in (nr, npn, nn) if m is not None] + (["--standalone"] if "--standalone" in head else [])
    return Launch(int(nr.group(1)) if nr else None, int(npn.group(1)) if npn else None, single,
                  "the launch command in the log (" + " ".join(bits) + ")")
