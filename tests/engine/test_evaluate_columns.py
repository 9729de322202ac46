"""The array route of the evaluator gives the same verdicts as the per-partition route, to the last bit.

A window read from a window store carries `columns` (its offsets as arrays), and `evaluate_group` then
judges all partitions of the group with a few array operations instead of a Python loop over every sample
(lagbot.engine.evaluate `evaluate_partitions`, `group_points`). The per-partition route is the proven one
(tests/engine/test_evaluate_cases.py, which builds its windows by hand, without columns). Here random
histories (idle and moving consumers, lag of zero, missing commits, rewinds, recreated topics, partitions
that come and go, owners, duplicate sample times, offsets too big for the arrays) are appended to both
stores, and every group is judged both ways: the verdicts, causes included, must be equal, floats exactly.
The windows themselves are checked against a transposition done here from the appended snapshots.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import pytest
import redis

from lagbot.core.config import Evaluation, Level, Thresholds
from lagbot.core.model import (
    ClusterSnapshot,
    ColumnSamples,
    GroupSnapshot,
    GroupState,
    GroupVerdict,
    GroupWindow,
    Member,
    PartitionSample,
    Status,
    TopicPartition,
)
from lagbot.engine.diagnose import diagnose
from lagbot.engine.evaluate import evaluate_group, group_points
from lagbot.engine.facts import window_facts
from lagbot.engine.ownership import Owners
from lagbot.engine.rates import consume_rate, lag_seconds, produce_rate
from lagbot.engine.rows import consume_rates, lag_seconds_rows, plain_findings, plain_rows, produce_rates
from lagbot.engine.rules import partition_status
from lagbot.engine.siblings import commit_times, commit_times_rows, still_and_growing, still_and_growing_rows
from lagbot.engine.window import MemoryWindowStore, RedisWindowStore, WindowStore
from lagbot.engine.window_entries import Entry, decode_entry, encode_entry, entry_of, new_entry
from tests.support.histories import CLUSTER, GROUPS, History

THRESHOLDS = (
    Thresholds(),
    Thresholds(
        warn=Level(messages=50, growing=True, sustained_for=20.0),
        critical=Level(seconds=30.0, sustained_for=10.0),
        page=Level(messages=5_000, doubling_within=60.0, doubling_min_lag=10),
    ),
)
RULES = (Evaluation(), Evaluation(min_samples=2, min_span=0.0))


def judged(window: GroupWindow, thresholds: Thresholds, rules: Evaluation, now: float) -> GroupVerdict:
    verdict = evaluate_group(window, thresholds=thresholds, rules=rules, now=now)
    return replace(verdict, causes=diagnose(verdict, window, rules))


def expected_partitions(
    snapshots: list[ClusterSnapshot], group: str, samples: int
) -> dict[TopicPartition, tuple[PartitionSample, ...]]:
    """The window's partitions by the contract: the newest entry's partitions, each with its samples from
    the last `samples` entries of the group, oldest first."""
    kept = snapshots[-samples:]
    newest = kept[-1]
    return {
        tp: tuple(
            PartitionSample(s.taken_at, s.groups[group].committed[tp], s.log_end[tp], s.log_start[tp])
            for s in kept
            if tp in s.groups[group].committed
        )
        for tp in sorted(newest.groups[group].committed)
    }


def check_columns(window: GroupWindow) -> None:
    """The arrays hold the numbers of the window's samples."""
    columns = window.columns
    assert columns is not None
    assert columns.times == tuple(s.at for s in window.samples)
    assert columns.tps == tuple(window.partitions)
    for row, samples in enumerate(window.partitions.values()):
        assert columns.known[row].tolist() == [s.committed is not None for s in samples]
        assert columns.committed[row].tolist() == [s.committed or 0 for s in samples]
        assert columns.log_end[row].tolist() == [s.log_end for s in samples]


def run_histories(make_store: type[WindowStore] | object, seed: int, histories: int) -> tuple[int, int]:
    """Append random histories and compare both routes on every window; returns (windows, with columns)."""
    rng = random.Random(seed)
    seen = with_columns = 0
    for _ in range(histories):
        samples = rng.randint(1, 10)
        store = make_store(samples)  # type: ignore[operator]
        history = History(rng)
        snapshots: list[ClusterSnapshot] = []
        for _ in range(rng.randint(1, 14)):
            snapshots.append(history.step())
            store.append(snapshots[-1])
            windows = store.windows(CLUSTER, list(GROUPS))
            now = snapshots[-1].taken_at + rng.choice([0.0, 5.0, 300.0])
            for name, window in windows.items():
                seen += 1
                assert window.partitions == expected_partitions(snapshots, name, samples)
                if window.columns is not None:
                    with_columns += 1
                    check_columns(window)
                python_way = replace(window, columns=None)
                for thresholds in THRESHOLDS:
                    assert group_points(window, thresholds) == group_points(python_way, thresholds)
                    for rules in RULES:
                        assert judged(window, thresholds, rules, now) == judged(python_way, thresholds, rules, now)
    return seen, with_columns


