"""The broker's own history: Kafka's time index, asked with ListOffsets by timestamp.

For a timestamp T, ListOffsets answers per partition the earliest offset whose timestamp is at or after T: the
log end as it stood at T (the messages before it were all written before T). One batched request per timestamp
covers every partition at once. From a few such points a single check knows what no window of its own has yet:

- the baseline produce rate of each partition over horizons before now (e.g. 1, 5, 15 and 60 min):
  (log end now - log end at now - h) / h. A partition whose oldest retained message is newer than now - h
  (the answer is its log start) has no data that old: its rate over h is None, said so, never guessed. That answer
  comes with the timestamp of the oldest retained record, when the log end was the log start, exactly
  (`BaselineCache.born`): a young topic's whole short history, its baseline (lagbot.engine.burst);
- lag in seconds from the first check: when the first unconsumed message was written, by the same bounded
  interpolation the window uses (lagbot.engine.rates `lag_seconds`) on the (time, log end) points of the index, never
  extrapolated beyond the oldest point (older than that is a lower bound).

`BaselineCache` asks a horizon again only when it has moved on (by a tenth of itself), not every cycle.
Nothing here reads a clock: `now` is an argument. The proof is tests/engine/test_time_index.py.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import wait
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from confluent_kafka.admin import AdminClient, OffsetSpec

from lagbot.core.defaults import HISTORY_HORIZONS
from lagbot.core.model import GroupVerdict, PartitionSample, PartitionVerdict, TopicPartition
from lagbot.engine.evaluate import group_lag_seconds
from lagbot.engine.list_offsets import ask_offsets
from lagbot.engine.rates import lag_seconds
from lagbot.engine.rows import lag_seconds_arrays, lag_seconds_tables

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

HORIZONS = HISTORY_HORIZONS
"""The default horizons in seconds: the last 1, 5, 15 and 60 minutes."""
REASK_SHARE = 0.1
"""A horizon is asked again once `now` moved on by this share of it (6 s for 1 min, 6 min for 60 min)."""

OffsetsAt = Callable[[Sequence[TopicPartition], Sequence[float]], list[Mapping[TopicPartition, int]]]
"""(partitions, timestamps in seconds) -> per timestamp, each partition's answer: the earliest offset written at or
after that time, or -1 when nothing was written since. A partition the broker did not answer for is left out
(unknown). An answer that is an `Answers` also says when each offset's record was written."""


class Answers(dict[TopicPartition, int]):
    """One timestamp's ListOffsets answers (`OffsetsAt`), with the timestamp the broker gave with each offset: the
    time its record was written, in seconds (`written_at`; left out where the broker gave none)."""

    def __init__(self, offsets: Mapping[TopicPartition, int], written_at: Mapping[TopicPartition, float]) -> None:
        super().__init__(offsets)
        self.written_at = dict(written_at)


def offsets_at(admin: AdminClient, timeout: float) -> OffsetsAt:
    """ListOffsets by timestamp through `admin`: per timestamp, every partition (in chunks: lagbot.engine.list_offsets),
    the requests of all the timestamps in flight together."""

    def ask(tps: Sequence[TopicPartition], ats: Sequence[float]) -> list[Mapping[TopicPartition, int]]:
        if not tps:
            return [{} for _ in ats]
        asked = [ask_offsets(admin, tps, OffsetSpec.for_timestamp(int(at * 1000)), timeout) for at in ats]
        wait([future for futures in asked for future in futures.values()], timeout=timeout + 1.0)
        found: list[Mapping[TopicPartition, int]] = []
        for futures in asked:
            answered = {
                (tp.topic, tp.partition): future.result()
                for tp, future in futures.items()
                if future.done() and future.exception() is None
            }
            offsets = {tp: int(info.offset) for tp, info in answered.items()}
            times = {
                tp: info.timestamp / 1000 for tp, info in answered.items() if info.offset >= 0 and info.timestamp >= 0
            }
            found.append(Answers(offsets, times))
        return found

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
    return lag_seconds([*index_table(points, now), PartitionSample(now, committed, log_end, 0)], now)


def index_table(points: Sequence[IndexPoint], now: float) -> tuple[PartitionSample, ...]:
    """`lag_seconds_by_index`'s table but its newest row: the known points before now, oldest first, as samples. The
    same for every group that reads the partition: the rule reads the time and log end of these rows (the committed
    offset only of the newest), so they carry none."""
    known = sorted((p for p in points if p.log_end is not None and p.at < now), key=lambda p: p.at)
    return tuple([PartitionSample(p.at, None, p.log_end or 0, 0) for p in known])


