"""Exact lag in seconds on Apache Kafka: the first unconsumed record's own timestamp, for the N worst partitions.

Messages are written with explicit create timestamps to the millisecond, so every figure below is known:

    partition 0: offsets 0..99 at T - 1000.5 s, 100..199 at T - 400.25 s, 200..299 at T - 10.125 s
    partition 1 (first test): offsets 0..49 at T - 50.5 s

Committed 150 on partition 0: the first unconsumed record was written at T - 400.25 s, so its exact lag in seconds
is the check's `now` minus that. The time index interpolates it between the log end at T - 900 s (100) and at
T - 300 s (200): T - 600 s, an estimate 200 s off; the exact figure replaces it.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer

from lagbot.core.config import build_settings
from lagbot.devkit.apache_kafka import ApacheKafka
from lagbot.engine.check import Checker
from lagbot.engine.report import report_json
from lagbot.engine.window import MemoryWindowStore
from lagbot.service.remedies import remedy
from tests.conftest import Kafka, Names

pytestmark = pytest.mark.integration


def write(broker: ApacheKafka, topic: str, partition: int, batches: list[tuple[int, int]]) -> None:
    """(timestamp in ms, count) batches written to one partition, in order."""
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for millis, count in batches:
        for _ in range(count):
            producer.produce(topic, b"m", partition=partition, timestamp=millis)
    assert producer.flush(15) == 0


def checker(kafka: Kafka, group: str, exact: int) -> Checker:
    settings = build_settings(
        {
            "clusters": [{"name": "c", "bootstrap_servers": kafka.bootstrap, "groups": {"include": [group]}}],
            "evaluation": {"exact_lag_seconds": exact},
        },
        source="test",
    )
    return Checker(settings, MemoryWindowStore(samples=4))


def partition_zero(broker: ApacheKafka, kafka: Kafka, names: Names) -> tuple[str, int]:
    """The topic (2 partitions) with partition 0 written as the module says; the millisecond T - 400.25 s."""
    topic = names("topic")
    kafka.create_topic(topic, 2)
    now_ms = int(time.time() * 1000)
    write(broker, topic, 0, [(now_ms - 1_000_500, 100), (now_ms - 400_250, 100), (now_ms - 10_125, 100)])
    return topic, now_ms - 400_250


def test_exact_lag_seconds_is_the_first_unconsumed_records_timestamp(
    broker: ApacheKafka, kafka: Kafka, names: Names
) -> None:
    topic, written_ms = partition_zero(broker, kafka, names)
    other_ms = int(time.time() * 1000) - 50_500
    write(broker, topic, 1, [(other_ms, 50)])
    group = names("group")
    kafka.commit(group, {(topic, 0): 150, (topic, 1): 20})

    report = checker(kafka, group, exact=2).run(1, 0.0)
    [group_json] = report_json(report, remedy=remedy)["groups"]
    p0, p1 = group_json["partitions"]
    # Both partitions are among the 2 worst: each figure is the check's time minus its record's timestamp, exactly.
    assert (p0["lag"], p0["lag_seconds_method"], p0["lag_seconds_lower_bound"]) == (150, "exact", False)
    assert p0["lag_seconds"] == round(report.taken_at - written_ms / 1000, 3)
    assert (p1["lag"], p1["lag_seconds_method"], p1["lag_seconds_lower_bound"]) == (30, "exact", False)
    assert p1["lag_seconds"] == round(report.taken_at - other_ms / 1000, 3)
    assert group_json["lag_seconds"] == p0["lag_seconds"]


def test_exact_interpolated_and_window_figures_on_one_workload(broker: ApacheKafka, kafka: Kafka, names: Names) -> None:
    topic, written_ms = partition_zero(broker, kafka, names)
    group = names("group")
    kafka.commit(group, {(topic, 0): 150, (topic, 1): 0})

    # Off (the default): partition 0's figure is the time index's interpolation, T - 600 s, 200 s too long.
    off = report_json(checker(kafka, group, exact=0).run(1, 0.0), remedy=remedy)["groups"][0]["partitions"][0]
    after = time.time()
    assert off["lag_seconds_method"] == "time_index"
    # (The index's points are asked at the snapshot's time, a moment before the check's `now`: 600 s plus the time
    # from the writes to that snapshot, which a loaded machine can stretch past a second.)
    written_at = (written_ms + 400_250) / 1000
    assert 600.0 <= off["lag_seconds"] <= 600.0 + (after - written_at) + 0.0005

    # N = 1: two samples, partition 1 written between them (its first unconsumed message falls inside the window,
    # Kafka Lag Exporter's interpolation); partition 0 is the worst, so it alone is read exactly.
    check = checker(kafka, group, exact=1)
    first = time.time()
    check.sample()
    before = time.time()
    write(broker, topic, 1, [(int(before * 1000), 10)])
    report = check.evaluate(check.sample())
    p0, p1 = report_json(report, remedy=remedy)["groups"][0]["partitions"]
    assert (p0["lag_seconds_method"], p0["lag_seconds"]) == ("exact", round(report.taken_at - written_ms / 1000, 3))
    assert (p1["lag"], p1["lag_seconds_method"], p1["lag_seconds_lower_bound"]) == (10, "window", False)
    # Message 0 of partition 1 was written after the first sample: the window places it at that sample's time
    # (the log end had not passed it yet), so the figure lies between the check's time since the write and since
    # just before the first sample.
    # (The JSON rounds to the millisecond, hence the half millisecond either side.)
    assert report.taken_at - before - 0.0005 <= p1["lag_seconds"] <= report.taken_at - first + 0.0005