def test_memory_store_windows_judge_the_same_both_ways() -> None:
    seen, with_columns = run_histories(lambda samples: MemoryWindowStore(samples=samples), seed=11, histories=60)
    # The comparison is only a proof if the array route ran: most windows have aligned partitions.
    assert with_columns > seen // 3 > 60


def test_a_store_without_arrays_keeps_the_same_windows_without_columns() -> None:
    # `lagbot check` keeps no arrays: the same windows but for the columns, so judged by the Python route.
    rng = random.Random(16)
    with_arrays, without = MemoryWindowStore(samples=5), MemoryWindowStore(samples=5, arrays=False)
    history = History(rng)
    history.big = False
    columns_seen = 0
    for _ in range(8):
        snapshot = history.step()
        with_arrays.append(snapshot)
        without.append(snapshot)
        windows, plain = with_arrays.windows(CLUSTER, list(GROUPS)), without.windows(CLUSTER, list(GROUPS))
        assert plain == {name: replace(window, columns=None) for name, window in windows.items()}
        columns_seen += sum(window.columns is not None for window in windows.values())
    assert columns_seen > 0


def test_redis_store_windows_judge_the_same_both_ways(redis_client: redis.Redis) -> None:
    def fresh(samples: int) -> RedisWindowStore:
        redis_client.flushdb()
        return RedisWindowStore(redis_client, samples=samples)

    seen, with_columns = run_histories(fresh, seed=12, histories=30)
    assert with_columns > seen // 3 > 30


def test_redis_store_decoded_windows_have_the_same_columns(redis_client: redis.Redis) -> None:
    # A replica that did not write the entries decodes them from Redis: same windows, same arrays.
    rng = random.Random(13)
    writer = RedisWindowStore(redis_client, samples=6)
    history = History(rng)
    history.big = False
    for _ in range(9):
        writer.append(history.step())
    written = writer.windows(CLUSTER, list(GROUPS))
    read = RedisWindowStore(redis_client, samples=6).windows(CLUSTER, list(GROUPS))
    assert read == written
    for name, window in read.items():
        if written[name].columns is None:
            assert window.columns is None
            continue
        check_columns(window)


def test_offsets_too_big_for_the_arrays_leave_the_window_without_columns() -> None:
    store = MemoryWindowStore(samples=3)
    history = History(random.Random(14))
    history.big = True
    for _ in range(3):
        store.append(history.step())
    windows = store.windows(CLUSTER, list(GROUPS))
    assert windows and all(w.columns is None for w in windows.values())


@pytest.mark.parametrize(
    ("committed", "log_end"),
    [(10, 20.5), (10.0, 20), (2**63, 2**63 + 5), (-3, 20), (10, -1)],
    ids=["float log end", "float committed", "beyond int64", "negative committed", "negative log end"],
)
def test_offsets_the_arrays_cannot_hold_exactly_leave_the_window_without_columns(
    committed: float, log_end: float
) -> None:
    # Only integers in 0 .. 2**48 go into the arrays: anything else is judged the Python way, never rounded.
    store = MemoryWindowStore(samples=2)
    for i in range(2):
        group = GroupSnapshot("billing", GroupState.EMPTY, (), {("orders", 0): committed})  # type: ignore[dict-item]
        store.append(ClusterSnapshot(CLUSTER, 100.0 + i, {"billing": group}, {("orders", 0): log_end}))  # type: ignore[dict-item]
    window = store.window(CLUSTER, "billing")
    assert window is not None and window.partitions[("orders", 0)][-1].log_end == log_end
    assert window.columns is None


