"""The lag history store: one point per group per minute for two days, for the digest's charts and comparisons.

The window store (lagbot.engine.window) keeps only the last ~30 samples per group, enough to judge behaviour but
far too short for "lag over the last 24 h" or "compared with 24 h before". This store keeps, per
(cluster, group), a time series of small points (at, total lag, lag in seconds, status, severity) at a
bounded resolution for a bounded retention.

One interface, two implementations that pass the same contract tests (tests/service/test_history_contract.py):
`MemoryHistoryStore` and `RedisHistoryStore` (per group, sorted sets of an hour each, scored by time, whose
members are versioned compact JSON; an index of chunks per group and of groups per cluster).

Error verdicts (status ERR: the cluster or the group could not be read) ARE recorded, as points with
unknown lag (`total_lag` and `max_lag_seconds` None) and status ERR: a chart then shows a gap over an
outage instead of a line drawn across it, a comparison with "24 h before" finds no number there rather than
a stale one, and the digest can tell "unreadable" from "no history".
"""

from __future__ import annotations

import json
import math
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass

import redis

from lagbot.core import keys as redis_keys
from lagbot.core.digest_config import HistoryConfig
from lagbot.core.model import GroupVerdict, Severity, Status
from lagbot.core.stored import decode_row, text
from lagbot.engine.check import CheckReport

FORMAT_VERSION = 1
DEFAULT_RETENTION = 48 * 3600.0
DEFAULT_RESOLUTION = 60


@dataclass(frozen=True, slots=True)
class LagPoint:
    """A group's lag at one instant, as the check of that instant judged it.

    `total_lag` and `max_lag_seconds` are None when unknown (no committed offset, too few samples, or
    the group could not be read: status ERR).
    """

    at: float
    total_lag: int | None
    max_lag_seconds: float | None
    status: Status
    severity: Severity


def point_of(verdict: GroupVerdict, at: float) -> LagPoint:
    """The point a verdict contributes to its group's history (ERR verdicts carry no lag)."""
    if verdict.status is Status.ERR:
        return LagPoint(at, None, None, Status.ERR, verdict.severity)
    return LagPoint(at, verdict.total_lag, verdict.max_lag_seconds, verdict.status, verdict.severity)


class HistoryStore(ABC):
    """Per (cluster, group): a time series of LagPoints, at most one per `resolution`-second bucket.

    Contract:
    - `record(report)` adds one point per verdict of the report, at `report.taken_at` (ERR verdicts as
      points with unknown lag, see the module docstring).
    - Resolution: time is cut into buckets of `resolution` seconds (`floor(at / resolution)`); a bucket
      holds at most one point per group: the one with the latest `at` (on a tie, the one recorded last).
      Recording an older point into a bucket that holds a newer one changes nothing.
    - Retention: recording a point at `t` drops that group's points older than `t - retention`; a group
      not recorded for `retention` seconds (in report time: measured at the next `record` of its cluster)
      is dropped entirely, from `groups` too. Redis keys also carry a TTL of `retention` so that a cluster
      that is never checked again does not leave its keys behind.
    - `series` returns the points with `since <= at <= until`, oldest first; an unknown group gives [].
    - `groups(cluster)` lists the groups of `cluster` that have points, sorted.
    - Reading a point written in an unknown format version raises StoredFormatError.
    """

    def __init__(self, *, retention: float = DEFAULT_RETENTION, resolution: int = DEFAULT_RESOLUTION) -> None:
        if retention <= 0:
            raise ValueError("retention must be > 0")
        if resolution < 1:
            raise ValueError("resolution must be >= 1 second")
        self.retention = retention
        self.resolution = resolution

    def bucket(self, at: float) -> int:
        return math.floor(at / self.resolution)

    @abstractmethod
    def record(self, report: CheckReport) -> None:
        """Add one point per verdict of `report`."""

    @abstractmethod
    def series_many(self, cluster: str, groups: Iterable[str], since: float, until: float) -> dict[str, list[LagPoint]]:
        """`series` of many groups at once (one round trip for Redis); every asked group is a key."""

    @abstractmethod
    def groups(self, cluster: str) -> list[str]:
        """The groups of `cluster` that have points, sorted."""

    def series(self, cluster: str, group: str, since: float, until: float) -> list[LagPoint]:
        """The group's points with `since <= at <= until`, oldest first."""
        return self.series_many(cluster, [group], since, until)[group]