_EXACT_LIMIT = 2**48
"""Offsets at or above this (or negative) are judged by `lag_seconds_by_index` and `baselines` (as in
lagbot.engine.window): int64 and float64 arithmetic on them would not be exact."""


def _time(point: tuple[float, int]) -> float:
    return point[0]


class BaselineCache:
    """Index points per horizon, asked again only when the horizon has moved on (`REASK_SHARE` of itself).

    A horizon is first answered from the log ends the bot itself read (`saw`, each cycle's snapshot) when some were
    read near enough to now - horizon (by less than `REASK_SHARE` of the horizon, either side): with a check
    every minute, the 1, 5 and 15 minute horizons come from earlier cycles and only older ones are asked of the
    broker. A log end read at time T is what the time index answers for T (the next message's offset, which was
    written after T), or -1 when nothing was written since (see `history`); measured at 100,000
    group-partitions, asking one horizon of 5,000 partitions cost 0.28 s, two or three of them every cycle.
    """

    def __init__(self, ask: OffsetsAt, horizons: Sequence[float] = HORIZONS) -> None:
        if not horizons or any(h <= 0 for h in horizons):
            raise ValueError("horizons must be positive seconds")
        self.ask = ask
        self.horizons = tuple(sorted(horizons))
        self.requests = 0
        self._asked: dict[float, tuple[float, Mapping[TopicPartition, int], frozenset[TopicPartition]]] = {}
        self._from_seen: set[float] = set()
        """Horizons whose answers are log ends the bot read (`saw`), not the broker's."""
        self._written: dict[float, Mapping[TopicPartition, float]] = {}
        """Per horizon asked of the broker, when the record at each answered offset was written (`Answers`)."""
        self._seen: deque[_Seen] = deque()

    def saw(self, at: float, log_end: Mapping[TopicPartition, int]) -> None:
        """Keep the log ends read at `at` (a cycle's snapshot) while a horizon could take them: as arrays, the
        partitions shared with the last kept ones when they are the same."""
        from array import array

        tps = tuple(log_end)
        if self._seen and self._seen[-1].tps == tps:
            tps = self._seen[-1].tps
        self._seen.append(_Seen(at, tps, array("q", log_end.values())))
        oldest = at - self.horizons[-1] * (1 + REASK_SHARE)
        while self._seen and self._seen[0].at < oldest:
            self._seen.popleft()

    def answers(
        self, tps: Sequence[TopicPartition], now: float
    ) -> dict[float, tuple[float, Mapping[TopicPartition, int | None]]]:
        """Per horizon: (the time asked about, each partition's answer), from log ends the bot read where it can,
        asking the broker only for the rest (the horizons asked, all at once)."""
        due = []
        for horizon in self.horizons:
            cached = self._asked.get(horizon)
            stale = cached is None or now - horizon - cached[0] >= REASK_SHARE * horizon
            new = cached is not None and not cached[2].issuperset(tps)
            if (stale or new) and not self._answer_from_seen(horizon, tps, now):
                due.append(horizon)
        if due:
            ats = [now - horizon for horizon in due]
            for horizon, at, found in zip(due, ats, self.ask(tps, ats), strict=True):
                self._asked[horizon] = (at, dict(found), frozenset(tps))
                self._written[horizon] = found.written_at if isinstance(found, Answers) else {}
                self._from_seen.discard(horizon)
            self.requests += len(due)
        return {h: self._asked[h][:2] for h in self.horizons}

    def _answer_from_seen(self, horizon: float, tps: Sequence[TopicPartition], now: float) -> bool:
        """Answer `horizon` with the log ends read nearest to now - horizon, if they were read within
        `REASK_SHARE` of it (either side: a check every minute starts a little before or after the minute) and
        cover `tps`."""
        wanted = now - horizon
        near = min(self._seen, key=lambda seen: abs(seen.at - wanted), default=None)
        if near is None or abs(near.at - wanted) >= REASK_SHARE * horizon or near.at >= now:
            return False
        if not set(near.tps).issuperset(tps):
            return False
        self._asked[horizon] = (near.at, dict(zip(near.tps, near.ends, strict=True)), frozenset(tps))
        self._written.pop(horizon, None)
        self._from_seen.add(horizon)
        return True

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
                point(at, self._answered(h, found.get(tp), log_end[tp]), log_end[tp], log_start.get(tp, 0), h)
                for h in reversed(self.horizons)
                for at, found in (answers[h],)
            )
            for tp in tps
            if tp in log_end
        }

    def born(
        self, tps: Sequence[TopicPartition], log_start: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, float]:
        """When each partition's oldest retained record was written, of the partitions whose history is shorter than
        a horizon asked (its answer was the log start: "no data that old"), from the timestamp the broker gave with
        that answer. At that time the log end was the log start, exactly: what the partition holds was all written
        since (lagbot.engine.burst compares a young topic's window with it). Partitions without such an answer are
        left out."""
        found: dict[TopicPartition, float] = {}
        for horizon in self.horizons:
            asked, written = self._asked.get(horizon), self._written.get(horizon, {})
            if asked is None or not written:
                continue
            for tp in tps:
                offset, at = asked[1].get(tp), written.get(tp)
                if offset is not None and at is not None and offset == log_start.get(tp, 0):
                    found[tp] = at
        return found

    def _answered(self, horizon: float, found: int | None, log_end: int) -> int | None:
        """The time index's answer: a log end read then (`saw`) is -1 when nothing was written since."""
        if horizon in self._from_seen and found is not None and found >= log_end:
            return -1
        return found


