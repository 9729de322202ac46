"""The long-term tier of the lag history: per group, one min/max/last rollup per `rollup_resolution` seconds.

The minute points (lagbot.service.history) are kept for days; a rollup per 15 minutes (by default) is kept for
weeks, at a bounded cost (bench/history_bytes.py). A rollup keeps what the report, the patterns and the backtest
need of its points: how many there were and how many at each trouble level (time in WARN, CRITICAL+, unreadable),
the lag's minimum, maximum (the peak is never averaged away) and last value, the lag in seconds' maximum and
last, and the worst status and severity.

`TieredHistoryStore` puts the two tiers behind the one `HistoryStore` interface: `record` feeds both, `series`
answers with the minute points where they are kept and, before them, one point per rollup carrying its peak
(`peak_point`). The digest (24 h) reads minute points only, as before.

Redis layout (`rollup_keys`, built by lagbot.core.keys): per group, a sorted set per day of rollups scored by
their newest point's time, whose members are versioned compact JSON of integers (under 64 bytes: the compact
listpack encoding); an index of days per group and of groups per cluster. Folding a point into its rollup is one
small Lua script (cjson), pipelined for all the groups of a report: one round trip per check.
"""

from __future__ import annotations

import json
import math
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import redis

from lagbot.core import keys
from lagbot.core.digest_config import HistoryConfig
from lagbot.core.model import Severity, Status
from lagbot.core.stored import decode_row, text
from lagbot.engine.check import CheckReport
from lagbot.service.history import (
    SEVERITY_CODES,
    STATUS_CODES,
    HistoryStore,
    LagPoint,
    MemoryHistoryStore,
    RedisHistoryStore,
    point_of,
)

ROLLUP_VERSION = 1
DAY = 86_400.0
_STATUS_NAMES = {code: name for name, code in STATUS_CODES.items()}
_SEVERITY_NAMES = {code: name for name, code in SEVERITY_CODES.items()}


@dataclass(frozen=True, slots=True)
class Rollup:
    """The points of one group within one rollup bucket [start, start + width).

    `at` is the newest point's time. Lags are None when no point of the bucket had one (all unreadable).
    """

    start: float
    width: float
    at: float
    points: int
    warn: int
    """Points whose severity was WARN."""
    critical: int
    """Points whose severity was CRITICAL or PAGE."""
    unreadable: int
    """Points with status ERR (the group could not be read)."""
    min_lag: int | None
    max_lag: int | None
    last_lag: int | None
    max_seconds: float | None
    last_seconds: float | None
    status: Status
    """The worst status seen (ERR counts as worst)."""
    severity: Severity

    @property
    def end(self) -> float:
        return self.start + self.width


