"""Healthy workloads on Apache Kafka, for the quiet property test (tests/engine/test_healthy_groups.py) and the
soak (bench/soak_healthy.py): a producer at 1 to 2,000 msg/s over 1-12 partitions, read by 1-4 members that keep up,
committing after every batch (manual), by auto-commit at its default 5 s cadence, or reading a transactional
producer's topic (a transaction every 0.1 s, a few messages each: lag 1 per partition once read, the commit marker)
with `read_committed`.
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.waiting import wait_for

WORKLOADS = 4
"""Per seed, all at once, one per way of committing: two at the extreme rates (2,000 and 1 msg/s), the others
drawn; the last writes transactions until the checks start, then nothing (its consumer, caught up, sees lag 1 per
partition: the commit markers). Few at once, so that the broker and the clients keep up on two shared cores: a
workload that does not keep up is not healthy, and its lag is real."""
MODES = ("manual", "auto", "transactions", "transactions, then idle")
EXTREMES = {22: (2000.0, 1.0, None, None), 23: (None, 2000.0, 1.0, None)}
"""Per seed, the rate of each way of committing (None: drawn)."""
TICK = 0.1


@dataclass
class Markers:
    """The commit markers a transactional producer wrote, from when to when it ran (monotonic seconds)."""

    count: int = 0
    since: float = 0.0
    until: float = 0.0

    def rate(self) -> float:
        return self.count / max(self.until - self.since, 1e-9)


@dataclass(frozen=True)
class Workload:
    rate: float
    """Messages a second over the whole topic."""
    partitions: int
    members: int
    mode: str


def workloads(seed: int) -> list[Workload]:
    """WORKLOADS workloads: each way of committing once, at the seed's extreme rates or a rate log-uniform over
    1..2,000 msg/s; 1-12 partitions, 1-4 members."""
    rnd = random.Random(seed)
    found = []
    for mode, extreme in zip(MODES, EXTREMES[seed], strict=True):
        drawn = round(math.exp(rnd.uniform(0.0, math.log(2000.0))), 1)
        found.append(Workload(extreme or drawn, rnd.randint(1, 12), rnd.randint(1, 4), mode))
    return found


def producing(
    bootstrap: str, topic: str, work: Workload, name: str, checking: threading.Event, markers: Markers
) -> Callable[[threading.Event], None]:
    """The workload's producer: `rate` msg/s round robin over the partitions, in steps of TICK; with transactions,
    one transaction per step (a few messages each, one at 1 msg/s), counted in `markers`, and with 'then idle', none
    once `checking`."""
    transactional = work.mode.startswith("transactions")
    config: dict[str, object] = {"bootstrap.servers": bootstrap, "linger.ms": 5}
    if transactional:
        config["transactional.id"] = name
    out = Producer(config)
    if transactional:
        out.init_transactions(30)

    def loop(stop: threading.Event) -> None:
        started, sent = time.monotonic(), 0
        markers.since = started
        while not stop.wait(TICK):
            if work.mode == "transactions, then idle" and checking.is_set():
                break
            due = int((time.monotonic() - started) * work.rate) - sent
            if due <= 0:
                continue
            if transactional:
                out.begin_transaction()
            for i in range(sent, sent + due):
                send(out, topic, i % work.partitions)
            sent += due
            if transactional:
                out.commit_transaction(30)
                markers.count += min(due, work.partitions)  # round robin: one marker per partition it wrote to
            else:
                out.poll(0)
        markers.until = time.monotonic()
        out.flush(15)

    return loop


def send(out: Producer, topic: str, partition: int) -> None:
    """One message; while the producer's queue is full, serve its deliveries first (bounded, as a producer does)."""
    for _ in range(100):
        try:
            out.produce(topic, b"m", partition=partition)
            return
        except BufferError:
            out.poll(0.1)
    raise RuntimeError(f"the producer of {topic} stayed full for 10 s")


def member(bootstrap: str, group: str, topic: str, work: Workload, client: str) -> Consumer:
    config: dict[str, object] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "client.id": client,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 1000,
        "enable.auto.commit": work.mode == "auto",  # auto.commit.interval.ms left at its default, 5 s
    }
    if work.mode.startswith("transactions"):
        config["isolation.level"] = "read_committed"
    consumer = Consumer(config)
    consumer.subscribe([topic])
    return consumer


def reading(consumer: Consumer, work: Workload) -> Callable[[threading.Event], None]:
    """A member that keeps up: reads what comes and, unless auto-commit does, commits after every batch."""

    def loop(stop: threading.Event) -> None:
        while not stop.is_set():
            got = [m for m in consumer.consume(500, TICK) if m.error() is None]
            if got and work.mode != "auto":
                consumer.commit(asynchronous=False)

    return loop


@contextmanager
def threads(*works: Callable[[threading.Event], None]) -> Iterator[None]:
    stop = threading.Event()
    running = [threading.Thread(target=work, args=(stop,), daemon=True) for work in works]
    for thread in running:
        thread.start()
    try:
        yield
    finally:
        stop.set()
        for thread in running:
            thread.join(30)


def assigned(consumers: list[Consumer], partitions: int) -> None:
    """Poll the members (before their loops start) until the partitions are all assigned, to min(members,
    partitions) members. Messages polled meanwhile: there are none yet (the producers start after)."""

    def spread() -> bool:
        for c in consumers:
            c.poll(0.05)
        owned = [len(c.assignment()) for c in consumers]
        return sum(owned) == partitions and sum(1 for n in owned if n) == min(len(consumers), partitions)

    wait_for(f"{len(consumers)} member(s) to share {partitions} partition(s)", spread, 90.0, 0.0)


def committed_somewhere(admin: AdminClient, group: str) -> bool:
    [future] = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)]).values()
    return any(tp.offset >= 0 for tp in future.result(15).topic_partitions)


@dataclass(frozen=True)
class Running:
    """Workloads running: `checking` set tells the 'then idle' ones to stop writing; `markers` per workload."""

    topics: list[str]
    groups: list[str]
    checking: threading.Event
    markers: list[Markers]


@contextmanager
def running(bootstrap: str, works: list[Workload], stem: str) -> Iterator[Running]:
    """Each workload on its own topic and group named from `stem`, all at once: topics made, members in (every
    partition assigned before any message), producers on, and every group committed once, before it yields."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [f"{stem}-healthy-{i}" for i in range(len(works))]
    groups = [f"{stem}-healthy-group-{i}" for i in range(len(works))]
    made = admin.create_topics([NewTopic(t, w.partitions, 1) for t, w in zip(topics, works, strict=True)])
    for future in made.values():
        future.result(15)
    with ExitStack() as stack:
        members: list[Callable[[threading.Event], None]] = []
        for i, (topic, group, work) in enumerate(zip(topics, groups, works, strict=True)):
            consumers = [member(bootstrap, group, topic, work, f"m{i}-{k}") for k in range(work.members)]
            for c in consumers:
                stack.callback(c.close)
            assigned(consumers, work.partitions)
            members += [reading(c, work) for c in consumers]
        checking = threading.Event()
        markers = [Markers() for _ in works]
        writers = [
            producing(bootstrap, topic, work, f"{stem}-txn-{i}", checking, written)
            for i, (topic, work, written) in enumerate(zip(topics, works, markers, strict=True))
        ]
        stack.enter_context(threads(*members, *writers))
        for group in groups:
            wait_for(f"{group} to commit", lambda g=group: committed_somewhere(admin, g), 60.0, 0.5)
        yield Running(topics, groups, checking, markers)
