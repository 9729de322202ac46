"""`BaselineCache` answers a horizon from the log ends the bot read in an earlier cycle (`saw`) when they were read
near enough to now - horizon, and asks the broker only for the rest; a log end read then is what the time index
answers for that time (checked against Apache Kafka's own answer)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from lagbot.devkit.apache_kafka import ApacheKafka
from lagbot.engine.timeindex import REASK_SHARE, BaselineCache, IndexPoint, offsets_at
from tests.conftest import Kafka, Names

P0, P1 = ("orders", 0), ("orders", 1)
NOW = 1_800_000_000.0


class Broker:
    """Answers every asked time with fixed offsets, and counts what it was asked."""

    def __init__(self, answer: Mapping[tuple[str, int], int]) -> None:
        self.answer = answer
        self.asked: list[list[float]] = []

    def __call__(self, tps: Sequence[tuple[str, int]], ats: Sequence[float]) -> list[Mapping[tuple[str, int], int]]:
        self.asked.append(list(ats))
        return [{tp: self.answer[tp] for tp in tps} for _ in ats]


def test_a_horizon_near_a_cycle_the_bot_saw_is_answered_from_it_and_the_others_are_asked() -> None:
    broker = Broker({P0: 7, P1: -1})
    cache = BaselineCache(broker)
    cache.saw(NOW - 60.4, {P0: 100, P1: 50})  # the last cycle, a minute ago (started 0.4 s early)
    history = cache.history([P0, P1], NOW, {P0: 160, P1: 50}, {P0: 0, P1: 0})
    assert broker.asked == [[NOW - 300.0, NOW - 900.0, NOW - 3600.0]]  # not the minute
    assert cache.requests == 3
    # Oldest first; the minute's point is the log end read then, at the time it was read. Nothing was written to
    # partition 1 since: its log end then was today's (what the index answers as -1).
    assert history[P0][-1] == IndexPoint(NOW - 60.4, 100, 60.0)
    assert history[P1][-1] == IndexPoint(NOW - 60.4, 50, 60.0)
    assert history[P0][0] == IndexPoint(NOW - 3600.0, 7, 3600.0)


def test_log_ends_read_too_far_from_the_horizon_or_missing_a_partition_are_not_taken() -> None:
    broker = Broker({P0: 7, P1: 3})
    cache = BaselineCache(broker, horizons=[60.0])
    cache.saw(NOW - 60.0 - REASK_SHARE * 60.0, {P0: 100, P1: 50})  # 6 s older than the minute: too old
    cache.saw(NOW - 60.0 + REASK_SHARE * 60.0, {P0: 100, P1: 50})  # 6 s newer: too new
    cache.history([P0, P1], NOW, {P0: 160, P1: 50}, {P0: 0, P1: 0})
    assert broker.asked == [[NOW - 60.0]]
    other = BaselineCache(broker, horizons=[60.0])
    other.saw(NOW - 60.0, {P0: 100})  # partition 1 was not read then
    assert other.history([P0, P1], NOW, {P0: 160, P1: 50}, {P0: 0, P1: 0})[P1] == (IndexPoint(NOW - 60.0, 3, 60.0),)
    assert broker.asked[-1] == [NOW - 60.0]


def test_a_log_end_since_deleted_by_retention_is_no_data_that_old_as_the_index_says() -> None:
    cache = BaselineCache(Broker({}), horizons=[60.0])
    cache.saw(NOW - 60.0, {P0: 100})
    assert cache.history([P0], NOW, {P0: 400}, {P0: 150})[P0] == (IndexPoint(NOW - 60.0, None, 60.0),)
    assert cache.requests == 0


def horizons_asked(jitter: float, cycles: int) -> list[list[float]]:
    """A bot checking every minute (each cycle starting `jitter` s early or late, alternately): per cycle, the
    horizons the broker was asked."""
    broker = Broker({P0: 1})
    cache = BaselineCache(broker)
    asked: list[list[float]] = []
    for cycle in range(cycles):
        now = NOW + 60.0 * cycle + (jitter if cycle % 2 else -jitter)
        before = len(broker.asked)
        cache.history([P0], now, {P0: 1_000 + cycle}, {P0: 0})
        cache.saw(now, {P0: 1_000 + cycle})
        asked.append([round(now - at) for ats in broker.asked[before:] for at in ats])
    assert len(cache._seen) <= 3600 * (1 + REASK_SHARE) / 60 + 1  # kept only while a horizon could take them
    return asked


def test_a_bot_checking_every_minute_asks_the_broker_only_what_it_has_not_seen() -> None:
    asked = horizons_asked(0.0, 20)
    assert asked[0] == [60, 300, 900, 3600]
    # The 5 minute horizon is asked (when it has moved on by a tenth of itself, 30 s) until the bot has seen
    # 5 minutes back (cycle 5); the 15 minute one (every 90 s: every other cycle) until it has seen within 90 s of
    # 15 minutes back (cycle 14); the hour every 6 minutes, as before.
    assert asked[1:] == [
        [300],
        [300, 900],
        [300],
        [300, 900],
        [],
        [900, 3600],
        [],
        [900],
        [],
        [900],
        [],
        [900, 3600],
        [],
        [],
        [],
        [],
        [],
        [3600],
        [],
    ]


def test_the_schedulers_jitter_does_not_send_the_minute_to_the_broker() -> None:
    asked = horizons_asked(0.4, 20)
    assert all(60 not in found for found in asked[1:])
    assert all(300 not in found for found in asked[6:])


@pytest.mark.integration
def test_a_log_end_read_at_a_time_is_the_time_indexs_answer_for_it(
    broker: ApacheKafka, kafka: Kafka, names: Names
) -> None:
    topic = names("topic")
    kafka.create_topic(topic, 2)
    read_at = time.time()
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for ago, count in ((20.0, 30), (-20.0, 12)):  # written before `read_at`, then after it
        for _ in range(count):
            producer.produce(topic, b"m", partition=0, timestamp=int((read_at - ago) * 1000))
    producer.produce(topic, b"m", partition=1, timestamp=int((read_at - 20.0) * 1000))
    assert producer.flush(15) == 0
    p0, p1 = (topic, 0), (topic, 1)
    log_end, log_start = {p0: 42, p1: 1}, {p0: 0, p1: 0}
    # What the bot would have read at `read_at`: 30 on partition 0, 1 on partition 1 (nothing written since).
    seen = BaselineCache(Broker({}), horizons=[60.0])
    seen.saw(read_at, {p0: 30, p1: 1})
    from_seen = seen.history([p0, p1], read_at + 60.0, log_end, log_start)
    asked = BaselineCache(offsets_at(AdminClient({"bootstrap.servers": broker.bootstrap}), 10.0), horizons=[60.0])
    from_broker = asked.history([p0, p1], read_at + 60.0, log_end, log_start)
    assert (seen.requests, asked.requests) == (0, 1)
    assert (
        from_seen
        == from_broker
        == {
            p0: (IndexPoint(read_at, 30, 60.0),),
            p1: (IndexPoint(read_at, 1, 60.0),),
        }
    )