def test_a_plain_window_goes_the_array_way() -> None:
    # Two partitions committed at every sample, nothing going back: the arrays hold exactly these offsets.
    store = MemoryWindowStore(samples=4)
    for i in range(4):
        store.append(
            ClusterSnapshot(
                cluster=CLUSTER,
                taken_at=100.0 + 10 * i,
                groups={
                    "billing": GroupSnapshot(
                        group="billing",
                        state=GroupState.EMPTY,
                        members=(),
                        committed={("orders", 0): 10, ("orders", 1): 5 * i},
                    )
                },
                log_end={("orders", 0): 50 + i, ("orders", 1): 20 * i},
                log_start={("orders", 0): 0, ("orders", 1): 0},
            )
        )
    window = store.window(CLUSTER, "billing")
    assert window is not None and window.columns is not None
    assert window.columns.times == (100.0, 110.0, 120.0, 130.0)
    assert window.columns.tps == (("orders", 0), ("orders", 1))
    np.testing.assert_array_equal(window.columns.committed, [[10, 10, 10, 10], [0, 5, 10, 15]])
    np.testing.assert_array_equal(window.columns.log_end, [[50, 51, 52, 53], [0, 20, 40, 60]])
    assert window.columns.known.all()


@pytest.mark.parametrize("seed", [21])
def test_more_memory_histories(seed: int) -> None:
    seen, with_columns = run_histories(lambda samples: MemoryWindowStore(samples=samples), seed=seed, histories=40)
    assert with_columns > seen // 3


def _orders_window(
    samples: int, known: bool = True
) -> tuple[MemoryWindowStore, dict[TopicPartition, tuple[PartitionSample, ...]]]:
    """A store of `samples` appends of two partitions, and the samples it must give back, built here."""
    store = MemoryWindowStore(samples=samples)
    expected: dict[TopicPartition, list[PartitionSample]] = {("orders", 0): [], ("orders", 1): []}
    for i in range(samples):
        committed = {("orders", 0): 10 + i, ("orders", 1): 5 * i if known or i else None}
        log_end = {("orders", 0): 50 + i, ("orders", 1): 20 * i + 7}
        log_start = {("orders", 0): i, ("orders", 1): 3}
        group = GroupSnapshot("billing", GroupState.EMPTY, (), committed)
        store.append(ClusterSnapshot(CLUSTER, 100.0 + 10 * i, {"billing": group}, log_end, log_start))
        for tp, found in expected.items():
            found.append(PartitionSample(100.0 + 10 * i, committed[tp], log_end[tp], log_start[tp]))
    return store, {tp: tuple(found) for tp, found in expected.items()}


def test_entries_with_arrays_keep_no_sample_objects() -> None:
    # The point of the arrays: 30 entries of every group hold numbers, not one object per partition and entry.
    store, _ = _orders_window(3)
    for entry in store._data[(CLUSTER, "billing")]:
        assert entry.samples is None and entry.columns is not None
        assert entry.columns.shape == (3, 2)  # committed (-1 where None), log end, log start x partitions


def test_a_window_with_arrays_reads_its_samples_as_views_equal_to_the_tuples() -> None:
    store, expected = _orders_window(4, known=False)
    window = store.window(CLUSTER, "billing")
    assert window is not None and window.columns is not None
    for tp, samples in expected.items():
        view = window.partitions[tp]
        assert isinstance(view, ColumnSamples)
        assert view == samples and samples == view and view != samples[1:]
        assert len(view) == 4 and tuple(view) == samples and list(reversed(view)) == list(reversed(samples))
        assert view[0] == samples[0] and view[-1] == samples[-1] and view[-4] == samples[0]
        assert view[-1] is view[3]  # made once
        assert view[:] is view and view[1:3] == samples[1:3] and view[::-2] == samples[::-2] and view[5:] == ()
        assert hash(view) == hash(samples) and repr(view) == repr(samples)
        assert samples[2] in view and view.index(samples[2]) == 2 and view.count(samples[1]) == 1
        assert view.log_ends() == [s.log_end for s in samples]
        for i in (4, -5):
            with pytest.raises(IndexError):
                view[i]
    assert window.partitions[("orders", 1)][0].committed is None  # not known: None, not the 0 of the arrays
    assert window.partitions[("orders", 1)][0].lag is None
    assert window.latest is not None and window.latest.committed == {("orders", 0): 13, ("orders", 1): 15}
    assert window.partitions != {tp: samples[1:] for tp, samples in expected.items()}


