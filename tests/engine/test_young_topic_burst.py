"""Issue 22, section 2: a producer burst on a topic younger than the smallest history horizon.

About 30 msg/s for 30 s, then 2,000 msg/s, checked during the burst: every horizon (1 min and up) is older than the
topic, so the time index has "no data that old" for each, and the window alone is all burst (no interval 3x the
others): the lag was called `throughput_deficit`. The time index holds the topic's whole short history: when its
oldest record was written the log end was the log start (the timestamp the broker gives with its answer), so the
rate from then to the window's first sample is a baseline, against the window's rate (lagbot.engine.burst
`producer_burst_since_birth`).

Numbered pure cases (Y01-Y07), then the same on Apache Kafka: the timestamp read back from the broker, and a check.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import replace

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from lagbot.core.config import Evaluation, Thresholds, build_settings
from lagbot.core.model import (
    GroupSample,
    GroupSnapshot,
    GroupState,
    GroupVerdict,
    GroupWindow,
    Member,
    PartitionSample,
)
from lagbot.devkit.apache_kafka import ApacheKafka
from lagbot.engine import wording
from lagbot.engine.burst import group_born_at, producer_burst_since_birth
from lagbot.engine.check import Checker
from lagbot.engine.diagnose import diagnose
from lagbot.engine.evaluate import evaluate_group
from lagbot.engine.timeindex import BaselineCache, offsets_at
from lagbot.engine.window import MemoryWindowStore
from lagbot.service.remedies import remedy
from tests.conftest import Kafka, Names

TOPIC, GROUP, CLUSTER = "orders", "billing", "c"
BORN = 1_800_000_000.0
"""When the topic's first record was written."""
NO_DATA_THAT_OLD = ((60.0, None), (300.0, None), (900.0, None), (3600.0, None))
"""The baselines of a topic younger than 1 min: every horizon is older than its first record."""

ONE_MEMBER = Member("m-1", "client-1", "10.0.0.1", ((TOPIC, 0), (TOPIC, 1)))


def window(ends: Sequence[Sequence[int]], first_at: float, step: float = 5.0, read: int = 50) -> GroupWindow:
    """One member reading both partitions of `TOPIC`; ends[p] is partition p's log end at each sample, `step` s
    apart from `first_at`; the member commits `read` messages a sample, a partition (it falls behind)."""
    times = [first_at + i * step for i in range(len(ends[0]))]
    partitions = {
        (TOPIC, p): tuple(
            PartitionSample(t, i * read, end, 0) for i, (t, end) in enumerate(zip(times, row, strict=True))
        )
        for p, row in enumerate(ends)
    }
    samples = tuple(GroupSample(t, GroupState.STABLE, ("m-1",), 1) for t in times)
    latest = GroupSnapshot(
        group=GROUP,
        state=GroupState.STABLE,
        members=(ONE_MEMBER,),
        committed={tp: s[-1].committed for tp, s in partitions.items()},
        generation=1,
    )
    return GroupWindow(cluster=CLUSTER, group=GROUP, samples=samples, partitions=partitions, latest=latest)


def judged(
    w: GroupWindow, born_at: float | None, baselines: tuple[tuple[float, float | None], ...] = NO_DATA_THAT_OLD
) -> GroupVerdict:
    now = w.samples[-1].at
    verdict = evaluate_group(w, thresholds=Thresholds(), rules=Evaluation(), now=now, baselines=baselines)
    verdict = replace(verdict, born_at=born_at)
    return replace(verdict, causes=diagnose(verdict, w, Evaluation()))


def issue_window() -> GroupWindow:
    """The issue's topic on 2 partitions (15 msg/s each for 30 s, 450 each; then 1,000 msg/s each): the check's
    first sample 6 s into the burst (each partition at 450 + 6,000), then 3 more 5 s apart, the burst going on."""
    return window([[6450, 11450, 16450, 21450]] * 2, BORN + 36.0)


