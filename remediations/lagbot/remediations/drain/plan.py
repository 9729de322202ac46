"""The pure part of the drain: which offsets to read, in which chunks, how long it will take, what was written.

No I/O here. The remediation (`lagbot.remediations.drain.remediation`) reads the group's committed offsets and log
ends from the broker (through the collector's verdict), this module turns them into ranges, and the
Spark job (`lagbot.remediations.drain.job`) reads exactly those ranges and reports them in a `Manifest`.

Decisions, each with its reason:
- A partition is drained from its committed offset to its log end: `[committed, log_end)`, as
  `kafka-consumer-groups.sh` computes lag. Ranges are by offset, not by count: compaction and
  transaction markers leave gaps, so a range of N offsets holds at most N messages.
- Nothing committed (lag unknown): by default drain from the log start (`uncommitted="log_start"`):
  whatever the group's `auto.offset.reset`, no message it could still read is left behind, and the
  plan says so. `uncommitted="skip"` leaves such partitions alone.
- Committed below the log start (retention deleted messages before the group read them): start at
  the log start and report how many offsets were lost; they cannot be read by anyone.
- Committed at or past the log end: nothing to drain.
- Chunks start at the drain start and are `chunk` offsets long; the last one ends at the log end.
"""

from __future__ import annotations

import hashlib
import heapq
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from lagbot.core import codec

MANIFEST_VERSION = 1

Uncommitted = Literal["log_start", "skip"]


@dataclass(frozen=True, slots=True)
class PartitionBacklog:
    """What the broker says about one partition of the group: the input of the plan."""

    topic: str
    partition: int
    committed: int | None
    log_start: int
    log_end: int


@dataclass(frozen=True, slots=True)
class PartitionDrain:
    """What the drain will do with one partition: read `[start, end)`, then commit `end`.

    `committed` is the group's offset when the plan was made (None: nothing committed); `lost` counts
    offsets retention deleted before the group read them; `origin` says where `start` comes from.
    """

    topic: str
    partition: int
    committed: int | None
    start: int
    end: int
    lost: int = 0
    origin: Literal["committed", "log_start_uncommitted", "log_start_deleted"] = "committed"

    @property
    def offsets(self) -> int:
        return self.end - self.start


@dataclass(frozen=True, slots=True, order=True)
class OffsetRange:
    """`[start, end)` of one partition: the work of one Spark task and one output of the sink."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def offsets(self) -> int:
        """Offsets in the range: an upper bound of its messages (compaction and markers leave gaps)."""
        return self.end - self.start

    @property
    def label(self) -> str:
        """The range's name in the sink (`offset_range=...`): zero-padded so names sort by offset."""
        return f"{self.start:020d}-{self.end:020d}"

    def overlaps(self, other: OffsetRange) -> bool:
        same = (self.topic, self.partition) == (other.topic, other.partition)
        return same and self.start < other.end and other.start < self.end

    def to_list(self) -> list[Any]:
        return [self.topic, self.partition, self.start, self.end]

    @classmethod
    def from_list(cls, raw: Sequence[Any]) -> OffsetRange:
        topic, partition, start, end = raw
        return cls(str(topic), int(partition), int(start), int(end))

    @classmethod
    def from_label(cls, topic: str, partition: int, label: str) -> OffsetRange | None:
        """The range a sink directory name stands for, or None if the name is not one of ours."""
        start, sep, end = label.partition("-")
        if not sep or not start.isdigit() or not end.isdigit():
            return None
        return cls(topic, partition, int(start), int(end))


def partition_drain(backlog: PartitionBacklog, *, uncommitted: Uncommitted = "log_start") -> PartitionDrain | None:
    """What to read from one partition, or None when there is nothing to drain (see the module's decisions)."""
    b = backlog
    if b.committed is None:
        if uncommitted == "skip" or b.log_end <= b.log_start:
            return None
        return PartitionDrain(b.topic, b.partition, None, b.log_start, b.log_end, 0, "log_start_uncommitted")
    if b.committed >= b.log_end:
        return None
    if b.committed < b.log_start:
        lost = b.log_start - b.committed
        if b.log_start >= b.log_end:
            return None
        return PartitionDrain(b.topic, b.partition, b.committed, b.log_start, b.log_end, lost, "log_start_deleted")
    return PartitionDrain(b.topic, b.partition, b.committed, b.committed, b.log_end)


def split(drain: PartitionDrain, chunk: int) -> list[OffsetRange]:
    """`[start, end)` cut into ranges of `chunk` offsets (the last one shorter), in offset order."""
    if chunk < 1:
        raise ValueError(f"chunk must be at least 1, not {chunk}")
    return [
        OffsetRange(drain.topic, drain.partition, start, min(start + chunk, drain.end))
        for start in range(drain.start, drain.end, chunk)
    ]


