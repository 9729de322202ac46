"""The windows of a snapshot judged together (lagbot.engine.batch: their arrays stacked, each array rule run once) give
every group the verdict its window gets alone, and the verdict of the per-partition route, to the last bit.

Random cluster histories (tests/support/histories.py: idle and moving consumers, lag of zero, missing commits,
rewinds, recreated topics, partitions that come and go, owners, offsets too big for the arrays) are appended to a
store with arrays and one without; now and then a group misses a snapshot, so that the windows of one cycle have
different sample times (stacks of their own). Each cycle is judged with and without the broker's time index (random
points, some unknown), three ways: `judge` (the stacks), `judge_window` of each window alone (a stack of one) and
`judge` of the windows without arrays (the per-partition route, the proven one).
"""

from __future__ import annotations

import itertools
import random
from types import SimpleNamespace

import numpy as np
import pytest

from lagbot.core.config import Evaluation, Settings, build_settings
from lagbot.core.model import ClusterSnapshot, GroupVerdict, GroupWindow, TopicPartition
from lagbot.engine import check
from lagbot.engine.batch import group_rows
from lagbot.engine.check import judge, judge_window
from lagbot.engine.index_tables import IndexTables
from lagbot.engine.timeindex import IndexPoint
from lagbot.engine.window import MemoryWindowStore
from tests.support.histories import CLUSTER, GROUPS, History

SETTINGS = build_settings({"clusters": [{"name": CLUSTER, "bootstrap_servers": "127.0.0.1:1"}]}, source="test")
RULES = (Evaluation(), Evaluation(min_samples=2, min_span=0.0))


def index_points(
    rng: random.Random, snapshot: ClusterSnapshot, now: float
) -> dict[TopicPartition, tuple[IndexPoint, ...]]:
    """The time index's points of the snapshot's partitions, one per horizon (the same horizons for all, as the bot
    asks them), some unknown, some partitions without points."""
    horizons = sorted(rng.sample([30.0, 60.0, 300.0, 900.0, 3600.0], rng.randint(1, 4)), reverse=True)
    return {
        tp: tuple(
            IndexPoint(now - h, None if rng.random() < 0.2 else max(0, end - rng.choice([0, 1, 40, 500, 5_000])), h)
            for h in horizons
        )
        for tp, end in snapshot.log_end.items()
        if rng.random() < 0.9
    }


def alone(
    snapshot: ClusterSnapshot,
    windows: dict[str, object],
    settings: Settings,
    now: float,
    history: dict[TopicPartition, tuple[IndexPoint, ...]] | None,
) -> list[GroupVerdict]:
    """`judge` of each window on its own: its arrays a stack of one."""
    index = IndexTables(history, now) if history else None
    return [
        judge_window(windows[name], settings, now, None, index)  # type: ignore[arg-type]
        for name, group in sorted(snapshot.groups.items())
        if group.error is None and name in windows
    ]


def run(seed: int, histories: int) -> tuple[int, int]:
    """Judge random histories the three ways; returns (groups judged, groups judged in a stack of two or more)."""
    rng = random.Random(seed)
    judged = stacked = 0
    for _ in range(histories):
        samples = rng.randint(1, 8)
        with_arrays, without = MemoryWindowStore(samples=samples), MemoryWindowStore(samples=samples, arrays=False)
        history = History(rng)
        for _ in range(rng.randint(1, 12)):
            snapshot = history.step()
            if rng.random() < 0.2:  # a group missing from this snapshot: its window's times differ from the others'
                missing = rng.choice(GROUPS)
                snapshot.groups.pop(missing)
            with_arrays.append(snapshot)
            without.append(snapshot)
            now = snapshot.taken_at + rng.choice([0.0, 5.0, 300.0])
            points = index_points(rng, snapshot, now) if rng.random() < 0.6 else None
            windows = with_arrays.windows(CLUSTER, list(snapshot.groups))
            settings = SETTINGS.model_copy(update={"evaluation": rng.choice(RULES)})
            found = judge(snapshot, windows, settings, now, history=points)
            assert found == alone(snapshot, windows, settings, now, points)  # type: ignore[arg-type]
            python_way = without.windows(CLUSTER, list(snapshot.groups))
            assert found == judge(snapshot, python_way, settings, now, history=points)
            judged += len(found)
            by_times: dict[tuple[float, ...], int] = {}
            for window in windows.values():
                if window.columns is not None:
                    by_times[window.columns.times] = by_times.get(window.columns.times, 0) + 1
            stacked += sum(n for n in by_times.values() if n >= 2)
    return judged, stacked


