"""The broker's own history: Kafka's time index, asked with ListOffsets by timestamp.

For a timestamp T, ListOffsets answers per partition the earliest offset whose timestamp is at or after T: the
log end as it stood at T (the messages before it were all written before T). One batched request per timestamp
covers every partition at once. From a few such points a single check knows what no window of its own has yet:

- the baseline produce rate of each partition over horizons before now (e.g. 1, 5, 15 and 60 min):
  (log end now - log end at now - h) / h. A partition whose oldest retained message is newer than now - h
  (the answer is its log start) has no data that old: its rate over h is None, said so, never guessed;
- lag in seconds from the first check: when the first unconsumed message was written, by the same bounded
  interpolation the window uses (bot/engine/rules.py `lag_seconds`) on the (time, log end) points of the index, never
  extrapolated beyond the oldest point (older than that is a lower bound).

`BaselineCache` asks a horizon again only when it has moved on (by a tenth of itself), not every cycle.
Nothing here reads a clock: `now` is an argument. The proof is tests/engine/test_time_index.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import wait
from dataclasses import dataclass, replace

from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from lagbot.core.model import GroupVerdict, PartitionSample, PartitionVerdict, TopicPartition
from lagbot.engine.evaluate import group_lag_seconds
from lagbot.engine.rules import lag_seconds, lag_seconds_tables

HORIZONS = (60.0, 300.0, 900.0, 3600.0)
"""The default horizons in seconds: the last 1, 5, 15 and 60 minutes."""
REASK_SHARE = 0.1
"""A horizon is asked again once `now` moved on by this share of it (6 s for 1 min, 6 min for 60 min)."""

OffsetsAt = Callable[[Sequence[TopicPartition], Sequence[float]], list[Mapping[TopicPartition, int]]]
"""(partitions, timestamps in seconds) -> per timestamp, each partition's answer: the earliest offset written at or
after that time, or -1 when nothing was written since. A partition the broker did not answer for is left out
(unknown)."""


def offsets_at(admin: AdminClient, timeout: float) -> OffsetsAt:
    """ListOffsets by timestamp through `admin`: one batched request per timestamp, for every partition at once, the
    requests of all the timestamps in flight together."""

    def ask(tps: Sequence[TopicPartition], ats: Sequence[float]) -> list[Mapping[TopicPartition, int]]:
        if not tps:
            return [{} for _ in ats]
        asked = [
            admin.list_offsets(
                {KafkaTopicPartition(t, p): OffsetSpec.for_timestamp(int(at * 1000)) for t, p in tps},
                request_timeout=timeout,
            )
            for at in ats
        ]
        wait([future for futures in asked for future in futures.values()], timeout=timeout + 1.0)
        return [
            {
                (tp.topic, tp.partition): int(future.result().offset)
                for tp, future in futures.items()
                if future.done() and future.exception() is None
            }
            for futures in asked
        ]

    return ask


@dataclass(frozen=True, slots=True)
class IndexPoint:
    """The log end of one partition at one past moment, from the time index."""

    at: float
    log_end: int | None
    """None: no data that old (the oldest retained message is newer than `at`), or the broker did not answer."""
    horizon: float = 0.0
    """The horizon (seconds before the check) this point was asked for."""


def point(at: float, answered: int | None, log_end: int, log_start: int, horizon: float = 0.0) -> IndexPoint:
    """Read one ListOffsets-by-timestamp answer about time `at` (asked for `horizon`).

    No answer (None): unknown. No offset (-1): nothing was written since `at`, so the log end then was
    today's. The log start (or below): the oldest retained message is already at or after `at`, and whether
    anything came before it (deleted by retention, or never written) the broker cannot say: no data that old.
    """
    if answered is None:
        return IndexPoint(at, None, horizon)
    if answered < 0:
        return IndexPoint(at, log_end, horizon)
    if answered <= log_start:
        return IndexPoint(at, None, horizon)
    return IndexPoint(at, answered, horizon)


def baseline_rate(past: IndexPoint, now: float, log_end: int) -> float | None:
    """Messages/s written between `past` and now; None with no data that old or no elapsed time."""
    if past.log_end is None or now <= past.at:
        return None
    return (log_end - past.log_end) / (now - past.at)


def lag_seconds_by_index(
    points: Sequence[IndexPoint], committed: int | None, log_end: int, now: float
) -> tuple[float | None, bool]:
    """When the first unconsumed message was written, from the index's (time, log end) points and now.

    The same rule as the window's `lag_seconds` (one home): the points, oldest first, with today's log end at
    `now`, are the table it interpolates in; older than the oldest known point is a lower bound. Points with no
    data that old are left out.
    """
    known = sorted((p for p in points if p.log_end is not None and p.at < now), key=lambda p: p.at)
    table = [PartitionSample(p.at, committed, p.log_end or 0, 0) for p in known]
    table.append(PartitionSample(now, committed, log_end, 0))
    return lag_seconds(table, now)


def lag_seconds_by_index_rows(
    points: Sequence[Sequence[IndexPoint]], committed: Sequence[int], log_end: Sequence[int], now: float
) -> list[tuple[float | None, bool]]:
    """`lag_seconds_by_index` of many partitions at once (their points, committed offsets and log ends): the same
    tables, judged by the array form of the window's rule (bot/engine/rules.py `lag_seconds_tables`), a few array
    operations instead of a loop per partition.

    The tables are made as long as the longest by repeating their oldest point in front: a copy of a point changes
    no answer of the rule (no log end falls between copies, the bisection lands on the last copy, and older than
    the oldest point is older than its copies, at the same time). A table with no known point stays alone.
    """
    import numpy as np

    tables = [[(p.at, p.log_end) for p in found if p.log_end is not None and p.at < now] for found in points]
    longest = max((len(table) for table in tables), default=0)
    by_length: dict[int, list[int]] = {}
    for row, table in enumerate(tables):
        table.sort(key=_time)  # stable, as `sorted` in lag_seconds_by_index
        table[:0] = table[:1] * (longest - len(table))
        by_length.setdefault(len(table), []).append(row)
    answers: list[tuple[float | None, bool]] = [(None, False)] * len(tables)
    for rows in by_length.values():
        times = np.array([[at for at, _ in tables[r]] + [now] for r in rows], dtype=np.float64)
        try:
            ends = np.array([[end for _, end in tables[r]] + [log_end[r]] for r in rows], dtype=np.int64)
            offsets = np.array([committed[r] for r in rows], dtype=np.int64)
            exact = min(ends.min(), offsets.min()) >= 0 and max(ends.max(), offsets.max()) < _EXACT_LIMIT
        except OverflowError:
            exact = False
        if not exact:
            for r in rows:  # offsets the array arithmetic would round: the scalar rule, with Python's exact ints
                answers[r] = lag_seconds_by_index(points[r], committed[r], log_end[r], now)
            continue
        seconds, bounds = lag_seconds_tables(times, ends, offsets, now)
        for r, found, bound in zip(rows, seconds, bounds, strict=True):
            answers[r] = (found, bound)
    return answers


_EXACT_LIMIT = 2**48
"""Offsets at or above this (or negative) are judged by `lag_seconds_by_index` (as in lagbot.engine.window): int64
and float64 arithmetic on them would not be exact."""


def _time(point: tuple[float, int]) -> float:
    return point[0]


class BaselineCache:
    """Index points per horizon, asked again only when the horizon has moved on (`REASK_SHARE` of itself)."""

    def __init__(self, ask: OffsetsAt, horizons: Sequence[float] = HORIZONS) -> None:
        if not horizons or any(h <= 0 for h in horizons):
            raise ValueError("horizons must be positive seconds")
        self.ask = ask
        self.horizons = tuple(sorted(horizons))
        self.requests = 0
        self._asked: dict[float, tuple[float, Mapping[TopicPartition, int], frozenset[TopicPartition]]] = {}

    def answers(
        self, tps: Sequence[TopicPartition], now: float
    ) -> dict[float, tuple[float, Mapping[TopicPartition, int | None]]]:
        """Per horizon: (the time asked about, each partition's answer), asking the broker only where needed (the
        horizons asked, all at once)."""
        due = []
        for horizon in self.horizons:
            cached = self._asked.get(horizon)
            stale = cached is None or now - horizon - cached[0] >= REASK_SHARE * horizon
            new = cached is not None and not cached[2].issuperset(tps)
            if stale or new:
                due.append(horizon)
        if due:
            ats = [now - horizon for horizon in due]
            for horizon, at, found in zip(due, ats, self.ask(tps, ats), strict=True):
                self._asked[horizon] = (at, dict(found), frozenset(tps))
            self.requests += len(due)
        return {h: self._asked[h][:2] for h in self.horizons}

    def history(
        self,
        tps: Sequence[TopicPartition],
        now: float,
        log_end: Mapping[TopicPartition, int],
        log_start: Mapping[TopicPartition, int],
    ) -> dict[TopicPartition, tuple[IndexPoint, ...]]:
        """Each partition's index points, oldest first (one per horizon)."""
        answers = self.answers(tps, now)
        return {
            tp: tuple(
                point(at, found.get(tp), log_end[tp], log_start.get(tp, 0), h)
                for h in reversed(self.horizons)
                for at, found in (answers[h],)
            )
            for tp in tps
            if tp in log_end
        }