@dataclass(frozen=True)
class DrainLayout:
    """Every partition's drain and every range, ordered by (topic, partition, start)."""

    partitions: tuple[PartitionDrain, ...]
    ranges: tuple[OffsetRange, ...]

    @property
    def offsets(self) -> int:
        return sum(p.offsets for p in self.partitions)

    @property
    def lost(self) -> int:
        return sum(p.lost for p in self.partitions)

    def ends(self) -> dict[tuple[str, int], int]:
        """The offsets to commit once every range is written."""
        return {(p.topic, p.partition): p.end for p in self.partitions}


def layout(backlogs: Iterable[PartitionBacklog], *, chunk: int, uncommitted: Uncommitted = "log_start") -> DrainLayout:
    """Ranges for every partition that has something to drain."""
    drains = [d for b in backlogs if (d := partition_drain(b, uncommitted=uncommitted)) is not None]
    drains.sort(key=lambda d: (d.topic, d.partition))
    ranges = [r for d in drains for r in split(d, chunk)]
    return DrainLayout(tuple(drains), tuple(ranges))


def estimate_seconds(ranges: Sequence[OffsetRange], *, slots: int, task_rate: float, startup: float) -> float:
    """How long the drain takes: ranges handed to `slots` tasks, largest first (Spark runs them as slots free).

    Each range takes offsets / task_rate seconds; the answer is `startup` plus the busiest slot's time,
    so one huge range is never hidden by many idle slots. Zero ranges take `startup` alone.
    """
    if slots < 1 or task_rate <= 0:
        raise ValueError("slots must be >= 1 and task_rate > 0")
    loads = [0.0] * min(slots, max(1, len(ranges)))
    for size in sorted((r.offsets for r in ranges), reverse=True):
        heapq.heappush(loads, heapq.heappop(loads) + size / task_rate)
    return startup + max(loads)


def plan_id(cluster: str, group: str, sink: str, ranges: Sequence[OffsetRange]) -> str:
    """A short deterministic id of a drain: the same group, sink and ranges give the same id (and manifest)."""
    canonical = json.dumps([cluster, group, sink, [r.to_list() for r in ranges]], separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


# ---------------------------------------------------------------------------------------------------
# The manifest: what the job wrote, range by range
# ---------------------------------------------------------------------------------------------------

RangeStatus = Literal["written", "failed", "not_written"]


@dataclass(frozen=True, slots=True)
class RangeReceipt:
    """One range as the job left it. `count`/`bytes` are messages and key+value bytes actually read.

    `written`: the range's output is durable (Parquet committed, or every replayed message acknowledged);
    `failed`: its task failed (replay: some messages may have been produced); `not_written`: no output
    of this run (the job stopped before, or the whole write was aborted).
    """

    topic: str
    partition: int
    start: int
    end: int
    status: RangeStatus
    count: int = 0
    bytes: int = 0
    first_offset: int | None = None
    last_offset: int | None = None
    error: str | None = None

    @property
    def range(self) -> OffsetRange:
        return OffsetRange(self.topic, self.partition, self.start, self.end)


@dataclass(frozen=True)
class Manifest:
    """Every range of one drain run with its status; `complete` only when every range is written.

    It is written after the outputs and before any offset moves: the group's offsets are advanced
    only when a complete manifest is durable, so the manifest never claims less than the sink holds.
    """

    plan_id: str
    cluster: str
    group: str
    sink: str
    started_at: float
    finished_at: float
    ranges: tuple[RangeReceipt, ...]
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return self.error is None and all(r.status == "written" for r in self.ranges)

    @property
    def messages(self) -> int:
        return sum(r.count for r in self.ranges if r.status == "written")

    @property
    def total_bytes(self) -> int:
        """Key + value bytes of the written ranges."""
        return sum(r.bytes for r in self.ranges if r.status == "written")

    def written(self) -> list[RangeReceipt]:
        return [r for r in self.ranges if r.status == "written"]

    def to_json(self) -> str:
        """The manifest's stored document, with its totals (`complete`, `messages`, `bytes`) for other readers."""
        totals = {"complete": self.complete, "messages": self.messages, "bytes": self.total_bytes}
        return MANIFEST_CODEC.encode(self, derived=totals)

    @classmethod
    def from_json(cls, raw: str | bytes) -> Manifest:
        """Raises StoredFormatError (lagbot.core.stored) when it is not a manifest lagbot wrote."""
        return MANIFEST_CODEC.decode(raw)


MANIFEST_CODEC = codec.register(codec.Codec("drain manifest", Manifest, MANIFEST_VERSION))