@dataclass(frozen=True, slots=True)
class _Seen:
    """The log ends of `tps` read at `at` (`BaselineCache.saw`)."""

    at: float
    tps: tuple[TopicPartition, ...]
    ends: Sequence[int]


def with_index(
    verdict: GroupVerdict, history: Mapping[TopicPartition, Sequence[IndexPoint]], now: float, measured_at: float
) -> GroupVerdict:
    """The verdict with what the time index adds: lag in seconds where the window cannot say (unknown, or only
    a lower bound the index improves on) and the group's baseline produce rate per horizon.

    A figure from the index replaces the window's only when it is known and either the window had none or the
    window's was a lower bound and the index's is exact or longer. `lag_seconds_method` says which gave it.
    `measured_at` is when the verdict's log ends were read (the rates run from the index's points to then).
    The rules one partition at a time: `lagbot run` gives the index to the evaluator instead (`IndexTables`), which
    makes each verdict once with the same figures.
    """
    partitions = tuple(_indexed(p, history.get(p.tp, ()), now) for p in verdict.partitions)
    return replace(
        verdict,
        partitions=partitions,
        max_lag_seconds=group_lag_seconds(partitions),
        baseline_produce=baselines(
            [p.tp for p in verdict.partitions], [p.log_end for p in verdict.partitions], history, measured_at
        ),
    )


def baselines(
    tps: Sequence[TopicPartition],
    log_ends: Sequence[int],
    history: Mapping[TopicPartition, Sequence[IndexPoint]],
    measured_at: float,
    seen: dict[tuple[TopicPartition, int], tuple[float | None, ...]] | None = None,
) -> tuple[tuple[float, float | None], ...]:
    """The group's baseline produce rate per horizon (shortest first): the sum of its partitions' `baseline_rate`s
    (each partition's log end in `log_ends`), None where one of them is unknown. Partitions without a point per
    horizon are left out. `seen`: each partition's rates per horizon at its log end, kept for the other groups that
    read it measured at the same time (`IndexTables.baselines`)."""
    horizons = len(next(iter(history.values()), ()))
    rates: list[list[float | None]] = [[] for _ in range(horizons)]
    for tp, log_end in zip(tps, log_ends, strict=True):  # each partition's points once, every horizon's rates
        points = history.get(tp, ())
        if len(points) == horizons:
            rated = None if seen is None else seen.get((tp, log_end))
            if rated is None:
                rated = tuple([baseline_rate(past, measured_at, log_end) for past in points])
                if seen is not None:
                    seen[(tp, log_end)] = rated
            for found, rate in zip(rates, rated, strict=True):
                found.append(rate)
    found_per_horizon = []
    for i, found in enumerate(rates):
        horizon = next(iter(history.values()))[i].horizon
        known = bool(found) and all(r is not None for r in found)
        found_per_horizon.append((horizon, sum(r or 0.0 for r in found) if known else None))
    return tuple(reversed(found_per_horizon))


