"""Shared types: what the collector sees, what the window keeps, what the evaluator and diagnosis conclude.

Every stage of the pipeline (collect -> window -> evaluate -> diagnose -> render) imports from here and
from nowhere else upstream, so the data flows one way. Everything is an immutable dataclass: cheap to
build by the thousand per cycle and easy to hand-make in tests.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields, make_dataclass
from enum import IntEnum, StrEnum
from typing import TYPE_CHECKING, overload

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

TopicPartition = tuple[str, int]
"""(topic, partition): the key of every per-partition map."""


class Status(IntEnum):
    """Behavioural status of a partition or group, ordered so that the worst is the `max`.

    The evaluator checks the worst outcome first (STOP, REWIND, STALL, WARN), so the order here
    matches the order of the rules: a partition gets the first rule that fires.
    """

    OK = 0
    WARN = 1
    STALL = 2
    REWIND = 3
    STOP = 4
    ERR = 5


class Severity(IntEnum):
    """How loud to be about a group: the exit code of `lagbot check` and, later, the incident level."""

    OK = 0
    WARN = 1
    CRITICAL = 2
    PAGE = 3

    @property
    def label(self) -> str:
        return self.name.lower()


class Trend(StrEnum):
    """Where a group's total lag is heading: over its recent known totals (lagbot.engine.evaluate `trend`), or against
    24 h before (the digest). UNKNOWN with fewer than two known totals."""

    GROWING = "growing"
    SHRINKING = "shrinking"
    STEADY = "steady"
    UNKNOWN = "unknown"


class GroupState(StrEnum):
    """Consumer group state as the coordinator reports it (ListGroups / DescribeGroups)."""

    STABLE = "Stable"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    EMPTY = "Empty"
    DEAD = "Dead"
    RECONCILING = "Reconciling"
    """A group on the consumer protocol (KIP-848) whose members are taking on a new assignment: the broker's
    Assigning or Reconciling, which librdkafka reports alike (as an unknown state)."""
    UNKNOWN = "Unknown"

    @property
    def is_active(self) -> bool:
        """True when the group has (or is getting) live members."""
        return self is GroupState.STABLE or self.is_rebalancing

    @property
    def is_rebalancing(self) -> bool:
        return self in (GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE, GroupState.RECONCILING)


# ---------------------------------------------------------------------------------------------------
# What the collector reads from the cluster in one cycle
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Member:
    """One live member of a consumer group and the partitions it owns."""

    member_id: str
    client_id: str
    host: str
    assignment: tuple[TopicPartition, ...] = ()

    def owner_json(self) -> dict[str, str]:
        return {"member_id": self.member_id, "client_id": self.client_id, "host": self.host}


@dataclass(frozen=True, slots=True)
class GroupSnapshot:
    """One consumer group as seen at one instant.

    `committed` maps every partition the group is interested in (committed or assigned) to its
    committed offset, or None where nothing is committed yet. `error` is set when this group alone
    could not be read (its coordinator failed); the rest of the cycle is still valid.
    """

    group: str
    state: GroupState
    members: tuple[Member, ...]
    committed: dict[TopicPartition, int | None]
    assignor: str = ""
    generation: int | None = None
    error: str | None = None

    def owner_of(self, tp: TopicPartition) -> Member | None:
        for member in self.members:
            if tp in member.assignment:
                return member
        return None

    @property
    def topics(self) -> set[str]:
        return {topic for topic, _ in self.committed}


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    """Everything read from one cluster in one check cycle.

    `log_end` and `log_start` cover every partition of every topic any selected group consumes.
    When the cluster could not be read at all, `error` holds the reason and the maps are empty.
    """

    cluster: str
    taken_at: float
    groups: dict[str, GroupSnapshot] = field(default_factory=dict)
    log_end: dict[TopicPartition, int] = field(default_factory=dict)
    log_start: dict[TopicPartition, int] = field(default_factory=dict)
    partition_counts: dict[str, int] = field(default_factory=dict)
    error: str | None = None


# ---------------------------------------------------------------------------------------------------
# What the window store keeps between cycles
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PartitionSample:
    """One observation of one partition of one group.

    `lag` is log-end - committed, clamped at 0; None (unknown) when nothing is committed. It is computed
    once here: the rules read it many times per sample and a window holds thousands of samples.
    """

    at: float
    committed: int | None
    log_end: int
    log_start: int
    lag: int | None = field(init=False, compare=False)

    def __post_init__(self) -> None:
        lag = None if self.committed is None else max(0, self.log_end - self.committed)
        object.__setattr__(self, "lag", lag)


@dataclass(frozen=True, slots=True)
class ColumnWindow:
    """What the views of one window's partitions (`ColumnSamples`) share: the sample `times`, oldest first; `blocks`,
    the offsets of each sample time as rows committed (-1 where None), log end and log start, one column per
    partition; `log_end`, the window's log ends, partitions x samples."""

    times: tuple[float, ...]
    blocks: tuple[NDArray[np.int64], ...]
    log_end: NDArray[np.int64]