def test_a_stack_judges_every_window_as_it_is_judged_alone_and_by_partitions() -> None:
    judged, stacked = run(seed=7, histories=80)
    assert stacked > judged // 4 > 50  # a proof only if many windows were judged in stacks


@pytest.mark.parametrize("seed", [1, 2])
def test_more_stacks(seed: int) -> None:
    run(seed=seed, histories=40)


def test_the_rows_of_a_stack_are_each_windows_own() -> None:
    rng = random.Random(3)
    store = MemoryWindowStore(samples=5)
    history = History(rng)
    while True:
        history.big = False
        for _ in range(5):
            snapshot = history.step()
            store.append(snapshot)
        windows = store.windows(CLUSTER, list(GROUPS))
        if all(w.columns is not None for w in windows.values()):
            break
    now = snapshot.taken_at + 5.0
    together = group_rows(windows.values(), Evaluation(), now)
    for name, window in windows.items():
        assert together[name].at == group_rows([window], Evaluation(), now)[name].at
        assert together[name].findings == group_rows([window], Evaluation(), now)[name].findings
        assert together[name].totals == group_rows([window], Evaluation(), now)[name].totals


def test_the_baselines_of_a_stack_are_each_groups_own() -> None:
    # Groups of one to four partitions (the first partition of a group may have a point unknown, or no points), each
    # group's baselines by `baselines_of_stack` against `baselines_of` of the group alone.
    rng = random.Random(5)
    now, compared = 10_000.0, 0
    for _ in range(300):
        horizons = sorted(rng.sample([30.0, 60.0, 300.0, 3600.0], rng.randint(1, 3)), reverse=True)
        sizes = [rng.randint(1, 4) for _ in range(rng.randint(1, 5))]
        tps = [("orders", p) for p in range(sum(sizes))]
        ends = np.array([rng.choice([0, 100, 5_000]) for _ in tps], dtype=np.int64)
        history = {
            tp: tuple(
                IndexPoint(now - h, None if rng.random() < 0.15 else max(0, int(end) - rng.choice([0, 30, 900])), h)
                for h in (horizons if rng.random() < 0.9 else horizons[:-1])
            )
            for tp, end in zip(tps, ends.tolist(), strict=True)
            if rng.random() < 0.85
        }
        if not history:
            continue
        index = IndexTables(history, now)
        edges = [0, *itertools.accumulate(sizes)]
        measured_at = now - rng.choice([0.0, 5.0])
        found = index.baselines_of_stack(tps, ends, edges, measured_at)
        expected = [index.baselines_of(tps[lo:hi], ends[lo:hi], measured_at) for lo, hi in itertools.pairwise(edges)]
        assert found == expected
        compared += sum(rate is not None for baselines in found for _, rate in baselines)
    assert compared > 300


def test_windows_judged_in_batches_of_a_few_partitions_are_judged_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    """`judge` cuts a snapshot's groups into batches of a few partitions (`BATCH_PARTITIONS`): the same verdicts."""
    monkeypatch.setattr(check, "BATCH_PARTITIONS", 3)
    judged, _ = run(seed=5, histories=30)
    assert judged > 100


def test_batches_keep_the_order_and_hold_at_most_the_limit_but_for_one_large_group() -> None:
    def window(partitions: int) -> GroupWindow:
        return SimpleNamespace(partitions=dict.fromkeys(range(partitions)))  # type: ignore[return-value]

    windows = {"a": window(2), "b": window(2), "c": window(5), "d": window(1), "e": window(1)}
    assert list(check._batches(["a", "b", "c", "d", "e", "x"], windows, 4)) == [["a", "b"], ["c"], ["d", "e", "x"]]
    assert list(check._batches(["a", "b"], windows, 100)) == [["a", "b"]]
    assert list(check._batches([], windows, 4)) == []