def with_index(
    verdict: GroupVerdict,
    history: Mapping[TopicPartition, Sequence[IndexPoint]],
    now: float,
    measured_at: float,
    *,
    arrays: bool = False,
) -> GroupVerdict:
    """The verdict with what the time index adds: lag in seconds where the window cannot say (unknown, or only
    a lower bound the index improves on) and the group's baseline produce rate per horizon.

    A figure from the index replaces the window's only when it is known and either the window had none or the
    window's was a lower bound and the index's is exact or longer. `lag_seconds_method` says which gave it.
    `measured_at` is when the verdict's log ends were read (the rates run from the index's points to then).
    `arrays`: find the figures of all partitions at once (`lag_seconds_by_index_rows`), for a verdict judged by the
    evaluator's array route (numpy is loaded already); the same figures.
    """
    if arrays:
        partitions = _indexed_rows(verdict.partitions, history, now)
    else:
        partitions = tuple(_indexed(p, history.get(p.tp, ()), now) for p in verdict.partitions)
    horizons = len(next(iter(history.values()), ()))
    rates: list[list[float | None]] = [[] for _ in range(horizons)]
    for p in verdict.partitions:  # each partition's points once, every horizon's rates in the partitions' order
        points = history.get(p.tp, ())
        if len(points) == horizons:
            for found, past in zip(rates, points, strict=True):
                found.append(baseline_rate(past, measured_at, p.log_end))
    baselines = []
    for i, found in enumerate(rates):
        horizon = next(iter(history.values()))[i].horizon
        known = bool(found) and all(r is not None for r in found)
        baselines.append((horizon, sum(r or 0.0 for r in found) if known else None))
    return replace(
        verdict,
        partitions=partitions,
        max_lag_seconds=group_lag_seconds(partitions),
        baseline_produce=tuple(reversed(baselines)),
    )