def _min(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def _max(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else max(a, b)


def _seconds(value: float | None) -> float | None:
    """Lag in seconds as a rollup keeps it: whole seconds (a member stays small)."""
    return None if value is None else float(round(value))


def start_rollup(point: LagPoint, width: float) -> Rollup:
    """The rollup of one point."""
    start = math.floor(point.at / width) * width
    return Rollup(
        start=start,
        width=width,
        at=point.at,
        points=1,
        warn=int(point.severity is Severity.WARN),
        critical=int(point.severity >= Severity.CRITICAL),
        unreadable=int(point.status is Status.ERR),
        min_lag=point.total_lag,
        max_lag=point.total_lag,
        last_lag=point.total_lag,
        max_seconds=_seconds(point.max_lag_seconds),
        last_seconds=_seconds(point.max_lag_seconds),
        status=point.status,
        severity=point.severity,
    )


def fold(rollup: Rollup, point: LagPoint) -> Rollup:
    """`rollup` with one more point of its bucket. A point older than the rollup's newest does not move `last`."""
    one = start_rollup(point, rollup.width)
    newer = point.at >= rollup.at
    return replace(
        rollup,
        at=max(rollup.at, point.at),
        points=rollup.points + 1,
        warn=rollup.warn + one.warn,
        critical=rollup.critical + one.critical,
        unreadable=rollup.unreadable + one.unreadable,
        min_lag=_min(rollup.min_lag, one.min_lag),
        max_lag=_max_int(rollup.max_lag, one.max_lag),
        last_lag=one.last_lag if newer else rollup.last_lag,
        max_seconds=_max(rollup.max_seconds, one.max_seconds),
        last_seconds=one.last_seconds if newer else rollup.last_seconds,
        status=worse_status(rollup.status, point.status),
        severity=max(rollup.severity, point.severity),
    )


def _max_int(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


def worse_status(a: Status, b: Status) -> Status:
    """The worse of two statuses by their stored code (OK < WARN < STALL < REWIND < STOP < ERR)."""
    return a if STATUS_CODES[a.name] >= STATUS_CODES[b.name] else b


def downsample(points: Iterable[LagPoint], width: float) -> list[Rollup]:
    """The rollups of `points` (any order) in buckets of `width` seconds, oldest first. Pure."""
    held: dict[int, Rollup] = {}
    for point in sorted(points, key=lambda p: p.at):
        bucket = math.floor(point.at / width)
        current = held.get(bucket)
        held[bucket] = start_rollup(point, width) if current is None else fold(current, point)
    return [held[b] for b in sorted(held)]


def peak_point(rollup: Rollup) -> LagPoint:
    """A rollup as one history point: at its newest point's time, with its peak lag and its worst verdict."""
    return LagPoint(rollup.at, rollup.max_lag, rollup.max_seconds, rollup.status, rollup.severity)


def trouble_seconds(rollup: Rollup) -> tuple[float, float, float]:
    """(WARN, CRITICAL+, unreadable) seconds of the bucket, in proportion of its points."""
    share = rollup.width / rollup.points
    return rollup.warn * share, rollup.critical * share, rollup.unreadable * share


# ---------------------------------------------------------------------------------------------------
# The stored form (version 1)
# ---------------------------------------------------------------------------------------------------


def encode_rollup(rollup: Rollup) -> str:
    """[version, points, warn, critical, unreadable, min, max, last, max s, last s, status, severity, slot] (the time
    is the member's score; `slot`, the bucket's number within its day, keeps two equal rollups of a day apart: a
    sorted set holds a member once)."""
    row = [ROLLUP_VERSION, rollup.points, rollup.warn, rollup.critical, rollup.unreadable,
           rollup.min_lag, rollup.max_lag, rollup.last_lag, _int(rollup.max_seconds), _int(rollup.last_seconds),
           STATUS_CODES[rollup.status.name], SEVERITY_CODES[rollup.severity.name],
           slot_of(rollup.start, rollup.width)]  # fmt: skip
    return json.dumps(row, separators=(",", ":"))


def slot_of(start: float, width: float) -> int:
    """The bucket's number within its day (the day of a Redis key: `RedisRollupStore.day`)."""
    span = max(DAY, width)
    return math.floor((start - math.floor(start / span) * span) / width)


def _int(value: float | None) -> int | None:
    return None if value is None else round(value)


def decode_rollup(raw: bytes | str, at: float, width: float) -> Rollup:
    """The rollup `encode_rollup` wrote, whose newest point is at `at`; raises StoredFormatError otherwise."""
    points, warn, critical, unreadable, low, high, last, high_s, last_s, status, severity, _slot = decode_row(
        "history rollup", ROLLUP_VERSION, raw
    )
    return Rollup(
        start=math.floor(at / width) * width,
        width=width,
        at=at,
        points=points,
        warn=warn,
        critical=critical,
        unreadable=unreadable,
        min_lag=low,
        max_lag=high,
        last_lag=last,
        max_seconds=None if high_s is None else float(high_s),
        last_seconds=None if last_s is None else float(last_s),
        status=Status[_STATUS_NAMES[status]],
        severity=Severity[_SEVERITY_NAMES[severity]],
    )


# ---------------------------------------------------------------------------------------------------
# Stores
# ---------------------------------------------------------------------------------------------------


class RollupStore(ABC):
    """Per (cluster, group): rollups of `width` seconds kept `retention` seconds (in report time).

    Contract: `record(report)` folds each verdict's point into its group's rollup of that time; rollups whose
    bucket ended before `taken_at - retention` are dropped (Redis: when the group's day changes, so up to a day
    late: retention is a floor, the TTLs a ceiling), and a group not recorded for `retention` is dropped from
    `groups`; `rollups` returns those whose bucket overlaps [since, until], oldest first.
    """

    def __init__(self, *, width: float, retention: float) -> None:
        if width <= 0 or retention <= 0:
            raise ValueError("rollup width and retention must be > 0")
        self.width = width
        self.retention = retention

    @abstractmethod
    def record(self, report: CheckReport) -> None: ...

    @abstractmethod
    def rollups_many(self, cluster: str, groups: Iterable[str], since: float, until: float) -> dict[str, list[Rollup]]:
        """`rollups` of many groups at once; every asked group is a key."""

    @abstractmethod
    def groups(self, cluster: str) -> list[str]: ...

    def rollups(self, cluster: str, group: str, since: float, until: float) -> list[Rollup]:
        return self.rollups_many(cluster, [group], since, until)[group]


class MemoryRollupStore(RollupStore):
    def __init__(self, *, width: float, retention: float) -> None:
        super().__init__(width=width, retention=retention)
        self._held: dict[tuple[str, str], dict[int, Rollup]] = {}
        self._last: dict[tuple[str, str], float] = {}

    def record(self, report: CheckReport) -> None:
        cutoff = report.taken_at - self.retention
        for verdict in report.verdicts:
            key = (verdict.cluster, verdict.group)
            point = point_of(verdict, report.taken_at)
            held = self._held.setdefault(key, {})
            bucket = math.floor(point.at / self.width)
            current = held.get(bucket)
            held[bucket] = start_rollup(point, self.width) if current is None else fold(current, point)
            for old in [b for b, r in held.items() if r.end < cutoff]:
                del held[old]
            self._last[key] = max(point.at, self._last.get(key, point.at))
        for key in [k for k, last in self._last.items() if last < cutoff]:
            del self._last[key], self._held[key]

    def rollups_many(self, cluster: str, groups: Iterable[str], since: float, until: float) -> dict[str, list[Rollup]]:
        found = {}
        for group in groups:
            held = self._held.get((cluster, group), {})
            found[group] = [held[b] for b in sorted(held) if held[b].end > since and held[b].start <= until]
        return found

    def groups(self, cluster: str) -> list[str]:
        return sorted(g for c, g in self._held if c == cluster)


def rollup_keys(cluster: str, group: str) -> tuple[str, str, str, str]:
    """The rollup tier's keys of one group (lagbot.core.keys): a day's rollups before the day number and after it,
    the group's index of days, the cluster's index of groups."""
    before, after = keys.rollup_day_affixes(cluster, group)
    return before, after, keys.rollup_days(cluster, group), keys.rollup_groups(cluster)


# KEYS[1] the point's day, KEYS[2] the group's index of days, KEYS[3] the cluster's index of groups.
# ARGV: 1 at, 2 bucket start, 3 bucket end (exclusive), 4 the point's rollup (encode_rollup of it alone),
# 5 ttl, 6 group, 7 the point's day number, 8 the cutoff's day number, 9 day key before the number, 10 after it,
# 11 cutoff (rollups whose newest point is older are dropped from the cutoff's day).
# The held rollup of the bucket (at most one) is folded with the point's, as `fold` does. TTLs (retention + a day)
# are set and old days trimmed when the group's day changes: once a day per group, not at every check.
_FOLD = """
local held = redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[2], '(' .. ARGV[3], 'WITHSCORES')
local row = cjson.decode(ARGV[4])
local at = tonumber(ARGV[1])
if #held > 0 then
    local old = cjson.decode(held[1])
    local old_at = tonumber(held[2])
    local function pick(a, b, f)
        if a == cjson.null then return b end
        if b == cjson.null then return a end
        return f(a, b)
    end
    local newer = at >= old_at
    row[2] = old[2] + 1
    for i = 3, 5 do row[i] = old[i] + row[i] end
    row[6] = pick(old[6], row[6], math.min)
    row[7] = pick(old[7], row[7], math.max)
    if not newer then row[8] = old[8] end
    row[9] = pick(old[9], row[9], math.max)
    if not newer then row[10] = old[10] end
    row[11] = math.max(old[11], row[11])
    row[12] = math.max(old[12], row[12])
    if not newer then at = old_at end
end
local member = cjson.encode(row)
redis.call('ZADD', KEYS[1], at, member)
if #held > 0 and held[1] ~= member then
    redis.call('ZREM', KEYS[1], held[1])  -- after the ZADD: the key (and its TTL) never goes empty
end
if redis.call('ZADD', KEYS[2], 'NX', ARGV[7], ARGV[7]) == 1 then
    -- the group's first point of a new day: set the TTLs (longer than a day) and trim, once a day, not every check
    redis.call('EXPIRE', KEYS[1], ARGV[5])
    local old = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[8])
    for _, day in ipairs(old) do
        redis.call('DEL', ARGV[9] .. day .. ARGV[10])
    end
    redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[8])
    redis.call('ZREMRANGEBYSCORE', ARGV[9] .. ARGV[8] .. ARGV[10], '-inf', '(' .. ARGV[11])
    redis.call('EXPIRE', KEYS[2], ARGV[5])
    redis.call('EXPIRE', KEYS[3], ARGV[5])
end
local last = redis.call('ZSCORE', KEYS[3], ARGV[6])
if not last or tonumber(last) < tonumber(ARGV[1]) then
    redis.call('ZADD', KEYS[3], ARGV[1], ARGV[6])
end
return 1
"""


class RedisRollupStore(RollupStore):
    """Rollups in Redis, a sorted set per group per day (96 members at 15 minutes: Redis's compact encoding)."""

    def __init__(self, client: redis.Redis, *, width: float, retention: float) -> None:
        super().__init__(width=width, retention=retention)
        self._redis = client
        self._fold = client.register_script(_FOLD)
        self.day_span = max(DAY, width)

    def day(self, at: float) -> int:
        return math.floor(at / self.day_span)

    def record(self, report: CheckReport) -> None:
        ttl = max(1, math.ceil(self.retention + self.day_span))
        cutoff = report.taken_at - self.retention
        pipe = self._redis.pipeline(transaction=False)
        for verdict in report.verdicts:
            point = point_of(verdict, report.taken_at)
            before, after, days, index = rollup_keys(verdict.cluster, verdict.group)
            start = math.floor(point.at / self.width) * self.width
            args: list[str | int | float] = [
                repr(point.at), repr(start), repr(start + self.width), encode_rollup(start_rollup(point, self.width)),
                ttl, verdict.group, self.day(point.at), self.day(cutoff), before, after, repr(cutoff - self.width),
            ]  # fmt: skip
            self._fold(keys=[f"{before}{self.day(point.at)}{after}", days, index], args=args, client=pipe)
        pipe.execute()
        for cluster in sorted({v.cluster for v in report.verdicts} | set(report.clusters)):
            self._expire(cluster, cutoff)

    def _expire(self, cluster: str, cutoff: float) -> None:
        index = rollup_keys(cluster, "")[3]
        gone = [text(n) for n in self._redis.zrangebyscore(index, "-inf", f"({cutoff!r}")]
        if not gone:
            return
        reads = self._redis.pipeline(transaction=False)
        for group in gone:
            reads.zrange(rollup_keys(cluster, group)[2], 0, -1)
        pipe = self._redis.pipeline(transaction=True)
        for group, days in zip(gone, reads.execute(), strict=True):
            before, after, days_key, _ = rollup_keys(cluster, group)
            pipe.delete(days_key, *(f"{before}{int(d)}{after}" for d in days))
        pipe.zrem(index, *gone)
        pipe.execute()

    def rollups_many(self, cluster: str, groups: Iterable[str], since: float, until: float) -> dict[str, list[Rollup]]:
        names = list(groups)
        low = math.floor(since / self.width) * self.width  # the bucket holding `since`: its newest point may be later
        pipe = self._redis.pipeline(transaction=False)
        for group in names:
            days_key = rollup_keys(cluster, group)[2]
            pipe.zrangebyscore(days_key, self.day(low), self.day(until + self.width))
        days_of = [[int(d) for d in found] for found in pipe.execute()]
        pipe = self._redis.pipeline(transaction=False)
        for group, days in zip(names, days_of, strict=True):
            before, after, _, _ = rollup_keys(cluster, group)
            for day in days:
                pipe.zrangebyscore(f"{before}{day}{after}", repr(low), "+inf", withscores=True)
        answers = iter(pipe.execute())
        found: dict[str, list[Rollup]] = {}
        for group, days in zip(names, days_of, strict=True):
            rows = [decode_rollup(raw, float(score), self.width) for _ in days for raw, score in next(answers)]
            found[group] = [r for r in rows if r.end > since and r.start <= until]
        return found

    def groups(self, cluster: str) -> list[str]:
        return sorted(text(n) for n in self._redis.zrange(rollup_keys(cluster, "")[3], 0, -1))


# ---------------------------------------------------------------------------------------------------
# The two tiers as one history
# ---------------------------------------------------------------------------------------------------


class TieredHistoryStore(HistoryStore):
    """Minute points for `points.retention`, rollups for `rollups.retention`, behind the HistoryStore interface.

    `series` is the minute points of [since, until] and, before the first of them, one `peak_point` per rollup.
    """

    def __init__(self, points: HistoryStore, rollups: RollupStore) -> None:
        super().__init__(retention=rollups.retention, resolution=points.resolution)
        self.points = points
        self.rollups = rollups

    def record(self, report: CheckReport) -> None:
        self.points.record(report)
        self.rollups.record(report)

    def series_many(self, cluster: str, groups: Iterable[str], since: float, until: float) -> dict[str, list[LagPoint]]:
        names = list(groups)
        recent = self.points.series_many(cluster, names, since, until)
        older = self.rollups.rollups_many(cluster, names, since, until)
        return {g: merged_series(recent[g], older[g]) for g in names}

    def groups(self, cluster: str) -> list[str]:
        return sorted(set(self.points.groups(cluster)) | set(self.rollups.groups(cluster)))


def merged_series(recent: Sequence[LagPoint], older: Sequence[Rollup]) -> list[LagPoint]:
    """The rollups' peaks before the first minute point, then the minute points. Pure."""
    first = recent[0].at if recent else math.inf
    return [peak_point(r) for r in older if r.at < first and r.end <= first] + list(recent)


def make_tiered_history(config: HistoryConfig, client: redis.Redis | None) -> HistoryStore:
    """The history the settings ask for: minute points, and rollups beside them unless `rollup_retention` is 0."""
    retention, resolution = config.retention, int(config.resolution)
    points: HistoryStore
    rollups: RollupStore
    if client is None:
        points = MemoryHistoryStore(retention=retention, resolution=resolution)
        if config.rollup_retention == 0:
            return points
        rollups = MemoryRollupStore(width=config.rollup_resolution, retention=config.rollup_retention)
    else:
        points = RedisHistoryStore(client, retention=retention, resolution=resolution)
        if config.rollup_retention == 0:
            return points
        rollups = RedisRollupStore(client, width=config.rollup_resolution, retention=config.rollup_retention)
    return TieredHistoryStore(points, rollups)
