"""The time index given to the evaluator (`IndexTables`, built once per cycle) gives the verdicts `with_index` gives.

`lagbot run` judges a group with the index's figures of lag in seconds put in its partitions' verdicts as they are
made (lagbot.engine.check `judge_window`), and its baselines found by arrays. The reference is the rules one
partition at a time: the window's verdict by the per-partition route, then `with_index`. Random histories (those of
tests/engine/test_evaluate_columns.py) and random index points (unknown, at or after now, out of order, fewer than
the horizons, offsets too big for the arrays) are judged both ways; verdicts, causes included, must be equal.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

from lagbot.core.config import Settings, build_settings
from lagbot.core.model import ClusterSnapshot, GroupVerdict, GroupWindow, TopicPartition
from lagbot.engine.check import judge_window
from lagbot.engine.diagnose import diagnose
from lagbot.engine.evaluate import evaluate_group
from lagbot.engine.index_figures import with_index
from lagbot.engine.index_tables import IndexTables
from lagbot.engine.timeindex import IndexPoint
from lagbot.engine.window import MemoryWindowStore
from tests.support.histories import CLUSTER, GROUPS, History

HORIZONS = (3600.0, 900.0, 300.0, 60.0)


def settings() -> Settings:
    return build_settings({"clusters": [{"name": CLUSTER, "bootstrap_servers": "127.0.0.1:1"}]}, source="test")


def index_points(
    rng: random.Random, snapshot: ClusterSnapshot, now: float
) -> dict[TopicPartition, tuple[IndexPoint, ...]]:
    """Each partition's points, oldest first as the cache gives them, some left out or shorter, some unknown."""
    points: dict[TopicPartition, tuple[IndexPoint, ...]] = {}
    for tp, end in snapshot.log_end.items():
        if rng.random() < 0.1:
            continue
        horizons = HORIZONS if rng.random() < 0.8 else tuple(rng.sample(HORIZONS, rng.randint(0, 3)))
        points[tp] = tuple(
            IndexPoint(
                now - h + rng.choice([0.0, 0.0, 0.0, h + 1.0]),
                None if rng.random() < 0.15 else max(0, end - rng.choice([0, 1, 40, 500, 5_000, end])),
                h,
            )
            for h in horizons
        )
    return points


def by_the_rules(window: GroupWindow, points: dict[TopicPartition, tuple[IndexPoint, ...]], now: float) -> GroupVerdict:
    """What `judge_window` gave before the evaluator took the index: the per-partition route, then `with_index`."""
    rules = settings().evaluation
    python_way = replace(window, columns=None)
    verdict = evaluate_group(python_way, thresholds=settings().thresholds, rules=rules, now=now)
    verdict = with_index(verdict, points, now, window.samples[-1].at)
    return replace(verdict, causes=diagnose(verdict, python_way, rules))


def count_routes(monkeypatch: pytest.MonkeyPatch) -> dict[bool, int]:
    """Counts of `improve_rows` by array operations alone (True) and of its fallback to its lists (False)."""
    routes = {True: 0, False: 0}
    by_arrays = IndexTables._improve_by_arrays

    def counted(self: IndexTables, *args: Any) -> Any:
        found = by_arrays(self, *args)
        routes[found is not None] += 1
        return found

    monkeypatch.setattr(IndexTables, "_improve_by_arrays", counted)
    return routes


def test_the_index_given_to_the_evaluator_gives_with_index_verdicts(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(51)
    configured = settings()
    judged = from_arrays = known_baselines = 0
    routes = count_routes(monkeypatch)
    for _ in range(40):
        store = MemoryWindowStore(samples=rng.randint(2, 8))
        history = History(rng)
        for _ in range(rng.randint(2, 10)):
            snapshot = history.step()
            store.append(snapshot)
            now = snapshot.taken_at + rng.choice([0.0, 5.0, 300.0])
            points = index_points(rng, snapshot, now)
            if not points:
                continue
            index = IndexTables(points, now)
            for window in store.windows(CLUSTER, list(GROUPS)).values():
                verdict = judge_window(window, configured, now, index=index)
                assert verdict == by_the_rules(window, points, now)
                judged += 1
                if window.columns is not None:
                    from_arrays += sum(p.lag_seconds_method == "time_index" for p in verdict.partitions)
                    known_baselines += sum(rate is not None for _, rate in verdict.baseline_produce)
    # A proof only if the array forms gave figures and baselines.
    assert routes[True] > 100
    assert judged > 300
    assert from_arrays > 200
    assert known_baselines > 100


def test_big_offsets_in_the_index_are_judged_by_the_scalar_rules() -> None:
    rng = random.Random(52)
    history = History(rng)
    history.big = True  # offsets from 2**50: windows without arrays, tables the arrays would round
    store = MemoryWindowStore(samples=4)
    for _ in range(4):
        snapshot = history.step()
        store.append(snapshot)
    now = snapshot.taken_at + 5.0
    # A committed offset older than the window was written between the two points or after the newer one.
    points = {
        tp: (IndexPoint(now - 3600, 2**50, 3600.0), IndexPoint(now - 60, 2**50 + 3, 60.0)) for tp in snapshot.log_end
    }
    index = IndexTables(points, now)
    figures = 0
    for window in store.windows(CLUSTER, list(GROUPS)).values():
        verdict = judge_window(window, settings(), now, index=index)
        assert verdict == by_the_rules(window, points, now)
        figures += sum(p.lag_seconds_method == "time_index" for p in verdict.partitions)
    assert figures > 0
    assert not index.arrays_made  # windows without arrays are judged one partition at a time: no arrays made
    index.make_arrays()
    assert set(index.kind) == {2}  # and had they been: the scalar rule for these tables, never the arrays


def test_index_points_the_arrays_would_round_next_to_windows_with_arrays(monkeypatch: pytest.MonkeyPatch) -> None:
    # Windows with arrays, and index log ends past what the arrays take: improve_rows leaves its array operations
    # for its lists and `lag_seconds_by_index`.
    routes = count_routes(monkeypatch)
    rng = random.Random(53)
    for _ in range(20):
        history = History(rng)
        history.big = False
        store = MemoryWindowStore(samples=rng.randint(2, 6))
        for _ in range(rng.randint(2, 8)):
            snapshot = history.step()
            store.append(snapshot)
            now = snapshot.taken_at + 5.0
            points = {
                tp: (IndexPoint(now - 3600, 2**50, 3600.0), IndexPoint(now - 60, 0, 60.0)) for tp in snapshot.log_end
            }
            index = IndexTables(points, now)
            for window in store.windows(CLUSTER, list(GROUPS)).values():
                assert judge_window(window, settings(), now, index=index) == by_the_rules(window, points, now)
    assert routes[False] > 0
