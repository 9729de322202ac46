"""Issue 22, section 3: two of the Burrow table's cases (tests/engine/test_evaluate_cases.py) reproduced with real
clients on Apache Kafka, each showing lagbot's verdict.

1. Rewind recovery (case 04, 41): a member commits back to an old offset (as a rebalance re-commits one) and then
   commits at or past the offset it rewound from: REWIND while it is back, OK once it recovered.
2. Poll-interval kick-outs: a member whose batch takes longer than max.poll.interval.ms is kicked out of the group
   and rejoins, again and again, committing a batch each time: lagbot names the mechanism (`rebalance_churn`,
   "kicked_out": configuration) and never offers `stuck_consumer -> restart` for it.
3. One kick-out in a short window (4 snapshots 3 s apart, as `--samples 4 --every 3`): the member changes once, no
   churn; the kick-out is still named and no cause offers a remedy sized from rates measured across it.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from confluent_kafka import Consumer, TopicPartition

from lagbot.core.config import build_settings
from lagbot.core.model import ClusterSnapshot, GroupState, GroupVerdict, Status
from lagbot.engine import wording as engine_wording
from lagbot.engine.check import Checker
from lagbot.engine.window import MemoryWindowStore
from lagbot.service.remedies import remedy
from tests.conftest import Kafka, Names
from tests.support.waiting import wait_for

pytestmark = pytest.mark.integration


def checker(kafka: Kafka, group: str, samples: int = 20) -> Checker:
    settings = build_settings(
        {
            "clusters": [{"name": "apache", "bootstrap_servers": kafka.bootstrap, "groups": {"include": [group]}}],
            "evaluation": {"min_samples": 3, "min_span": 2},
        },
        source="test",
    )
    return Checker(settings, MemoryWindowStore(samples=samples))


def sampled(check: Checker) -> tuple[GroupVerdict, ClusterSnapshot]:
    """One more snapshot of the group, judged against its window: (its verdict, the snapshot)."""
    snapshots = check.sample()
    [verdict] = check.evaluate(snapshots).verdicts
    return verdict, snapshots["apache"]


def test_rewind_recovery_is_rewind_while_back_and_ok_once_past(kafka: Kafka, names: Names) -> None:
    # 100 messages; the member commits 40, 60, 80, then 20 (back: what a rebalance that re-commits an old offset
    # does), then 80 (the offset it rewound from) and 90. Each commit is read back by a snapshot of its own.
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 1)
    kafka.produce(topic, 0, 100)
    member = kafka.consumer(group)
    member.subscribe([topic])
    check = checker(kafka, group)
    seen: list[tuple[int | None, Status]] = []
    try:
        kafka.wait_assigned(member)
        for offset in (40, 60, 80, 20, 80, 90):
            member.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
            verdict, snapshot = sampled(check)
            assert snapshot.groups[group].state is GroupState.STABLE  # a live member all along
            seen.append((verdict.partitions[0].committed, verdict.status))
            if offset == 20:
                rewound = verdict
    finally:
        member.close()
    # Read back from the broker: every commit, in order. Back at 20 lagbot says REWIND and names the step.
    assert [committed for committed, _ in seen] == [40, 60, 80, 20, 80, 90]
    assert rewound.status is Status.REWIND
    assert rewound.partitions[0].reason == engine_wording.reason_rewind(80, 20)
    # At 80 again it recovered (the rewind is still in the window, and no longer REWIND), and at 90 it is OK:
    # lag 10, falling, nothing to explain.
    assert [status for _, status in seen[4:]] == [Status.OK, Status.OK]
    assert (verdict.total_lag, verdict.causes) == (10, ())


MAX_POLL_MS = 6000
"""max.poll.interval.ms of the kicked-out member: the smallest the broker allows with a 6 s session."""
BATCH = 40
"""Messages the member reads and commits before each batch that outlasts max.poll.interval.ms."""


def kicked_out_member(kafka: Kafka, group: str, topic: str, stop: threading.Event, commits: list[int]) -> None:
    """A member that reads up to BATCH messages, commits them (each offset it committed appended to `commits`), then
    spends longer than max.poll.interval.ms on the next batch (it does not poll): librdkafka leaves the group, and
    the next poll joins it again. Bounded by `stop` and a deadline."""
    member: Consumer = kafka.consumer(group, **{"max.poll.interval.ms": MAX_POLL_MS})
    member.subscribe([topic])
    deadline = time.monotonic() + 120.0
    try:
        while not stop.is_set() and time.monotonic() < deadline:
            got = [m for m in member.consume(BATCH, 1.0) if m.error() is None]
            if not got:
                continue
            last = max(m.offset() or 0 for m in got)
            member.commit(offsets=[TopicPartition(topic, 0, last + 1)], asynchronous=False)
            commits.append(last + 1)
            stop.wait(MAX_POLL_MS / 1000 + 1.5)  # the slow batch: no poll for longer than max.poll.interval.ms
    finally:
        member.close()


def test_poll_interval_kick_outs_are_named_and_never_offered_a_restart(kafka: Kafka, names: Names) -> None:
    # 2,000 messages waiting (written now) and 20 msg/s more; one member commits 40 and is kicked out, again and
    # again. lagbot samples every 1.5 s until its window holds two departures of the member and the newest snapshot
    # finds it back in the group (Stable): the churn is named with its mechanism, first, and no cause offers a
    # restart or more replicas (more members would be kicked out the same way).
    states: list[tuple[GroupState, tuple[str, ...]]] = []
    with kick_outs(kafka, names, samples=40) as (group, check, commits):

        def kicked_twice_and_back() -> GroupVerdict | None:
            snapshots = check.sample()
            group_now = snapshots["apache"].groups.get(group)
            if group_now is None:  # not joined yet
                return None
            states.append((group_now.state, tuple(sorted(m.member_id for m in group_now.members))))
            left = sum(1 for a, b in itertools.pairwise(states) if set(a[1]) - set(b[1]))
            if left < 2 or group_now.state is not GroupState.STABLE:
                return None
            [verdict] = check.evaluate(snapshots).verdicts
            return verdict

        verdict = wait_for("two kick-outs and the member back", kicked_twice_and_back, timeout=90.0, every=1.5)
    kinds = [c.kind for c in verdict.causes]
    primary = verdict.causes[0]
    assert primary.kind == "rebalance_churn", kinds
    assert primary.evidence["mechanism"] == "kicked_out"
    assert engine_wording.churn_kicked_out(verdict.total_lag or 0) in primary.explanation
    assert remedy(primary) is None
    assert [(c.kind, remedy(c)) for c in verdict.causes if remedy(c) in ("restart", "scale")] == []
    # The offsets moved between the kick-outs, which is what tells it from a crash loop: the committed offset read
    # back is one of the member's commits, after its first.
    assert verdict.partitions[0].committed in commits[1:], commits


def test_one_kick_out_in_a_short_window_is_named_and_its_rates_not_trusted(kafka: Kafka, names: Names) -> None:
    # The same member, sampled every 3 s into a window of 4 snapshots: once a window holds exactly one departure of
    # the member and the newest snapshot finds a new member id in its place (Stable), the kick-out is named first
    # (departures: 1), and no cause offers anything: partition_ceiling (one member for one partition, reading far
    # less than is written) states its rates span the change. Before, partition_ceiling -> drain came first.
    seen: list[tuple[GroupState, tuple[str, ...]]] = []
    with kick_outs(kafka, names, samples=4) as (group, check, commits):

        def kicked_once_and_back() -> GroupVerdict | None:
            snapshots = check.sample()
            group_now = snapshots["apache"].groups.get(group)
            if group_now is None:  # not joined yet
                return None
            seen.append((group_now.state, tuple(sorted(m.member_id for m in group_now.members))))
            window = seen[-4:]
            ids = [i for _, i in window]
            left = sum(1 for a, b in itertools.pairwise(ids) if set(a) - set(b))
            if len(window) < 4 or left != 1 or group_now.state is not GroupState.STABLE or ids[-1] == ids[0]:
                return None
            if any(not i for i in ids):  # a snapshot in the gap (Empty) makes two changes: churn, case 2
                return None
            [verdict] = check.evaluate(snapshots).verdicts
            return verdict

        verdict = wait_for("one kick-out and the member back", kicked_once_and_back, timeout=90.0, every=3.0)
    primary = verdict.causes[0]
    assert primary.kind == "rebalance_churn", [c.kind for c in verdict.causes]
    assert (primary.evidence["mechanism"], primary.evidence["departures"]) == ("kicked_out", 1)
    assert primary.explanation == engine_wording.churn_kicked_out_once(verdict.total_lag or 0)
    assert [(c.kind, remedy(c)) for c in verdict.causes if remedy(c) is not None] == []
    untrusted = engine_wording.rates_across_membership_change(1)
    assert [c.kind for c in verdict.causes if c.kind in ("partition_ceiling", "throughput_deficit")] == [
        c.kind for c in verdict.causes if c.explanation.endswith(untrusted)
    ]
    # Read back from the broker: the offset moved between the kick-outs (one of the member's commits after its first).
    assert verdict.partitions[0].committed in commits[1:], commits


@contextmanager
def kick_outs(kafka: Kafka, names: Names, samples: int) -> Iterator[tuple[str, Checker, list[int]]]:
    """A group whose one member is kicked out again and again (`kicked_out_member`), with 2,000 messages waiting and
    20 msg/s more: (its group, a checker keeping `samples` snapshots, the member's commits as it makes them). Both
    threads stop on leaving."""
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 1)
    kafka.produce(topic, 0, 2000)
    stop = threading.Event()
    commits: list[int] = []
    member = threading.Thread(target=kicked_out_member, args=(kafka, group, topic, stop, commits), daemon=True)
    writes = threading.Thread(target=_writes, args=(kafka, topic, stop), daemon=True)
    member.start()
    writes.start()
    try:
        yield group, checker(kafka, group, samples=samples), commits
    finally:
        stop.set()
        member.join(20)
        writes.join(20)


def _writes(kafka: Kafka, topic: str, stop: threading.Event) -> None:
    """20 msg/s to partition 0 until `stop` (at most 120 s)."""
    deadline = time.monotonic() + 120.0
    while not stop.wait(0.5) and time.monotonic() < deadline:
        kafka.produce(topic, 0, 10)
