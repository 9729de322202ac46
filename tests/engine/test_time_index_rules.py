"""`with_index` without a broker: the baseline produce rates per horizon and the lag seconds the index adds,
checked against figures worked out by hand (tests/engine/test_time_index.py asks a real broker)."""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np

from lagbot.core.model import GroupState, GroupVerdict, PartitionVerdict, Severity, Status, TopicPartition, Trend
from lagbot.engine.evaluate import group_lag_seconds
from lagbot.engine.index_figures import baselines, partition_with_index, with_index
from lagbot.engine.index_tables import IndexTables
from lagbot.engine.timeindex import IndexPoint, point


def partition(p: int, committed: int | None, log_end: int, seconds: float | None, bound: bool) -> PartitionVerdict:
    lag = None if committed is None else max(0, log_end - committed)
    return PartitionVerdict(
        topic="orders", partition=p, committed=committed, log_end=log_end, log_start=0, lag=lag, lag_seconds=seconds,
        lag_seconds_lower_bound=bound, status=Status.OK, reason="", produce_rate=None, consume_rate=None, owner=None,
        lag_seconds_method=None if seconds is None else "window",
    )  # fmt: skip


def verdict(*partitions: PartitionVerdict) -> GroupVerdict:
    return GroupVerdict(
        cluster="prod", group="billing", state=GroupState.STABLE, status=Status.OK, severity=Severity.OK,
        severity_reason="", partitions=partitions, total_lag=None, max_lag_seconds=None, produce_rate=None,
        consume_rate=None, eta_seconds=None, trend=Trend.UNKNOWN,
    )  # fmt: skip


NOW = 10_000.0


def test_baselines_sum_every_partition_per_horizon_and_are_unknown_where_one_is() -> None:
    # Two horizons, 600 s and 60 s. orders-0 wrote 1,000 -> 1,600 (600 s) and 1,540 -> 1,600 (60 s); orders-1 has
    # no data 600 s old, so the group's 600 s baseline is unknown; orders-2 has no points at all and is left out.
    history = {
        ("orders", 0): (IndexPoint(NOW - 600, 1_000, 600.0), IndexPoint(NOW - 60, 1_540, 60.0)),
        ("orders", 1): (IndexPoint(NOW - 600, None, 600.0), IndexPoint(NOW - 60, 170, 60.0)),
    }
    judged = verdict(
        partition(0, 1_600, 1_600, 0.0, False), partition(1, 200, 200, 0.0, False), partition(2, 5, 9, 1.0, False)
    )
    found = with_index(judged, history, NOW, NOW)
    assert found.baseline_produce == ((60.0, 60 / 60 + 30 / 60), (600.0, None))
    assert found.partitions == judged.partitions  # caught up, or an exact window figure: the index adds nothing


def test_the_index_replaces_a_lower_bound_it_improves_on_and_fills_an_unknown() -> None:
    # orders-0: committed 1,100, written between the 600 s point (log end 1,000) and the 60 s point (1,540): at
    # NOW - 600 + 100/540 * 540 s = NOW - 500 s, exact; the window only knew "at least 30 s". orders-1: the window
    # had no figure; committed 50 is older than the oldest point (log end 100 at NOW - 600): at least 600 s.
    # orders-2: the window's lower bound of 900 s is longer than the index's 600 s lower bound: it stays.
    points = (IndexPoint(NOW - 600, 1_000, 600.0), IndexPoint(NOW - 60, 1_540, 60.0))
    old = (IndexPoint(NOW - 600, 100, 600.0), IndexPoint(NOW - 60, 150, 60.0))
    history = {("orders", 0): points, ("orders", 1): old, ("orders", 2): old}
    judged = verdict(
        partition(0, 1_100, 1_600, 30.0, True), partition(1, 50, 200, None, False), partition(2, 50, 200, 900.0, True)
    )
    found = with_index(judged, history, NOW, NOW)
    assert [(p.lag_seconds, p.lag_seconds_lower_bound, p.lag_seconds_method) for p in found.partitions] == [
        (500.0, False, "time_index"),
        (600.0, True, "time_index"),
        (900.0, True, "window"),
    ]
    assert found.max_lag_seconds == 900.0


def test_a_point_keeps_its_horizon() -> None:
    assert point(NOW - 60, None, 50, 0, 60.0) == IndexPoint(NOW - 60, None, 60.0)
    assert point(NOW - 60, -1, 50, 0, 60.0) == IndexPoint(NOW - 60, 50, 60.0)
    assert point(NOW - 60, 3, 50, 3, 60.0) == IndexPoint(NOW - 60, None, 60.0)
    assert point(NOW - 60, 7, 50, 3) == IndexPoint(NOW - 60, 7, 0.0)