class MemoryHistoryStore(HistoryStore):
    """In-process history (tests, a single replica without Redis)."""

    def __init__(self, *, retention: float = DEFAULT_RETENTION, resolution: int = DEFAULT_RESOLUTION) -> None:
        super().__init__(retention=retention, resolution=resolution)
        self._points: dict[tuple[str, str], dict[int, LagPoint]] = {}
        self._last: dict[tuple[str, str], float] = {}

    def record(self, report: CheckReport) -> None:
        for verdict in report.verdicts:
            self._add(verdict.cluster, verdict.group, point_of(verdict, report.taken_at))
        for cluster in {v.cluster for v in report.verdicts} | set(report.clusters):
            self._expire(cluster, report.taken_at - self.retention)

    def _add(self, cluster: str, group: str, point: LagPoint) -> None:
        key = (cluster, group)
        buckets = self._points.setdefault(key, {})
        held = buckets.get(self.bucket(point.at))
        if held is None or held.at <= point.at:
            buckets[self.bucket(point.at)] = point
        cutoff = point.at - self.retention
        for old in [b for b, p in buckets.items() if p.at < cutoff]:
            del buckets[old]
        self._last[key] = max(point.at, self._last.get(key, point.at))

    def _expire(self, cluster: str, cutoff: float) -> None:
        for key in [k for k, last in self._last.items() if k[0] == cluster and last < cutoff]:
            del self._last[key]
            del self._points[key]

    def series_many(self, cluster: str, groups: Iterable[str], since: float, until: float) -> dict[str, list[LagPoint]]:
        found: dict[str, list[LagPoint]] = {}
        for group in groups:
            points = self._points.get((cluster, group), {}).values()
            found[group] = sorted((p for p in points if since <= p.at <= until), key=lambda p: p.at)
        return found

    def groups(self, cluster: str) -> list[str]:
        return sorted(g for c, g in self._points if c == cluster)


# KEYS[1] = the point's chunk, KEYS[2] = the group's index of chunks, KEYS[3] = the cluster's index of groups.
# ARGV: 1 at, 2 bucket start, 3 bucket end (exclusive), 4 the point, 5 cutoff, 6 ttl (s), 7 group, 8 the point's
# chunk number, 9 the cutoff's chunk number, 10 chunk key before the number, 11 chunk key after the number.
# The bucket keeps the newest point: a point already there with a later time wins; else it is replaced.
# Chunks wholly before the cutoff are deleted; the cutoff's own chunk is trimmed to the cutoff.
_RECORD = """
local newer = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. ARGV[1], '(' .. ARGV[3], 'LIMIT', 0, 1)
if #newer == 0 then
    redis.call('ZREMRANGEBYSCORE', KEYS[1], ARGV[2], ARGV[1])
    redis.call('ZADD', KEYS[1], ARGV[1], ARGV[4])
end
redis.call('EXPIRE', KEYS[1], ARGV[6])
redis.call('ZADD', KEYS[2], ARGV[8], ARGV[8])
local old = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[9])
for _, chunk in ipairs(old) do
    redis.call('DEL', ARGV[10] .. chunk .. ARGV[11])
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[9])
redis.call('ZREMRANGEBYSCORE', ARGV[10] .. ARGV[9] .. ARGV[11], '-inf', '(' .. ARGV[5])
redis.call('EXPIRE', KEYS[2], ARGV[6])
local last = redis.call('ZSCORE', KEYS[3], ARGV[7])
if not last or tonumber(last) < tonumber(ARGV[1]) then
    redis.call('ZADD', KEYS[3], ARGV[1], ARGV[7])
end
redis.call('EXPIRE', KEYS[3], ARGV[6])
return #newer == 0 and 1 or 0
"""

CHUNK_BUCKETS = 60
"""Buckets per Redis chunk: small sorted sets of short members stay in Redis's compact listpack encoding
(at most 128 entries of at most 64 bytes by default), about 3.5x less memory than one big sorted set."""


