"""Real Kafka clients for the scenario corpus: topics, producers at a rate, consumers that read at a rate.

Every loop here is bounded by a stop event or a deadline; every thread is joined when its scenario ends.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from tests.support.group_commits import commit_to_empty_group

TICK = 0.1
"""Seconds between the steps of the producer and consumer loops."""


def create(bootstrap: str, topic: str, partitions: int, config: dict[str, str] | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1, config=config or {})]).values():
        future.result(15)


def producer(bootstrap: str) -> Producer:
    """Batches of at most 20 messages: a fetch returns whole batches, so with the default (10,000) a consumer
    that reads at a set rate would spend minutes in one partition's first batch before it reads the next."""
    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 5,
            "batch.num.messages": 20,
            "queue.buffering.max.messages": 500_000,
        }
    )


def consumer(bootstrap: str, group: str, **overrides: str | int) -> Consumer:
    """A group member that commits only when told. It prefetches little (1 kB per partition), so a member
    that reads at a set rate reads all its partitions in turn rather than one partition's whole backlog first.
    `overrides`: librdkafka settings that differ (dots written as underscores: max_poll_interval_ms)."""
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 1000,
            # The rebalance timeout: a JoinGroup waits this long at most for a member that does not rejoin (the
            # default, 5 min, kept members of the churning group closing for minutes).
            "max.poll.interval.ms": 10000,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "partition.assignment.strategy": "range",
            "queued.min.messages": 20,
            "max.partition.fetch.bytes": 1024,
            # Once its queue is drained, fetch again at once (the default waits 1 s, which caps a member's reading
            # at a few dozen messages a second per partition with so small a queue).
            "fetch.queue.backoff.ms": 10,
        }
        | {key.replace("_", "."): value for key, value in overrides.items()}
    )


def joined(consumers: Sequence[Consumer], timeout: float = 60.0) -> None:
    """Poll every consumer until each has an assignment (bounded). Messages polled meanwhile are not committed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for c in consumers:
            c.poll(0.1)
        if all(c.assignment() for c in consumers):
            return
    raise RuntimeError("the consumers did not all get an assignment")


def commit_empty(bootstrap: str, group: str, offsets: dict[tuple[str, int], int], timeout: float = 30.0) -> None:
    """Commit offsets for a group with no members (AlterConsumerGroupOffsets), retrying while the coordinator loads."""
    commit_to_empty_group(AdminClient({"bootstrap.servers": bootstrap}), group, offsets, timeout)


def watermarks(bootstrap: str, topic: str, partition: int) -> tuple[int, int]:
    """(log start, log end) of one partition (ListOffsets earliest and latest, bounded)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    tp = TopicPartition(topic, partition)
    found = [
        admin.list_offsets({tp: spec}, request_timeout=10).get(tp)
        for spec in (OffsetSpec.earliest(), OffsetSpec.latest())
    ]
    low, high = (int(future.result(15).offset) for future in found if future is not None)
    return low, high


@contextmanager
def running(*works: Callable[[threading.Event], None]) -> Iterator[None]:
    """Each work in a thread until the block ends (then stopped and joined)."""
    stop = threading.Event()
    threads = [threading.Thread(target=work, args=(stop,), daemon=True) for work in works]
    for thread in threads:
        thread.start()
    try:
        yield
    finally:
        stop.set()
        for thread in threads:
            thread.join(15)


Send = Callable[[Producer, int], None]
"""(producer, messages due this step) -> produces them."""


def at_rate(bootstrap: str, per_second: float, send: Send) -> Callable[[threading.Event], None]:
    """A producer loop that sends `per_second` messages a second through `send`, in steps of TICK."""
    out = producer(bootstrap)

    def work(stop: threading.Event) -> None:
        started, sent = time.monotonic(), 0
        while not stop.wait(TICK):
            due = int((time.monotonic() - started) * per_second) - sent
            if due > 0:
                send(out, due)
                sent += due
            out.poll(0)
        out.flush(10)

    return work


def round_robin(topic: str, partitions: int, value: bytes = b"m") -> Send:
    """Messages spread evenly over the partitions (each partition gets `per_second / partitions`)."""
    turn = [0]

    def send(out: Producer, count: int) -> None:
        for _ in range(count):
            out.produce(topic, value, partition=turn[0] % partitions)
            turn[0] += 1

    return send


def backlog(bootstrap: str, topic: str, partitions: int, per_partition: int) -> None:
    """`per_partition` messages waiting on every partition before the scenario starts."""
    out = producer(bootstrap)
    round_robin(topic, partitions)(out, per_partition * partitions)
    if out.flush(60) != 0:
        raise RuntimeError("the backlog was not all written")


def writer(bootstrap: str, topic: str, partitions: int, per_partition: float) -> Callable[[threading.Event], None]:
    """`per_partition` msg/s to every partition of the topic."""
    return at_rate(bootstrap, per_partition * partitions, round_robin(topic, partitions))


def history(bootstrap: str, topic: str, partition: int, now: float, spans: Sequence[tuple[float, float, int]]) -> None:
    """Messages with past create timestamps, so the broker's time index holds that history:
    (from seconds ago, to seconds ago, msg/s) spans, oldest first, one timestamp per second."""
    out = producer(bootstrap)
    for start, end, rate in spans:
        for ago in range(int(start), int(end), -1):
            for _ in range(rate):
                out.produce(topic, b"m", partition=partition, timestamp=int((now - ago) * 1000))
            out.poll(0)
    if out.flush(60) != 0:
        raise RuntimeError("the history was not all written")


class Reader:
    """A consumer loop: reads at most `per_second` messages a second (None: as fast as they come) and commits what
    it read after each batch (or never, with `commits=False`). It polls every TICK, so it stays in its group."""

    def __init__(self, c: Consumer, per_second: float | None = None, *, commits: bool = True) -> None:
        self.consumer, self.per_second, self.commits = c, per_second, commits

    def __call__(self, stop: threading.Event) -> None:
        budget, last = 0.0, time.monotonic()
        while not stop.is_set():
            now = time.monotonic()
            if self.per_second is None:
                take = 500
            else:
                budget = min(budget + (now - last) * self.per_second, max(self.per_second, 1.0))
                take = int(budget)
            last = now
            if take <= 0:
                stop.wait(TICK)
                continue
            got = [m for m in self.consumer.consume(take, TICK) if m.error() is None]
            budget -= len(got)
            if got and self.commits:
                self.consumer.commit(asynchronous=False)
