"""The broker's time index of a cycle's partitions as arrays (`IndexTables`): the figures of
lagbot.engine.index_figures (lag in seconds, baseline produce rates), made once per cycle for every group that reads
the same partitions, by array operations where the offsets allow.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from lagbot.core.model import PartitionSample, PartitionVerdict, TopicPartition
from lagbot.engine.index_figures import baselines, index_wins, lag_seconds_by_index, partition_with_index
from lagbot.engine.rows import lag_seconds_arrays, lag_seconds_tables
from lagbot.engine.timeindex import IndexPoint
from lagbot.engine.window_entries import EXACT_LIMIT

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

# Offsets at or above EXACT_LIMIT (or negative) are judged by `lag_seconds_by_index` and `baselines`, as the windows
# judge them (lagbot.engine.window_entries): int64 and float64 arithmetic on them would not be exact.


def _time(point: tuple[float, int]) -> float:
    return point[0]


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
        exact = [all(e is None or 0 <= e < EXACT_LIMIT for e in row) for row in ends]
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
        return partition_with_index(verdict, self.history.get(verdict.tp, ()), self.now, self._tables)

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
    return _ARRAYS if all(0 <= end < EXACT_LIMIT for _, end in table) else _SCALAR


def _exact_ints(offsets: Sequence[int] | NDArray[np.int64]) -> bool:
    """The offsets fit an int64 array: an array already, or ints from 0 to below `EXACT_LIMIT`."""
    return not isinstance(offsets, list | tuple) or all(0 <= end < EXACT_LIMIT for end in offsets)


def _exact(offsets: NDArray[np.int64]) -> bool:
    """The offsets are ones the arrays take exactly (from 0 to below `EXACT_LIMIT`)."""
    return not len(offsets) or (int(offsets.min()) >= 0 and int(offsets.max()) < EXACT_LIMIT)


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