class RedisHistoryStore(HistoryStore):
    """Redis history, in chunks of CHUNK_BUCKETS buckets (an hour at the default resolution) per group:

    - `<prefix>:history:<cluster>:<chunk>:<group>`: a sorted set of points (versioned JSON) scored by time;
    - `<prefix>:history-chunks:<cluster>:<group>`: the group's chunk numbers (a sorted set);
    - `<prefix>:history-groups:<cluster>`: the cluster's groups, scored by their newest point.
    Names in keys are escaped (lagbot.core.keys), so no group name makes another group's key.

    `record` runs one small script per group (bucket replacement and trimming are atomic), all pipelined:
    one round trip per report whatever the number of groups. Reading is two pipelined round trips.
    Measured in bench/digest.py: about 50 bytes of Redis memory per point.
    """

    def __init__(
        self,
        client: redis.Redis,
        *,
        retention: float = DEFAULT_RETENTION,
        resolution: int = DEFAULT_RESOLUTION,
    ) -> None:
        super().__init__(retention=retention, resolution=resolution)
        self._redis = client
        self._record = client.register_script(_RECORD)
        self.chunk_span = CHUNK_BUCKETS * resolution

    def chunk(self, at: float) -> int:
        return math.floor(at / self.chunk_span)

    @staticmethod
    def chunk_key(cluster: str, chunk: int, group: str) -> str:
        return redis_keys.history_chunk(cluster, chunk, group)

    @staticmethod
    def chunks_key(cluster: str, group: str) -> str:
        return redis_keys.history_chunks(cluster, group)

    @staticmethod
    def index_key(cluster: str) -> str:
        return redis_keys.history_groups(cluster)

    def record(self, report: CheckReport) -> None:
        ttl = max(1, math.ceil(self.retention + self.chunk_span))
        cutoff = report.taken_at - self.retention
        clusters = sorted({v.cluster for v in report.verdicts} | set(report.clusters))
        pipe = self._redis.pipeline(transaction=False)
        for verdict in report.verdicts:
            self._record_point(pipe, verdict.cluster, verdict.group, point_of(verdict, report.taken_at), cutoff, ttl)
        pipe.execute()
        for cluster in clusters:
            self._expire(cluster, cutoff)

    def _record_point(
        self, pipe: redis.client.Pipeline, cluster: str, group: str, point: LagPoint, cutoff: float, ttl: int
    ) -> None:
        bucket, chunk = self.bucket(point.at), self.chunk(point.at)
        before, after = redis_keys.history_chunk_affixes(cluster, group)
        args: list[str | int] = [
            repr(point.at), bucket * self.resolution, (bucket + 1) * self.resolution, encode_point(point),
            repr(cutoff), ttl, group, chunk, self.chunk(cutoff), before, after,
        ]  # fmt: skip
        keys = [self.chunk_key(cluster, chunk, group), self.chunks_key(cluster, group), self.index_key(cluster)]
        self._record(keys=keys, args=args, client=pipe)

    def _expire(self, cluster: str, cutoff: float) -> None:
        index = self.index_key(cluster)
        gone = [text(n) for n in self._redis.zrangebyscore(index, "-inf", f"({cutoff!r}")]
        if not gone:
            return
        reads = self._redis.pipeline(transaction=False)
        for group in gone:
            reads.zrange(self.chunks_key(cluster, group), 0, -1)
        pipe = self._redis.pipeline(transaction=True)
        for group, chunks in zip(gone, reads.execute(), strict=True):
            pipe.delete(self.chunks_key(cluster, group), *(self.chunk_key(cluster, int(c), group) for c in chunks))
        pipe.zrem(index, *gone)
        pipe.execute()

    def series_many(self, cluster: str, groups: Iterable[str], since: float, until: float) -> dict[str, list[LagPoint]]:
        names = list(groups)
        pipe = self._redis.pipeline(transaction=False)
        for group in names:
            pipe.zrangebyscore(self.chunks_key(cluster, group), self.chunk(since), self.chunk(until))
        chunks_of = [[int(c) for c in found] for found in pipe.execute()]
        pipe = self._redis.pipeline(transaction=False)
        for group, chunks in zip(names, chunks_of, strict=True):
            for chunk in chunks:
                pipe.zrangebyscore(self.chunk_key(cluster, chunk, group), repr(since), repr(until))
        answers = iter(pipe.execute())
        found: dict[str, list[LagPoint]] = {}
        for group, chunks in zip(names, chunks_of, strict=True):
            found[group] = [decode_point(raw) for _ in chunks for raw in next(answers)]
        return found

    def groups(self, cluster: str) -> list[str]:
        return sorted(text(n) for n in self._redis.zrange(self.index_key(cluster), 0, -1))


STATUS_CODES = {"OK": 0, "WARN": 1, "STALL": 2, "REWIND": 3, "STOP": 4, "ERR": 5}
SEVERITY_CODES = {"OK": 0, "WARN": 1, "CRITICAL": 2, "PAGE": 3}
"""Part of the stored format (version 1), independent of the enums' own numbering."""
_STATUS_NAMES = {code: name for name, code in STATUS_CODES.items()}
_SEVERITY_NAMES = {code: name for name, code in SEVERITY_CODES.items()}


def encode_point(point: LagPoint) -> str:
    """Versioned compact JSON of one point: [version, at, total lag, lag seconds, status code, severity code].

    `at` is kept to the millisecond and lag seconds to the millisecond, so a member stays under the 64
    bytes that keep a chunk in Redis's compact encoding.
    """
    seconds = None if point.max_lag_seconds is None else round(point.max_lag_seconds, 3)
    row = [FORMAT_VERSION, round(point.at, 3), point.total_lag, seconds,
           STATUS_CODES[point.status.name], SEVERITY_CODES[point.severity.name]]  # fmt: skip
    return json.dumps(row, separators=(",", ":"))


def decode_point(raw: bytes | str) -> LagPoint:
    """The point of `encode_point`; raises StoredFormatError for any other format version."""
    at, lag, seconds, status, severity = decode_row("history point", FORMAT_VERSION, raw)
    return LagPoint(
        at=float(at),
        total_lag=lag,
        max_lag_seconds=seconds,
        status=Status[_STATUS_NAMES[status]],
        severity=Severity[_SEVERITY_NAMES[severity]],
    )


def make_history(config: HistoryConfig, client: redis.Redis | None) -> HistoryStore:
    """The history store the settings ask for: in Redis when there is a client, else in memory."""
    retention, resolution = config.retention, int(config.resolution)
    if client is None:
        return MemoryHistoryStore(retention=retention, resolution=resolution)
    return RedisHistoryStore(client, retention=retention, resolution=resolution)