def test_an_entry_encodes_the_same_with_or_without_arrays() -> None:
    # The stored form (FORMAT_VERSION 1) does not depend on how an entry keeps its offsets in memory.
    committed = {("orders", 0): 10, ("orders", 1): None, ("payments", 0): 2**40}
    group = GroupSnapshot(
        "billing", GroupState.STABLE, (Member("m-1", "c-1", "/h", (("orders", 0),)),), committed, generation=4
    )
    snapshot = ClusterSnapshot(
        CLUSTER,
        100.5,
        {"billing": group},
        {("orders", 0): 50, ("orders", 1): 7, ("payments", 0): 2**40 + 9},
        {("orders", 0): 3, ("orders", 1): 0},
    )
    with_arrays, without = entry_of(snapshot, group, arrays=True), entry_of(snapshot, group, arrays=False)
    assert with_arrays.columns is not None and with_arrays.samples is None and without.samples is not None
    assert encode_entry(with_arrays) == encode_entry(without)
    decoded = decode_entry(encode_entry(with_arrays))
    assert decoded.columns is not None and encode_entry(decoded) == encode_entry(without)


# ---------------------------------------------------------------------------------------------------
# The array forms of the rules (lagbot.engine.rows `PlainRows`) against the scalar rules, row by row
# ---------------------------------------------------------------------------------------------------

KINDS = ("still", "moving", "caught_up", "burst", "rewind", "restart", "uncommitted", "gap")
"""How a partition of `RuleHistory` behaves: its committed offset never moves (STALL, STOP, stuck against siblings),
moves, keeps up with the log end, kept up then falls behind, goes back, its log end falls (a recreated topic),
nothing is ever committed, or one sample lacks a commit."""