class ColumnSamples(Sequence[PartitionSample]):
    """One partition's samples in a window, read-only, made from the window's arrays as they are read.

    This view is partition `index` of `window` (`ColumnWindow`, shared by the window's views). A sample is made the
    first time it is read and kept by the view: the evaluator judges most partitions from the window's arrays
    (WindowColumns) and reads the samples of the others only, so a view keeps nothing until one is read (a window
    has a view per partition, 100,000 per cycle at 2,000 groups x 50 partitions).
    The window store builds these views (lagbot.engine.window_entries), so that a window kept for 30 cycles holds arrays
    rather than one object per partition and sample. Equal to the tuple of the same samples, as a tuple is to
    another.
    """

    __slots__ = ("_cache", "_index", "_window")

    def __init__(self, window: ColumnWindow, index: int) -> None:
        self._window = window
        self._index = index
        self._cache: list[PartitionSample | None] | None = None

    @property
    def times(self) -> tuple[float, ...]:
        return self._window.times

    def __len__(self) -> int:
        return len(self._window.times)

    @overload
    def __getitem__(self, i: int) -> PartitionSample: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[PartitionSample]: ...
    def __getitem__(self, i: int | slice) -> PartitionSample | Sequence[PartitionSample]:
        cache = self._cache
        if cache is None:
            cache = self._cache = [None] * len(self._window.times)
        found = cache[i]  # an int (negative ones too) or a slice, checked by the list
        if found.__class__ is PartitionSample:
            return found
        if isinstance(i, slice):
            start, stop, step = i.indices(len(cache))
            if (start, stop, step) == (0, len(cache), 1):
                return self  # the whole window, as a tuple gives itself
            return tuple([self[k] for k in range(start, stop, step)])
        at = i % len(cache)
        block, p = self._window.blocks[at], self._index
        committed = block.item(0, p)
        sample = PartitionSample(
            self._window.times[at], None if committed < 0 else committed, block.item(1, p), block.item(2, p)
        )
        cache[at] = sample
        return sample

    def log_ends(self) -> list[int]:
        """The log end of every sample, oldest first, without making the samples."""
        ends: list[int] = self._window.log_end[self._index].tolist()
        return ends

    def __iter__(self) -> Iterator[PartitionSample]:
        for i in range(len(self._window.times)):
            yield self[i]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ColumnSamples | tuple):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return repr(tuple(self))


@dataclass(frozen=True, slots=True)
class GroupSample:
    """One observation of a group's membership, to spot rebalance churn."""

    at: float
    state: GroupState
    member_ids: tuple[str, ...]
    generation: int | None = None


@dataclass(frozen=True, slots=True)
class WindowColumns:
    """A window's partitions as arrays, one row per partition and one column per group sample time.

    Only for a window in which every sample time saw exactly the partitions of `tps` (the usual case);
    the window store builds it, so that the evaluator can judge all partitions of a group with a few
    array operations instead of a Python loop over every sample. It holds the same numbers as the
    window's `partitions`; where `known` is False the committed offset is None (and `committed` holds 0).
    `last_log_start` is each partition's log start at the newest sample (the only one a verdict reports).
    """

    times: tuple[float, ...]
    tps: tuple[TopicPartition, ...]
    committed: NDArray[np.int64]
    log_end: NDArray[np.int64]
    known: NDArray[np.bool_]
    last_log_start: NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class GroupWindow:
    """The last N observations of one group: its membership and each of its partitions, oldest first.

    `latest` is the newest snapshot of the group (members, owners), needed for ownership; the window
    itself only keeps what changes over time. `columns` is the same window as arrays where the store
    could build them (see WindowColumns); it is a faster route to the same verdicts, never other numbers.
    """

    cluster: str
    group: str
    samples: tuple[GroupSample, ...]
    partitions: dict[TopicPartition, Sequence[PartitionSample]]
    latest: GroupSnapshot | None = None
    columns: WindowColumns | None = field(default=None, compare=False, repr=False)