def _indexed(
    p: PartitionVerdict,
    points: Sequence[IndexPoint],
    now: float,
    tables: dict[TopicPartition, tuple[PartitionSample, ...]] | None = None,
) -> PartitionVerdict:
    """The verdict with the index's figure where it improves on the window's (`lag_seconds_by_index`). `tables`: each
    partition's `index_table`, kept for the other groups that read it."""
    if not points or not _wants_index(p) or p.committed is None:
        return p
    table = None if tables is None else tables.get(p.tp)
    if table is None:
        table = index_table(points, now)
        if tables is not None:
            tables[p.tp] = table
    return _with_figure(p, *lag_seconds([*table, PartitionSample(now, p.committed, p.log_end, 0)], now))


def _wants_index(p: PartitionVerdict) -> bool:
    """Lagging, with a committed offset, and the window's figure is unknown or only a lower bound."""
    return p.committed is not None and bool(p.lag) and (p.lag_seconds is None or p.lag_seconds_lower_bound)


def _with_figure(p: PartitionVerdict, seconds: float | None, bound: bool) -> PartitionVerdict:
    """The verdict with the index's figure where it is known and the window's is unknown or a lower bound the
    index's is exact or longer than."""
    if not index_wins(p.lag_seconds, seconds, bound):
        return p
    return p.with_lag_seconds(seconds, bound, "time_index")  # type: ignore[arg-type]  # known when it wins


def index_wins(window: float | None, seconds: float | None, bound: bool) -> bool:
    """Whether the index's figure (`seconds`, `bound`: only a lower bound) replaces the window's figure `window` of a
    partition that wants one: it is known, and the window had none or the index's is exact or longer."""
    return seconds is not None and (window is None or not bound or seconds > window)