def test_y01_the_issue_burst_on_a_young_topic_is_a_burst_not_a_deficit() -> None:
    """Y01 The baseline from the topic's birth to the window's first sample: 12,900 messages in 36 s (358.3 msg/s,
    the burst's first 6 s in it); the window writes 30,000 in 15 s (2,000 msg/s): 5.6x, still going (its newest
    interval too), one member for two partitions: scale. It outranks the deficit it explains."""
    w = issue_window()
    before = judged(w, None)  # what lagbot said without the topic's birth: the lag is a deficit
    assert before.causes[0].kind == "throughput_deficit"

    verdict = judged(w, BORN)
    primary = verdict.causes[0]
    assert (primary.kind, remedy(primary), primary.confidence) == ("producer_burst", "scale", 0.85)
    assert primary.explanation == wording.cause_burst_since_birth(2000.0, 15.0, 12900 / 36, 36.0, True, 2000.0)
    assert primary.evidence == {
        "recent_rate": 2000.0,
        "recent_horizon_seconds": 15.0,
        "baseline_rate": 358.33,
        "baseline_horizon_seconds": 36.0,
        "ongoing": True,
        "method": "time_index_since_birth",
    }
    assert "throughput_deficit" in [c.kind for c in verdict.causes[1:]]


def test_y01_reads_like_the_issue() -> None:
    assert wording.cause_burst_since_birth(2000.0, 15.0, 12900 / 36, 36.0, True, 2000.0) == (
        "producers wrote 2,000 msg/s over the last 15 s vs 358 msg/s over the 36 s before, since the topic's oldest "
        "record (5.6x); still going"
    )


def test_y02_a_burst_that_ended_in_the_window_offers_nothing() -> None:
    """Y02 The window's first interval holds the burst (1,000 msg/s a partition for 5 s), then 15 msg/s again: over
    the window (5,000 + 150) x 2 / 15 s = 686.67 msg/s against 900 / 30 s = 30 msg/s before (22.9x), but the newest
    interval writes 30 msg/s: it just ended, no scale, less sure."""
    w = window([[450, 5450, 5525, 5600]] * 2, BORN + 30.0)
    cause = producer_burst_since_birth(judged(w, BORN), w)
    assert cause is not None
    assert (remedy(cause), cause.confidence, cause.evidence["ongoing"]) == (None, 0.6, False)
    assert (cause.evidence["recent_rate"], cause.evidence["baseline_rate"]) == (686.67, 30.0)


def test_y03_a_young_topic_at_a_steady_rate_is_no_burst() -> None:
    """Y03 30 msg/s from birth through the window: the same rate before and during, no burst."""
    w = window([[450 + 75 * i for i in range(4)]] * 2, BORN + 30.0, read=10)
    verdict = judged(w, BORN)
    assert producer_burst_since_birth(verdict, w) is None
    assert "producer_burst" not in [c.kind for c in verdict.causes]


def test_y04_under_three_times_the_rate_since_birth_is_no_burst() -> None:
    """Y04 2.9x, under the factor 3: 87 msg/s in the window (1,305 a partition in 30 s) against 30 before."""
    w = window([[450, 885, 1320, 1755]] * 2, BORN + 30.0, step=10.0, read=10)
    assert producer_burst_since_birth(judged(w, BORN), w) is None


def test_y05_with_two_horizons_known_the_index_rule_decides() -> None:
    """Y05 A topic older than 5 min has two horizons with data: the rule over horizons (lagbot.engine.burst
    `burst_vs_baseline`) judges it, never the rate since birth, even when a birth is known."""
    w = issue_window()
    known = ((60.0, 2000.0), (300.0, 440.0), (900.0, None), (3600.0, None))
    assert producer_burst_since_birth(judged(w, BORN, known), w) is None