# ---------------------------------------------------------------------------------------------------
# What the evaluator and diagnosis conclude
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PartitionVerdict:
    """The evaluator's judgement of one partition at `now`."""

    topic: str
    partition: int
    committed: int | None
    log_end: int
    log_start: int
    lag: int | None
    lag_seconds: float | None
    lag_seconds_lower_bound: bool
    """True when the committed offset is older than the whole window: lag_seconds is 'at least'."""
    status: Status
    reason: str
    produce_rate: float | None
    consume_rate: float | None
    owner: Member | None
    sibling_commits: int = 0
    """Commits of other members' partitions seen while this one did not move, when it was judged stuck against
    them (lagbot.engine.siblings `stuck_vs_siblings`); 0 otherwise."""
    lag_seconds_method: str | None = None
    """Which method gave `lag_seconds`: 'window' (interpolated in the window's samples), 'time_index' (in the
    broker's time index, lagbot.engine.timeindex), 'exact' (the first unconsumed record's timestamp,
    lagbot.engine.exactlag), None when unknown."""

    @property
    def tp(self) -> TopicPartition:
        return (self.topic, self.partition)

    def with_lag_seconds(self, seconds: float, lower_bound: bool, method: str) -> PartitionVerdict:
        """This verdict with another figure of lag in seconds: `dataclasses.replace` of those three fields, made
        directly (the time index may give one to every partition of every group, each cycle)."""
        return partition_verdict_of(
            self.topic, self.partition, self.committed, self.log_end, self.log_start, self.lag, seconds, lower_bound,
            self.status, self.reason, self.produce_rate, self.consume_rate, self.owner, self.sibling_commits, method,
        )  # fmt: skip


_PartitionVerdictFields = make_dataclass(
    "_PartitionVerdictFields", [(f.name, f.type, f) for f in fields(PartitionVerdict)], slots=True
)
"""PartitionVerdict's fields (the same slots, in the same order) without `frozen`: the scaffold the evaluator's
verdicts are made in. A frozen dataclass's `__init__` sets each field with a call to `object.__setattr__` (15 of
them), measured at 1.5-3.9 us per verdict against 0.3-1.1 us for the same fields unfrozen; the evaluator makes one
verdict per partition and cycle (100,000 at 2,000 groups x 50 partitions). A verdict made in the scaffold becomes a
PartitionVerdict by taking its class (the same slots, so the same memory layout: CPython allows it), before anyone
else sees it: from then on it is frozen, equal, hashed, printed and `replace`d as any PartitionVerdict."""
_set_class = object.__setattr__


def partition_verdict_of(
    topic: str,
    partition: int,
    committed: int | None,
    log_end: int,
    log_start: int,
    lag: int | None,
    lag_seconds: float | None,
    lag_seconds_lower_bound: bool,
    status: Status,
    reason: str,
    produce_rate: float | None,
    consume_rate: float | None,
    owner: Member | None,
    sibling_commits: int,
    lag_seconds_method: str | None,
) -> PartitionVerdict:
    """`PartitionVerdict(...)` of every field by position, made in the unfrozen scaffold (see
    `_PartitionVerdictFields`): the same verdict, equal to the one its constructor makes."""
    verdict = _PartitionVerdictFields(
        topic, partition, committed, log_end, log_start, lag, lag_seconds, lag_seconds_lower_bound, status, reason,
        produce_rate, consume_rate, owner, sibling_commits, lag_seconds_method,
    )  # fmt: skip
    _set_class(verdict, "__class__", PartitionVerdict)
    made: PartitionVerdict = verdict
    return made


def partition_verdicts(*columns: Iterable[object]) -> list[PartitionVerdict]:
    """PartitionVerdicts made of columns, one per field in PartitionVerdict's order (as `partition_verdict_of` takes
    them), one verdict per row: the evaluator's verdicts of a group's partitions, made in one go."""
    made = list(map(_PartitionVerdictFields, *columns))
    for verdict in made:
        _set_class(verdict, "__class__", PartitionVerdict)
    verdicts: list[PartitionVerdict] = made
    return verdicts