def _indexed(p: PartitionVerdict, points: Sequence[IndexPoint], now: float) -> PartitionVerdict:
    if not points or not _wants_index(p) or p.committed is None:
        return p
    return _with_figure(p, *lag_seconds_by_index(points, p.committed, p.log_end, now))


def _indexed_rows(
    partitions: tuple[PartitionVerdict, ...], history: Mapping[TopicPartition, Sequence[IndexPoint]], now: float
) -> tuple[PartitionVerdict, ...]:
    """`_indexed` of every partition, the index's figures of those that want one found at once."""
    wanted = [
        (j, p, points, p.committed)
        for j, p in enumerate(partitions)
        if (points := history.get(p.tp, ())) and _wants_index(p) and p.committed is not None
    ]
    if not wanted:
        return partitions
    found = lag_seconds_by_index_rows(
        [points for _, _, points, _ in wanted], [c for _, _, _, c in wanted], [p.log_end for _, p, _, _ in wanted], now
    )
    indexed = list(partitions)
    for (j, p, _, _), (seconds, bound) in zip(wanted, found, strict=True):
        indexed[j] = _with_figure(p, seconds, bound)
    return tuple(indexed)


def _wants_index(p: PartitionVerdict) -> bool:
    """Lagging, with a committed offset, and the window's figure is unknown or only a lower bound."""
    return p.committed is not None and bool(p.lag) and (p.lag_seconds is None or p.lag_seconds_lower_bound)


def _with_figure(p: PartitionVerdict, seconds: float | None, bound: bool) -> PartitionVerdict:
    """The verdict with the index's figure where it is known and the window's is unknown or a lower bound the
    index's is exact or longer than."""
    if seconds is None:
        return p
    if p.lag_seconds is not None and bound and seconds <= p.lag_seconds:
        return p
    return p.with_lag_seconds(seconds, bound, "time_index")