class IndexTables:
    """The time index of a cycle's partitions as arrays, read out of their `IndexPoint`s once per cycle (`judge`):
    every group that reads a topic has the same partitions' points, so their tables, which `lag_seconds_by_index`
    makes per partition and call, and their baseline points are made here once for all the groups.

    Given to the evaluator (lagbot.engine.evaluate `evaluate_group`), which makes each partition's verdict once with
    the index's figure in it (`improve_rows`, `improve`) rather than copying the verdicts after judging them; the
    group's baselines are `baselines_of`. The same figures as `with_index`, the rules one partition at a time
    (tests/engine/test_time_index_rules.py compares both on random histories). Kept only while a cycle is judged.

    A partition's table is its known points before now, oldest first, made as long as the longest by repeating its
    oldest point in front (a copy of a point changes no answer of the rule: no log end falls between copies, the
    bisection lands on the last copy, and older than the oldest point is older than its copies, at the same time),
    then now. A partition with no known point has no table (no figure); one with offsets the arrays would round is
    judged by `lag_seconds_by_index`.
    """

    def __init__(
        self,
        history: Mapping[TopicPartition, Sequence[IndexPoint]],
        now: float,
        born: Mapping[TopicPartition, float] | None = None,
    ) -> None:
        self.history = history
        self.now = now
        self.born: Mapping[TopicPartition, float] = born or {}
        """When the oldest retained record of each partition with a short history was written (`BaselineCache.born`)."""
        self.row = {tp: i for i, tp in enumerate(history)}
        self.arrays_made = False
        self._tables: dict[TopicPartition, tuple[PartitionSample, ...]] = {}
        """`index_table` of each partition `improve` was asked about."""
        self._rates: dict[float, dict[tuple[TopicPartition, int], tuple[float | None, ...]]] = {}
        """Per time measured at, the rates `baselines` found of each partition at a log end."""

    def make_arrays(self) -> None:
        """The arrays, made at the first ask that needs them: a cycle whose windows have no arrays (`lagbot check`,
        judged one partition at a time by `improve`) never loads numpy."""
        if self.arrays_made:
            return
        self.arrays_made = True
        import numpy as np

        history, now = self.history, self.now
        first = next(iter(history.values()), ())
        self.horizons = tuple(p.horizon for p in first)
        tables = [_known_before(found, now) for found in history.values()]
        longest = max((len(table) for table in tables), default=0)
        self.kind = [_kind(table) for table in tables]
        self.kinds = np.array([*self.kind, _NO_TABLE], dtype=np.int8)
        arrays = [
            table if kind == _ARRAYS else [(now, 0)] * longest for table, kind in zip(tables, self.kind, strict=True)
        ]
        padded = [table[:1] * (longest - len(table)) + table for table in arrays]
        shape = (len(padded), longest)
        self.times = np.array([[at for at, _ in table] + [now] for table in padded], dtype=np.float64)
        self.times = self.times.reshape(shape[0], longest + 1)
        self.ends = np.array([[end for _, end in table] for table in padded], dtype=np.int64).reshape(shape)
        self._baseline_points(np, first)

    def _baseline_points(self, np: Any, first: Sequence[IndexPoint]) -> None:
        """Per partition and horizon (in the points' order): the point's time, log end and whether it is known; per
        partition, how `baselines_of` takes its rates (`summed`)."""
        shape = (len(self.history), len(first))
        full = [len(found) == shape[1] for found in self.history.values()]
        points = [found if whole else first for found, whole in zip(self.history.values(), full, strict=True)]
        ends = [[p.log_end for p in found] for found in points]
        self.past_at = np.array([[p.at for p in found] for found in points], dtype=np.float64).reshape(shape)
        exact = [all(e is None or 0 <= e < _EXACT_LIMIT for e in row) for row in ends]
        self.summed = [
            _LEFT_OUT if not whole else _SUMMED if fits else _ROUNDED for whole, fits in zip(full, exact, strict=True)
        ]
        """Per partition, how `baselines_of` takes its rates: left out (not a point per horizon, as `baselines`
        leaves it out), summed from the arrays, or by `baselines` (log ends the arrays would round)."""
        self.past_known = np.array([[e is not None for e in row] for row in ends], dtype=np.bool_).reshape(shape)
        exact_ends = [row if fits else [0] * shape[1] for row, fits in zip(ends, exact, strict=True)]
        self.past_end = np.array([[e or 0 for e in row] for row in exact_ends], dtype=np.int64).reshape(shape)

    def improve(self, verdict: PartitionVerdict) -> PartitionVerdict:
        """The partition's verdict with the index's figure where it improves on the window's (as `with_index`): by
        `lag_seconds_by_index`, each partition's table (`index_table`) made once for all the groups that read it."""
        return _indexed(verdict, self.history.get(verdict.tp, ()), self.now, self._tables)

    def baselines(
        self, tps: Sequence[TopicPartition], log_ends: Sequence[int], measured_at: float
    ) -> tuple[tuple[float, float | None], ...]:
        """`baselines` of a group's partitions without the arrays (`lagbot check`), each partition's rates found once
        for all the groups measured at `measured_at` that read it at the same log end."""
        seen = self._rates.setdefault(measured_at, {})
        return baselines(tps, log_ends, self.history, measured_at, seen)

    def improve_rows(
        self,
        tps: Sequence[TopicPartition],
        committed: NDArray[np.int64],
        log_end: NDArray[np.int64],
        lags: Sequence[int],
        seconds: Sequence[float | None],
        bounds: Sequence[bool],
    ) -> tuple[list[float | None], list[bool], list[str | None]]:
        """`improve` of the verdicts of partitions `tps` (their newest committed offsets, log ends and lags, and the
        window's figures), before they are made: each one's figure of lag in seconds, whether it is a lower bound and
        which method gave it (`PartitionVerdict.lag_seconds_method`). The figures of those the arrays take are found
        at once (lagbot.engine.rows `lag_seconds_tables`)."""
        import numpy as np

        self.make_arrays()
        if None not in seconds:
            by_arrays = self._improve_by_arrays(tps, committed, log_end, lags, seconds, bounds)
            if by_arrays is not None:
                return by_arrays
        found, lower, methods = list(seconds), list(bounds), [None if s is None else "window" for s in seconds]
        row_of, kind = self.row, self.kind
        wanted = [  # lagging, and the window's figure is unknown or a lower bound (`_wants_index`), with points
            (j, row)
            for j, (tp, lag, window, bound) in enumerate(zip(tps, lags, seconds, bounds, strict=True))
            if lag and (window is None or bound) and (row := row_of.get(tp)) is not None and kind[row] != _NO_TABLE
        ]
        if not wanted:
            return found, lower, methods
        at = np.array([j for j, _ in wanted], dtype=np.intp)
        exact = _exact(committed[at]) and _exact(log_end[at])
        arrays = [(j, row) for j, row in wanted if exact and kind[row] == _ARRAYS]
        for j, row in wanted if len(arrays) < len(wanted) else ():
            if not exact or kind[row] == _SCALAR:
                figure = lag_seconds_by_index(self.history[tps[j]], int(committed[j]), int(log_end[j]), self.now)
                _take(j, seconds[j], figure, found, lower, methods)
        if not arrays:
            return found, lower, methods
        if len(arrays) < len(wanted):
            at = np.array([j for j, _ in arrays], dtype=np.intp)
        rows = np.array([row for _, row in arrays], dtype=np.intp)
        ends = np.concatenate((self.ends[rows], log_end[at][:, None]), axis=1)
        figures = zip(*lag_seconds_tables(self.times[rows], ends, committed[at], self.now), strict=True)
        for (j, _), figure in zip(arrays, figures, strict=True):
            _take(j, seconds[j], figure, found, lower, methods)
        return found, lower, methods

    def _improve_by_arrays(
        self,
        tps: Sequence[TopicPartition],
        committed: NDArray[np.int64],
        log_end: NDArray[np.int64],
        lags: Sequence[int],
        seconds: Sequence[float | None],
        bounds: Sequence[bool],
    ) -> tuple[list[float | None], list[bool], list[str | None]] | None:
        """`improve_rows` where every window figure is known (a window of two samples or more) and the arrays take
        every figure the index gives (none judged by `lag_seconds_by_index`): which partitions want a figure, which
        figures win, and the lists, by array operations. None otherwise."""
        import numpy as np

        rows = np.array([self.row.get(tp, -1) for tp in tps], dtype=np.intp)
        kinds = self.kinds[rows]  # -1, not in the index: the last, _NO_TABLE
        lower = np.array(bounds, dtype=np.bool_)
        at = np.flatnonzero((np.asarray(lags) > 0) & lower & (kinds != _NO_TABLE))  # `_wants_index`, with points
        found = np.array(seconds, dtype=np.float64)
        indexed = np.zeros(len(tps), dtype=np.bool_)
        if len(at):
            if (kinds[at] == _SCALAR).any() or not (_exact(committed[at]) and _exact(log_end[at])):
                return None
            ends = np.concatenate((self.ends[rows[at]], log_end[at][:, None]), axis=1)
            figures, bound = lag_seconds_arrays(self.times[rows[at]], ends, committed[at], self.now)
            wins = ~bound | (figures > found[at])  # `index_wins` of a known window figure
            took = at[wins]
            found[took], lower[took], indexed[took] = figures[wins], bound[wins], True
        methods: list[str | None] = [_METHODS[won] for won in indexed.tolist()]
        figures_found: list[float | None] = found.tolist()
        return figures_found, lower.tolist(), methods

    def baselines_of(
        self, tps: Sequence[TopicPartition], log_ends: Sequence[int] | NDArray[np.int64], measured_at: float
    ) -> tuple[tuple[float, float | None], ...]:
        """`baselines` of a group's partitions (their log ends: a list, or an array of a window's arrays), each
        horizon's rates found at once and summed in the partitions' order as `baselines` sums them (Python's `sum`
        of the same floats: the same total, to the last bit)."""
        import numpy as np

        self.make_arrays()
        row_of, summed = self.row, self.summed
        rows = [row_of.get(tp, -1) for tp in tps]
        marks = [summed[r] if r >= 0 else _LEFT_OUT for r in rows]
        if _ROUNDED in marks or _SUMMED not in marks or not self.horizons or not _exact_ints(log_ends):
            return baselines(tps, list(log_ends), self.history, measured_at)  # the rule, with Python's ints
        taken = [j for j, mark in enumerate(marks) if mark == _SUMMED]
        ends = np.asarray(log_ends, dtype=np.int64)
        at = np.array(rows, dtype=np.intp)
        if len(taken) < len(rows):
            ends, at = ends[taken], at[taken]
        if not _exact(ends):
            return baselines(tps, list(log_ends), self.history, measured_at)
        past_at = self.past_at[at]
        after = measured_at > past_at
        known = (self.past_known[at] & after).all(axis=0).tolist()
        rates = ((ends[:, None] - self.past_end[at]) / np.where(after, measured_at - past_at, 1.0)).T.tolist()
        found = [(h, sum(r) if ok else None) for h, ok, r in zip(self.horizons, known, rates, strict=True)]
        return tuple(reversed(found))

    def baselines_of_stack(
        self, tps: Sequence[TopicPartition], log_ends: NDArray[np.int64], edges: Sequence[int], measured_at: float
    ) -> list[tuple[tuple[float, float | None], ...]]:
        """`baselines_of` of many groups measured at the same time (windows with the same sample times, stacked:
        lagbot.engine.batch), the groups' partitions and log ends one after the other, group g's from edges[g] to
        edges[g + 1]: each horizon's rates of all their partitions found at once, each group's summed in its
        partitions' order as `baselines_of` sums them. A group `baselines_of` would not take by arrays is judged
        by it."""
        import numpy as np

        self.make_arrays()
        row_of, summed = self.row, self.summed
        rows = [row_of.get(tp, -1) for tp in tps]
        marks = [summed[r] if r >= 0 else _LEFT_OUT for r in rows]
        taken = [j for j, mark in enumerate(marks) if mark == _SUMMED]
        if not self.horizons or not _exact(log_ends[taken]):
            return [self.baselines_of(tps[lo:hi], log_ends[lo:hi], measured_at) for lo, hi in pairwise(edges)]
        at = np.array(rows, dtype=np.intp)[taken]
        past_at = self.past_at[at]
        after = measured_at > past_at
        unknown = np.cumsum(~(self.past_known[at] & after), axis=0).T.tolist()  # per horizon, unknown rates so far
        rates = (
            (log_ends[taken][:, None] - self.past_end[at]) / np.where(after, measured_at - past_at, 1.0)
        ).T.tolist()
        found = []
        for lo, hi in pairwise(edges):
            first, last = bisect_left(taken, lo), bisect_left(taken, hi)  # the group's rows in `taken`
            group_marks = marks[lo:hi]
            if first == last or _ROUNDED in group_marks:
                found.append(self.baselines_of(tps[lo:hi], log_ends[lo:hi], measured_at))
                continue
            per_horizon = [
                (h, sum(r[first:last]) if u[last - 1] == (u[first - 1] if first else 0) else None)
                for h, u, r in zip(self.horizons, unknown, rates, strict=True)
            ]
            found.append(tuple(reversed(per_horizon)))
        return found