class CauseKind(StrEnum):
    """The stable names of the causes lagbot.engine.diagnose finds (its docstring says what each means). A
    remediation package names the ones it answers (its `answers` module: lagbot.remediations.packages); other tools
    parse them."""

    DATA_LOSS = "data_loss"
    RETENTION_RISK = "retention_risk"
    STUCK_CONSUMER = "stuck_consumer"
    NO_ACTIVE_MEMBERS = "no_active_members"
    UNASSIGNED_PARTITIONS = "unassigned_partitions"
    HOT_PARTITION = "hot_partition"
    PARTITION_CEILING = "partition_ceiling"
    THROUGHPUT_DEFICIT = "throughput_deficit"
    PRODUCER_BURST = "producer_burst"
    REBALANCE_CHURN = "rebalance_churn"
    IDLE_MEMBERS = "idle_members"


class Fact(StrEnum):
    """What the diagnosis knows of a cause that decides its remedy. The engine names no action: each remediation
    package says which causes it answers from their kind and these facts (lagbot.remediations.packages), and the
    service joins the two (lagbot.service.remedies)."""

    SLOW_OWNER = "slow_owner"
    """hot_partition: its owner reads it far slower than the others read theirs (not its keys written faster)."""
    POISON = "poison"
    """Stuck at one record its owner cannot get past (it reads its other partitions): a restart meets the same
    record, and so would more members."""
    ONGOING = "ongoing"
    """producer_burst: the burst goes on now (more is coming)."""
    SCALABLE = "scalable"
    """Another member would own a partition of its own: not every partition has a member of its own yet
    (lagbot.engine.agreement.at_partition_ceiling)."""
    CHURN_EXPLAINS = "churn_explains"
    """A rebalance churn with a mechanism (a crash loop, poll-interval kick-outs) explains it: members die or are kicked
    out, so a restarted member or another one would go the same way."""
    RATES_UNTRUSTED = "rates_untrusted"
    """A capacity cause (partition_ceiling, throughput_deficit) whose rates span a membership change, a rebalance in
    which no member reads: neither more members nor a drain is sized from them."""


@dataclass(frozen=True, slots=True)
class Cause:
    """A likely cause of a group's lag, with the numbers that support it.

    `kind` is stable (other tools parse it); `rank` orders causes, 1 is the most likely; `confidence` is 0..1;
    `facts` are what decides its remedy (`Fact`): the cause names no action (lagbot.service.remedies joins it to the
    remediation that answers it).
    """

    kind: str
    explanation: str
    confidence: float
    rank: int = 0
    evidence: dict[str, object] = field(default_factory=dict)
    facts: frozenset[Fact] = frozenset()


@dataclass(frozen=True, slots=True)
class GroupVerdict:
    """The evaluator's and diagnosis' judgement of one group at `now`."""

    cluster: str
    group: str
    state: GroupState
    status: Status
    severity: Severity
    severity_reason: str
    partitions: tuple[PartitionVerdict, ...]
    total_lag: int | None
    max_lag_seconds: float | None
    produce_rate: float | None
    consume_rate: float | None
    eta_seconds: float | None
    """Seconds to zero lag at the current rates; None means never (consumers fall behind) or unknown."""
    trend: Trend
    """'growing', 'shrinking', 'steady' or 'unknown'."""
    members: tuple[Member, ...] = ()
    causes: tuple[Cause, ...] = ()
    error: str | None = None
    baseline_produce: tuple[tuple[float, float | None], ...] = ()
    """(horizon seconds, the group's produce rate over it, msg/s) from the broker's time index, shortest horizon
    first; None where a partition has no data that old. Empty when the index was not asked."""
    born_at: float | None = None
    """When the group's oldest retained record was written, from the time index, when its partitions' history is
    shorter than the horizons (a young topic): everything they hold was written since (lagbot.engine.burst)."""
    drain_rate: float | None = None
    """Messages/s by which the total lag falls over the trend's recent points (negative: it grows); the one rate
    behind `trend`, `eta_seconds` and the thread's "draining at", so they never disagree. None when unknown."""


@dataclass(frozen=True, slots=True)
class GroupSummary:
    """A group's standing at a check, all that `/lag top` shows of it: what the leader stores for every replica."""

    cluster: str
    group: str
    severity: Severity
    status: Status
    total_lag: int | None
    max_lag_seconds: float | None
    trend: Trend

    @classmethod
    def of(cls, verdict: GroupVerdict) -> GroupSummary:
        return cls(
            cluster=verdict.cluster,
            group=verdict.group,
            severity=verdict.severity,
            status=verdict.status,
            total_lag=verdict.total_lag,
            max_lag_seconds=verdict.max_lag_seconds,
            trend=verdict.trend,
        )