def test_y08_a_burst_that_began_before_the_window_is_compared_with_the_time_before_it() -> None:
    """Y08 The topic is 100 s old at the newest sample: 15 msg/s a partition for 50 s, then 1,000 msg/s a partition
    for 50 s, so the window (its last 15 s) is all burst and the rate from the birth to its first sample holds 35 s
    of burst: 71,500 / 85 s = 841 msg/s, 2.4x, under the factor. The 1 min horizon has data (the 5 min one not):
    100,300 messages over it, against the rate from the birth to 1 min ago, (101,500 - 100,300) / 40 s = 30 msg/s:
    55.7x, still going (the window writes 2,000 msg/s)."""
    w = window([[35750 + 5000 * i for i in range(4)]] * 2, BORN + 85.0)
    horizons = ((60.0, 100300 / 60), (300.0, None), (900.0, None), (3600.0, None))
    verdict = judged(w, BORN, horizons)
    primary = verdict.causes[0]
    assert (primary.kind, remedy(primary), primary.confidence) == ("producer_burst", "scale", 0.85)
    assert primary.evidence == {
        "recent_rate": 1671.67,
        "recent_horizon_seconds": 60.0,
        "baseline_rate": 30.0,
        "baseline_horizon_seconds": 40.0,
        "ongoing": True,
        "method": "time_index_since_birth",
    }
    assert primary.explanation == wording.cause_burst_since_birth(100300 / 60, 60.0, 30.0, 40.0, True, 2000.0)
    # Without the horizon, the window against the time since birth alone is under the factor: not called a burst.
    assert producer_burst_since_birth(replace(verdict, baseline_produce=NO_DATA_THAT_OLD), w) is None


def test_y06_an_idle_young_topic_has_no_baseline_to_compare_with() -> None:
    """Y06 Nothing written before the window's first sample (0 msg/s since birth): x / 0, not called a burst."""
    w = window([[0, 5000, 10000, 15000]] * 2, BORN + 30.0)
    assert producer_burst_since_birth(judged(w, BORN), w) is None


def test_y07_the_group_birth_needs_every_partition_holding_data_to_have_one() -> None:
    """Y07 `group_born_at`: the earliest partition's birth; a partition still empty at the window's first sample
    adds nothing (everything it holds came later); one that held data but has no birth has history older than a
    horizon: unknown (None)."""
    w = window([[6450, 11450, 16450, 21450], [0, 0, 10, 20]], BORN + 36.0)
    assert group_born_at(w, {(TOPIC, 0): BORN + 2.0}) == BORN + 2.0
    both = window([[6450, 11450, 16450, 21450]] * 2, BORN + 36.0)
    assert group_born_at(both, {(TOPIC, 0): BORN + 2.0, (TOPIC, 1): BORN}) == BORN
    assert group_born_at(both, {(TOPIC, 0): BORN}) is None


# ---------------------------------------------------------------------------------------------------------------
# On Apache Kafka
# ---------------------------------------------------------------------------------------------------------------

SLOW, FAST = 15, 1000
"""msg/s a partition: for the 30 s after the topic's first record, then since (the burst)."""


def write_history(bootstrap: str, topic: str, born: float, until: float) -> None:
    """The issue's history on 2 partitions with create timestamps: SLOW msg/s each from `born` for 30 s, then FAST
    msg/s each until `until`."""
    out = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for partition in range(2):
        for i in range(30 * SLOW):
            out.produce(topic, b"m", partition=partition, timestamp=int((born + i / SLOW) * 1000))
        for i in range(int((until - born - 30.0) * FAST)):
            out.produce(topic, b"m", partition=partition, timestamp=int((born + 30.0 + i / FAST) * 1000))
    assert out.flush(30) == 0


@pytest.mark.integration
def test_the_broker_gives_when_a_young_partitions_first_record_was_written(
    broker: ApacheKafka, kafka: Kafka, names: Names
) -> None:
    # A topic whose first records were written 36 s ago (partition 0) and 20 s ago (partition 1), and one whose
    # first record is 2 h old: every horizon of the young one is "no data that old", and the broker's answer at the
    # log start says when that record was written (to the millisecond of its create timestamp); the old one's
    # longest horizon answers past its log start, so it has no birth.
    young, old = names("young"), names("old")
    kafka.create_topic(young, 2)
    kafka.create_topic(old, 1)
    now = time.time()
    born = [round(now - 36.0, 3), round(now - 20.0, 3)]
    out = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for partition, at in enumerate(born):
        for i in range(10):
            out.produce(young, b"m", partition=partition, timestamp=int(at * 1000) + i)
    for ago in (7200.0, 30.0):
        out.produce(old, b"m", partition=0, timestamp=int((now - ago) * 1000))
    assert out.flush(15) == 0
    tps = [(young, 0), (young, 1), (old, 0)]
    cache = BaselineCache(offsets_at(AdminClient({"bootstrap.servers": broker.bootstrap}), 10.0))
    history = cache.history(tps, now, {(young, 0): 10, (young, 1): 10, (old, 0): 2}, {tp: 0 for tp in tps})
    assert [p.log_end for p in history[(young, 0)]] == [None, None, None, None]
    assert [p.log_end for p in history[(old, 0)]] == [1, 1, 1, 1]
    found = cache.born(tps, {tp: 0 for tp in tps})
    assert found == {(young, 0): pytest.approx(born[0], abs=1e-6), (young, 1): pytest.approx(born[1], abs=1e-6)}
    # Past the log start (a partition whose oldest records were deleted since): the answer is no longer its birth.
    assert cache.born(tps, {(young, 0): 5, (young, 1): 0, (old, 0): 0}) == {
        (young, 1): pytest.approx(born[1], abs=1e-6)
    }