def random_points(rng: random.Random) -> tuple[tuple[IndexPoint, ...], int, int]:
    """A partition's index points (some unknown, some at or after now, out of order, log ends that fall, ties),
    with its committed offset and log end: lagging, or caught up; now and then offsets too big for int64 sums."""
    big = 2**60 if rng.random() < 0.05 else 0
    horizons = rng.sample([30.0, 60.0, 300.0, 900.0, 3600.0, -5.0], rng.randint(0, 5))
    points = tuple(
        IndexPoint(NOW - h, None if rng.random() < 0.2 else big + rng.choice([0, 10, 500, 900, 1_000]), h)
        for h in horizons
    )
    log_end = big + rng.choice([0, 900, 1_000, 1_200])
    committed = log_end - rng.choice([0, 1, 100, 450, 1_100, 1_200])
    return points, max(committed, big), log_end


def by_tables(judged: GroupVerdict, history: dict[TopicPartition, tuple[IndexPoint, ...]]) -> GroupVerdict:
    """`with_index` by `IndexTables`: the figures of all partitions at once, and the baselines by arrays."""
    index = IndexTables(history, NOW)
    parts = judged.partitions
    tps, log_ends = [p.tp for p in parts], [p.log_end for p in parts]
    figures = index.improve_rows(
        tps,
        np.array([p.committed for p in parts], dtype=np.int64),
        np.array(log_ends, dtype=np.int64),
        [p.lag or 0 for p in parts],
        [p.lag_seconds for p in parts],
        [p.lag_seconds_lower_bound for p in parts],
    )
    partitions = tuple(
        replace(p, lag_seconds=s, lag_seconds_lower_bound=b, lag_seconds_method=m)
        for p, s, b, m in zip(parts, *figures, strict=True)
    )
    assert partitions == tuple(index.improve(p) for p in parts)
    return replace(
        judged,
        partitions=partitions,
        max_lag_seconds=group_lag_seconds(partitions),
        baseline_produce=index.baselines_of(tps, log_ends, NOW),
    )


def test_the_index_tables_give_with_index_verdict() -> None:
    rng = random.Random(42)
    lower_bounds = exact = baselines = 0
    for _ in range(300):
        drawn = [random_points(rng) for _ in range(rng.randint(1, 12))]
        window_figures = [rng.choice([(None, False), (5.0, True), (2_000.0, True), (40.0, False)]) for _ in drawn]
        judged = verdict(
            *(partition(j, c, e, s, b) for j, ((_, c, e), (s, b)) in enumerate(zip(drawn, window_figures, strict=True)))
        )
        history = {("orders", j): p for j, (p, _, _) in enumerate(drawn) if p or rng.random() < 0.5}
        if not history:
            continue
        found = by_tables(judged, history)
        assert found == with_index(judged, history, NOW, NOW)
        indexed = [p for p in found.partitions if p.lag_seconds_method == "time_index"]
        lower_bounds += sum(p.lag_seconds_lower_bound for p in indexed)
        exact += sum(not p.lag_seconds_lower_bound for p in indexed)
        baselines += sum(rate is not None for _, rate in found.baseline_produce)
    assert lower_bounds >= 10 and exact >= 10 and baselines >= 10


def test_one_index_judges_partitions_shared_by_groups_as_the_rules_do() -> None:
    # `lagbot check` judges each group's partitions by `IndexTables.improve` and `IndexTables.baselines`, which make
    # a partition's table and rates once for the groups that read it: the same partitions asked again, with other
    # committed offsets, log ends and times measured at, must get the rules' answers.
    rng = random.Random(8)
    improved = 0
    for _ in range(100):
        horizons = rng.sample([30.0, 60.0, 300.0, 900.0, 3600.0], rng.randint(1, 4))
        history = {
            ("orders", j): tuple(
                IndexPoint(NOW - h, None if rng.random() < 0.2 else rng.choice([0, 10, 500, 900, 1_000]), h)
                for h in horizons
            )
            for j in range(4)
        }
        index = IndexTables(history, NOW)
        for _ in range(6):
            drawn = [(j, *random_points(rng)[1:]) for j in range(4) if rng.random() < 0.8]
            parts = [partition(j, c, e, rng.choice([None, 5.0, 2_000.0]), True) for j, c, e in drawn]
            assert [index.improve(p) for p in parts] == [partition_with_index(p, history[p.tp], NOW) for p in parts]
            improved += sum(index.improve(p).lag_seconds_method == "time_index" for p in parts)
            tps, ends = [p.tp for p in parts], [p.log_end for p in parts]
            measured_at = NOW - rng.choice([0.0, 1.0])
            assert index.baselines(tps, ends, measured_at) == baselines(tps, ends, history, measured_at)
    assert improved > 100
