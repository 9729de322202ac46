"""The broker's time index on Apache Kafka: baseline produce rates per horizon and lag in seconds from one check.

Messages are written with explicit create timestamps (50 min, 10 min and 30 s before `now`), so the broker's
index holds an hour of history at once. Every figure below follows from those timestamps:

    offsets 0..299 written at now - 3000 s, 300..499 at now - 600 s, 500..599 at now - 30 s

so the log end stood at 300 at now - 900 s, at 500 at now - 300 s and now - 60 s, and is 600 now.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from lagbot.core.config import build_settings
from lagbot.core.model import PartitionSample
from lagbot.devkit.apache_kafka import ApacheKafka
from lagbot.engine.check import Checker
from lagbot.engine.index_figures import baseline_rate, lag_seconds_by_index
from lagbot.engine.rates import lag_seconds
from lagbot.engine.report import report_json
from lagbot.engine.timeindex import BaselineCache, IndexPoint, offsets_at
from lagbot.engine.window import MemoryWindowStore
from lagbot.service.remedies import remedy
from tests.conftest import Kafka, Names

pytestmark = pytest.mark.integration

BATCHES = ((3000.0, 300), (600.0, 200), (30.0, 100))
"""(seconds before now, messages) written to partition 0, oldest first."""


def written(broker: ApacheKafka, kafka: Kafka, names: Names) -> tuple[str, float, AdminClient]:
    topic = names("topic")
    kafka.create_topic(topic, 2)
    now = time.time()
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for ago, count in BATCHES:
        for _ in range(count):
            producer.produce(topic, b"m", partition=0, timestamp=int((now - ago) * 1000))
    assert producer.flush(15) == 0
    return topic, now, AdminClient({"bootstrap.servers": broker.bootstrap})


def test_baseline_rates_per_horizon_from_one_check(broker: ApacheKafka, kafka: Kafka, names: Names) -> None:
    topic, now, admin = written(broker, kafka, names)
    p0, p1 = (topic, 0), (topic, 1)
    cache = BaselineCache(offsets_at(admin, 10.0))
    history = cache.history([p0, p1], now, {p0: 600, p1: 0}, {p0: 0, p1: 0})
    assert cache.requests == 4  # one batched request per horizon, both partitions in each

    # Oldest first: 60, 15, 5, 1 min before now. An hour ago nothing was retained yet (the oldest message is
    # 50 min old, and it is the log start): no data that old, None. Partition 1 was never written: nothing since
    # any horizon, so its log end then was today's, 0.
    assert [p.log_end for p in history[p0]] == [None, 300, 500, 500]
    assert [p.log_end for p in history[p1]] == [0, 0, 0, 0]
    rates = [baseline_rate(p, now, 600) for p in history[p0]]
    assert rates[0] is None
    assert rates[1:] == pytest.approx([300 / 900, 100 / 300, 100 / 60])
    assert [baseline_rate(p, now, 0) for p in history[p1]] == [0.0, 0.0, 0.0, 0.0]

    # Asked again only when a horizon moved on by a tenth of itself: 1 s later nothing, 7 s later the 1 min
    # horizon (6 s), 91 s later also the 15 min one (90 s) and the 5 min one (30 s), not the hour (360 s).
    cache.history([p0, p1], now + 1, {p0: 600, p1: 0}, {p0: 0, p1: 0})
    assert cache.requests == 4
    cache.history([p0, p1], now + 7, {p0: 600, p1: 0}, {p0: 0, p1: 0})
    assert cache.requests == 5
    cache.history([p0, p1], now + 91, {p0: 600, p1: 0}, {p0: 0, p1: 0})
    assert cache.requests == 8


def test_lag_seconds_from_the_first_check_by_the_index_and_by_the_window(
    broker: ApacheKafka, kafka: Kafka, names: Names
) -> None:
    topic, now, admin = written(broker, kafka, names)
    p0 = (topic, 0)
    points = BaselineCache(offsets_at(admin, 10.0)).history([p0], now, {p0: 600}, {p0: 0})[p0]

    # Committed 400: the first unconsumed message is 400, between the log ends 300 (now - 900 s) and 500
    # (now - 300 s): interpolated at now - 600 s, which is when it was written. Exact, not a bound.
    seconds, bound = lag_seconds_by_index(points, 400, 600, now)
    assert (seconds, bound) == (pytest.approx(600.0), False)
    # The window (Kafka Lag Exporter's method) cannot say anything from one sample: unknown.
    assert lag_seconds([PartitionSample(now, 400, 600, 0)], now) == (None, False)

    # Committed 250 is older than the oldest known point (300 at now - 900 s; the hour has no data): at least
    # 900 s, a lower bound, never extrapolated to a made-up time.
    assert lag_seconds_by_index(points, 250, 600, now) == (pytest.approx(900.0), True)
    # Caught up: 0 s.
    assert lag_seconds_by_index(points, 600, 600, now) == (0.0, False)
    # Committed 550, in the last batch: between 500 (now - 60 s) and 600 (now): now - 30 s by interpolation.
    assert lag_seconds_by_index(points, 550, 600, now) == (pytest.approx(30.0), False)
    assert points[0] == IndexPoint(points[0].at, None, horizon=3600.0)


def test_one_check_knows_lag_seconds_and_baselines_from_the_index(
    broker: ApacheKafka, kafka: Kafka, names: Names
) -> None:
    # `lagbot check --samples 1`: one snapshot, no window to interpolate in. Committed 400 on partition 0 (message
    # 400 written 600 s ago), partition 1 never written. The JSON says which method gave each figure.
    topic, now, _ = written(broker, kafka, names)
    group = names("group")
    consumer = kafka.consumer(group)  # a live member that commits where the test says, and reads no further
    consumer.subscribe([topic])
    try:
        kafka.wait_assigned(consumer)
        consumer.commit(offsets=[TopicPartition(topic, 0, 400), TopicPartition(topic, 1, 0)], asynchronous=False)
        settings = build_settings(
            {"clusters": [{"name": "c", "bootstrap_servers": kafka.bootstrap, "groups": {"include": [group]}}]},
            source="test",
        )
        checker = Checker(settings, MemoryWindowStore(samples=1))  # keeps one snapshot: every check is a first
        report = checker.run(1, 0.0)
    finally:
        consumer.close()
    assert [v.group for v in report.verdicts] == [group]
    [group_json] = report_json(report, remedy=remedy)["groups"]
    p0, p1 = group_json["partitions"]
    assert (p0["lag"], p0["lag_seconds_method"], p0["lag_seconds_lower_bound"]) == (200, "time_index", False)
    # Message 400 was written at `now` - 600 s; the check ran a moment after `now` (at most the test's own time).
    elapsed = report.taken_at - now
    assert 600.0 <= p0["lag_seconds"] <= 600.0 + elapsed + 0.01
    assert (p1["lag"], p1["lag_seconds"], p1["lag_seconds_method"]) == (0, 0.0, "window")
    assert group_json["lag_seconds"] == p0["lag_seconds"]
    # Baselines, shortest horizon first: the hour has no data that old (None); the others as in the first test,
    # measured from the check's own time (rates within the elapsed moment of the exact figures).
    horizons = [b["horizon_seconds"] for b in group_json["baseline_produce_rates"]]
    assert horizons == [60.0, 300.0, 900.0, 3600.0]
    rates = [b["rate"] for b in group_json["baseline_produce_rates"]]
    assert rates[3] is None
    assert rates[:3] == pytest.approx([100 / 60, 100 / 300, 300 / 900], rel=0.05)