def _known_before(points: Sequence[IndexPoint], now: float) -> list[tuple[float, int]]:
    """The (time, log end) of the known points before now, oldest first: `lag_seconds_by_index`'s table but now."""
    table = [(p.at, p.log_end) for p in points if p.log_end is not None and p.at < now]
    table.sort(key=_time)  # stable, as `sorted` in lag_seconds_by_index
    return table


def _kind(table: Sequence[tuple[float, int]]) -> int:
    """How `IndexTables` finds the figure of a partition with this table (`_NO_TABLE`, `_ARRAYS`, `_SCALAR`)."""
    if not table:
        return _NO_TABLE
    return _ARRAYS if all(0 <= end < _EXACT_LIMIT for _, end in table) else _SCALAR


def _exact_ints(offsets: Sequence[int] | NDArray[np.int64]) -> bool:
    """The offsets fit an int64 array: an array already, or ints from 0 to below `_EXACT_LIMIT`."""
    return not isinstance(offsets, list | tuple) or all(0 <= end < _EXACT_LIMIT for end in offsets)


def _exact(offsets: NDArray[np.int64]) -> bool:
    """The offsets are ones the arrays take exactly (from 0 to below `_EXACT_LIMIT`)."""
    return not len(offsets) or (int(offsets.min()) >= 0 and int(offsets.max()) < _EXACT_LIMIT)


_NO_TABLE, _ARRAYS, _SCALAR = 0, 1, 2
"""How `IndexTables` finds a partition's figure: none (no known point), by the arrays, by `lag_seconds_by_index`."""
_METHODS = ("window", "time_index")
"""`lag_seconds_method` of a known figure: the window's (False) or the index's (True)."""
_LEFT_OUT, _SUMMED, _ROUNDED = 0, 1, 2
"""How `IndexTables.baselines_of` takes a partition's rates (`IndexTables.summed`)."""


def _take(
    j: int,
    window: float | None,
    figure: tuple[float | None, bool],
    seconds: list[float | None],
    bounds: list[bool],
    methods: list[str | None],
) -> None:
    """Put the index's `figure` of the j-th partition in place of the window's (`window`) where it wins, as
    `_with_figure` does."""
    found, bound = figure
    if index_wins(window, found, bound):
        seconds[j], bounds[j], methods[j] = found, bound, "time_index"