class RuleHistory:
    """A group whose partitions each behave one way (KINDS) over a window, with steady members owning them: the
    histories the rules tell apart, more often than `History` draws them."""

    def __init__(self, rng: random.Random, partitions: int) -> None:
        self.rng = rng
        self.tps: list[TopicPartition] = [("orders", p) for p in range(partitions)]
        self.kinds = {tp: rng.choice((*KINDS, "still", "moving", "moving")) for tp in self.tps}
        self.ends = {tp: rng.choice([0, 100, 5_000]) for tp in self.tps}
        self.committed: dict[TopicPartition, int | None] = {
            tp: None if self.kinds[tp] == "uncommitted" else max(0, self.ends[tp] - rng.choice([0, 0, 30, 400]))
            for tp in self.tps
        }
        self.at = 1_700_000_000.0 + rng.random()
        self.step_seconds = rng.choice([0.5, 2.0, 10.0, 30.0])  # short steps leave spans under min_span
        members = rng.choice([0, 1, 2, 3, 3])
        self.state = rng.choice([GroupState.STABLE] * 4 + [GroupState.EMPTY, GroupState.COMPLETING_REBALANCE])
        self.members = tuple(
            Member(f"m-{i}", f"client-{i}", f"10.0.0.{i}", tuple(tp for j, tp in enumerate(self.tps) if j % 4 == i))
            for i in range(members if self.state is not GroupState.EMPTY else 0)
        )  # with 3 members, every fourth partition has no owner
        self.steps = 0

    def step(self) -> ClusterSnapshot:
        rng = self.rng
        self.at += self.step_seconds * rng.choice([1.0, 1.0, 1.0, 0.0, 2.5])  # two samples may share a time
        committed: dict[TopicPartition, int | None] = {}
        for tp in self.tps:
            kind, current = self.kinds[tp], self.committed[tp]
            if kind == "restart" and rng.random() < 0.2:
                self.ends[tp] = rng.randint(0, 20)
            self.ends[tp] += rng.choice([0, 1, 7, 40]) if kind != "burst" or self.steps > 2 else 0
            if kind in ("moving", "rewind", "restart", "gap") and current is not None:
                current = min(self.ends[tp], current + rng.choice([0, 3, 25]))
            if kind == "caught_up":
                current = self.ends[tp]
            if kind == "rewind" and current is not None and rng.random() < 0.3:
                current = max(0, current - rng.randint(1, 30))
            self.committed[tp] = current
            committed[tp] = None if kind == "gap" and rng.random() < 0.2 else current
        self.steps += 1
        group = GroupSnapshot("billing", self.state, self.members, committed, generation=1)
        return ClusterSnapshot(
            CLUSTER, self.at, {"billing": group}, dict(self.ends), {tp: e // 2 for tp, e in self.ends.items()}
        )


def rule_windows(rng: random.Random, histories: int, *, each_step: bool) -> Iterator[tuple[GroupWindow, float]]:
    """Windows (with arrays) of random rule histories and a time to judge each at: every step's window, or only the
    last of each history."""
    for _ in range(histories):
        samples = rng.randint(1, 8)
        store = MemoryWindowStore(samples=samples)
        history = RuleHistory(rng, rng.randint(1, 12))
        steps = rng.randint(1, samples + 2)
        for step in range(steps):
            store.append(history.step())
            if each_step or step == steps - 1:
                window = store.window(CLUSTER, "billing")
                assert window is not None and window.columns is not None
                yield window, window.samples[-1].at + rng.choice([0.0, 5.0, 300.0])


def test_the_array_rules_give_the_scalar_rules_answers_row_by_row() -> None:
    reached: dict[str, int] = {}
    for window, now in rule_windows(random.Random(31), 150, each_step=False):
        assert window.columns is not None
        rows = plain_rows(window.columns)
        plain = [window.columns.tps[i] for i in rows.at]
        owners = Owners(window.latest)
        owned = owners.of_all(plain)
        assert owned == [owners.of(tp) for tp in plain]
        facts = {tp: window_facts(window.partitions[tp]) for tp in plain}
        for rules in RULES:
            findings = plain_findings(rows, [o for o, _ in owned], rules)
            assert findings == [partition_status(facts[tp], o, rules) for tp, (o, _) in zip(plain, owned, strict=True)]
            for status, _ in findings:
                reached[status.name] = reached.get(status.name, 0) + 1
        seconds = lag_seconds_rows(rows, now)
        assert list(zip(*seconds, strict=True)) == [lag_seconds(f.samples, now, f) for f in facts.values()]
        reached["lower bound"] = reached.get("lower bound", 0) + sum(seconds[1])
        assert produce_rates(rows) == [produce_rate(f) for f in facts.values()]
        assert consume_rates(rows) == [consume_rate(f) for f in facts.values()]
        assert still_and_growing_rows(rows, rules).tolist() == [still_and_growing(f, rules) for f in facts.values()]
        assert commit_times_rows(rows) == [commit_times(f) for f in facts.values()]
        reached["plain"] = reached.get("plain", 0) + len(plain)
        reached["other"] = reached.get("other", 0) + len(window.partitions) - len(plain)
    # A proof only if every answer came up, on both sides of the plain/other split.
    assert min(reached.get(k, 0) for k in ("OK", "WARN", "STALL", "STOP", "lower bound", "other")) >= 10, reached


def test_rule_histories_judge_the_same_both_ways() -> None:
    # Whole verdicts, causes included, of the groups the rules tell apart: owned, unowned and unknown owners,
    # partitions stuck against their siblings, rewinds, recreated topics, one sample, short spans, no commit.
    statuses: dict[str, int] = {}
    siblings = 0
    for window, now in rule_windows(random.Random(32), 120, each_step=True):
        python_way = replace(window, columns=None)
        for rules in RULES:
            verdict = judged(window, THRESHOLDS[0], rules, now)
            assert verdict == judged(python_way, THRESHOLDS[0], rules, now)
            for p in verdict.partitions:
                statuses[p.status.name] = statuses.get(p.status.name, 0) + 1
                siblings += p.sibling_commits > 0
    assert siblings >= 10, siblings
    assert min(statuses.get(s.name, 0) for s in (Status.OK, Status.WARN, Status.STALL)) >= 10
    assert statuses.get(Status.STOP.name, 0) >= 10 and statuses.get(Status.REWIND.name, 0) >= 10, statuses


def test_an_entry_made_from_the_snapshot_is_the_one_made_from_its_samples() -> None:
    # `entry_of` makes the arrays straight from the snapshot's offsets; `new_entry` from the samples (what a decoded
    # entry goes through): the same entry, arrays or samples alike, on random histories with big offsets too.
    rng = random.Random(17)
    with_columns = without = 0
    for _ in range(60):
        history = History(rng)
        previous: dict[str, Entry] = {}
        for _ in range(rng.randint(1, 4)):
            snapshot = history.step()
            for group in snapshot.groups.values():
                like = previous.get(group.group)
                made = entry_of(snapshot, group, like=like)
                partitions = {
                    tp: PartitionSample(snapshot.taken_at, c, snapshot.log_end[tp], snapshot.log_start[tp])
                    for tp, c in group.committed.items()
                }
                args = (snapshot.taken_at, group.state, group.members, group.generation, partitions)
                reference = new_entry(*args, like=like)
                assert replace(made, columns=None) == replace(reference, columns=None)
                if like is not None and like.tps == made.tps:
                    assert made.tps is like.tps
                if reference.columns is None:
                    assert made.columns is None
                    without += 1
                else:
                    assert made.columns is not None and made.columns.tolist() == reference.columns.tolist()
                    assert made.columns.dtype == reference.columns.dtype
                    with_columns += 1
                previous[group.group] = made
    assert with_columns > 50 and without > 20
