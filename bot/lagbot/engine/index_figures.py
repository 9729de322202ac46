"""What the broker's time index adds to a group's verdict, one partition at a time.

From the index's points (lagbot.engine.timeindex `IndexPoint`) a single check knows what no window of its own has
yet:

- the baseline produce rate of each partition over horizons before now (e.g. 1, 5, 15 and 60 min):
  (log end now - log end at now - h) / h (`baseline_rate`), None where the partition has no data that old; a
  group's is the sum of its partitions' (`baselines`);
- lag in seconds from the first check: when the first unconsumed message was written, by the same bounded
  interpolation the window uses (lagbot.engine.rates `lag_seconds`) on the (time, log end) points of the index, never
  extrapolated beyond the oldest point (older than that is a lower bound): `lag_seconds_by_index`.

`with_index` puts both in a verdict the window made. The same figures as arrays, made once per cycle for all the
groups, are lagbot.engine.index_tables. Nothing here reads a clock: `now` is an argument.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from lagbot.core.model import GroupVerdict, PartitionSample, PartitionVerdict, TopicPartition
from lagbot.engine.evaluate import group_lag_seconds
from lagbot.engine.rates import lag_seconds
from lagbot.engine.timeindex import IndexPoint


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
    partitions = tuple(partition_with_index(p, history.get(p.tp, ()), now) for p in verdict.partitions)
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


def partition_with_index(
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
