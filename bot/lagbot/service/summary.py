"""The leader's summary of each check in Redis, so that any replica answers `/lag top` without judging the windows.

After every check that read its cluster, the leader writes one document per cluster under `lagbot:summary:<cluster>`
(lagbot.core.stored's codec, format version `SUMMARY_VERSION`): when the check was taken and, per group, what `/lag
top` shows (`GroupSummary`: severity, status, lag, lag in seconds, trend). A replica that does not lead reads that one
key (about 60 bytes a group with short names) instead of every group's window: at 2,000 groups x 50 partitions,
0.014-0.017 s against 1.9-11 s judging the windows (bench/slack_side.py).

Its contract is `Summaries`; `SummaryStore` keeps them in Redis, `MemorySummaries` in this process (tests/service/
test_store_contracts.py checks both the same way).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, NamedTuple

import redis

from lagbot.core import codec
from lagbot.core import keys as redis_keys
from lagbot.core.codec import ByName
from lagbot.core.model import GroupSummary, GroupVerdict, Severity, Status, Trend

SUMMARY_VERSION = 1


def summary_key(cluster: str) -> str:
    return redis_keys.summary(cluster)


@dataclass(frozen=True)
class StoredSummary:
    """One cluster's summary as the leader stored it."""

    cluster: str
    taken_at: float
    groups: list[GroupSummary]


class SummaryRow(NamedTuple):
    """One group of a stored summary: a JSON list (names rather than numbers), kept small."""

    group: str
    severity: Annotated[Severity, ByName(Severity)]
    status: Annotated[Status, ByName(Status)]
    lag: int | None
    seconds: float | None
    trend: Trend


@dataclass(frozen=True)
class SummaryDocument:
    """What is stored under a cluster's summary key."""

    cluster: str
    taken_at: float
    groups: tuple[SummaryRow, ...]

    @classmethod
    def of(cls, cluster: str, taken_at: float, verdicts: Sequence[GroupVerdict]) -> SummaryDocument:
        rows = (
            SummaryRow(v.group, v.severity, v.status, v.total_lag, v.max_lag_seconds, v.trend)
            for v in verdicts
            if v.cluster == cluster
        )
        return cls(cluster, taken_at, tuple(rows))

    def summary(self) -> StoredSummary:
        groups = [GroupSummary(self.cluster, *row) for row in self.groups]
        return StoredSummary(cluster=self.cluster, taken_at=self.taken_at, groups=groups)


SUMMARY_CODEC = codec.register(codec.Codec("stored summary", SummaryDocument, SUMMARY_VERSION))


class Summaries(ABC):
    """The leader's summary of each cluster's latest check, read by every replica for `/lag top`.

    Contract: `put(cluster, taken_at, verdicts)` replaces the cluster's summary with one row per verdict of that
    cluster (verdicts of other clusters are left out), in the verdicts' order; `get(cluster)` is the summary last
    put, or None when there is none or it is older than the store's ttl (seconds after its last `put`). What
    `get` gives back is what the stored document holds: the same rows whichever store keeps it.
    """

    @abstractmethod
    def put(self, cluster: str, taken_at: float, verdicts: Sequence[GroupVerdict]) -> None: ...

    @abstractmethod
    def get(self, cluster: str) -> StoredSummary | None:
        """Raises StoredFormatError (lagbot.core.stored) when what is kept is not a summary lagbot wrote."""


class MemorySummaries(Summaries):
    """The summaries in this process, kept as the Redis store keeps them (their JSON); `clock` ages them."""

    def __init__(self, *, ttl: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl = ttl
        self._clock = clock
        self._kept: dict[str, tuple[float, str]] = {}

    def put(self, cluster: str, taken_at: float, verdicts: Sequence[GroupVerdict]) -> None:
        document = SUMMARY_CODEC.encode(SummaryDocument.of(cluster, taken_at, verdicts))
        self._kept[cluster] = (self._clock() + self._ttl, document)

    def get(self, cluster: str) -> StoredSummary | None:
        until, raw = self._kept.get(cluster, (0.0, ""))
        if self._clock() >= until:
            self._kept.pop(cluster, None)
            return None
        return SUMMARY_CODEC.decode(raw, kind=f"the summary of cluster {cluster!r}").summary()


class SummaryStore(Summaries):
    """Reads and writes the per-cluster summaries; a summary lives `ttl` seconds after its last write."""

    def __init__(self, client: redis.Redis, *, ttl: float) -> None:
        self._redis = client
        self._ttl_ms = max(1, int(ttl * 1000))

    def put(self, cluster: str, taken_at: float, verdicts: Sequence[GroupVerdict]) -> None:
        document = SUMMARY_CODEC.encode(SummaryDocument.of(cluster, taken_at, verdicts))
        self._redis.set(summary_key(cluster), document, px=self._ttl_ms)

    def get(self, cluster: str) -> StoredSummary | None:
        """The cluster's stored summary, or None when there is none.

        Raises:
            StoredFormatError: the key holds another format version, or not a summary.
        """
        raw = self._redis.get(summary_key(cluster))
        if raw is None:
            return None
        return SUMMARY_CODEC.decode(raw, kind=f"the summary of cluster {cluster!r}").summary()