@pytest.mark.integration
def test_a_check_during_the_young_topic_burst_names_the_burst(broker: ApacheKafka, kafka: Kafka, names: Names) -> None:
    # The issue's reproduction: 2 partitions, 15 msg/s each for 30 s, then 1,000 msg/s each (create timestamps up
    # to now), going on live while `lagbot check` samples 4 times 2 s apart. One member reads about 100 msg/s and
    # commits every batch. The check names the burst with the broker's birth of the topic, not the deficit.
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 2)
    born = round(time.time() - 36.0, 3)
    write_history(broker.bootstrap, topic, born, born + 36.0)
    # Prefetching 1 kB a partition, the member reads both partitions in turn, not one's backlog first.
    small = {"max.partition.fetch.bytes": 1024, "queued.min.messages": 20, "fetch.queue.backoff.ms": 10}
    consumer = kafka.consumer(group, **small)
    consumer.subscribe([topic])
    stop = threading.Event()

    def burst() -> None:  # FAST msg/s a partition, caught up every tenth of a second, for at most 30 s
        out = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 20})
        started, sent = time.monotonic(), 0
        while not stop.wait(0.1) and time.monotonic() < started + 30.0:
            due = int((time.monotonic() - started) * FAST) - sent
            for _ in range(due):
                for partition in range(2):
                    out.produce(topic, b"m", partition=partition)
            sent += max(due, 0)
            out.poll(0)
        out.flush(10)

    def read() -> None:  # about 100 msg/s, committing every batch, for at most 60 s
        deadline = time.monotonic() + 60.0
        while not stop.wait(0.1) and time.monotonic() < deadline:
            got = {m.partition(): m.offset() or 0 for m in consumer.consume(10, 0.1) if m.error() is None}
            if got:
                consumer.commit(offsets=[TopicPartition(topic, p, o + 1) for p, o in got.items()], asynchronous=False)

    writer, reader = threading.Thread(target=burst, daemon=True), threading.Thread(target=read, daemon=True)
    try:
        kafka.wait_assigned(consumer)
        consumer.commit(offsets=[TopicPartition(topic, p, 100) for p in range(2)], asynchronous=False)
        writer.start()
        reader.start()
        settings = build_settings(
            {"clusters": [{"name": "c", "bootstrap_servers": kafka.bootstrap, "groups": {"include": [group]}}]},
            source="test",
        )
        report = Checker(settings, MemoryWindowStore(samples=4)).run(4, 2.0)
    finally:
        stop.set()
        writer.join(15)
        reader.join(15)
        consumer.close()
    [verdict] = report.verdicts
    assert verdict.born_at == pytest.approx(born, abs=1e-6)
    assert [h for h, rate in verdict.baseline_produce if rate is not None] == []
    primary = verdict.causes[0]
    assert (primary.kind, remedy(primary)) == ("producer_burst", "scale"), [
        (c.kind, c.evidence) for c in verdict.causes
    ]
    assert primary.evidence["method"] == "time_index_since_birth"
    assert primary.evidence["ongoing"] is True
    # The window's rate is about 2,000 msg/s (the writer's, on a loaded machine somewhat less); the baseline is
    # everything written before the first sample over the time since birth: at least 12,900 / 36 s.
    assert primary.evidence["recent_rate"] >= 3 * primary.evidence["baseline_rate"]
    assert primary.evidence["baseline_horizon_seconds"] >= 36.0
