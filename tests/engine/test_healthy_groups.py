"""Healthy groups are quiet (issue 22, section 1): a property test on Apache Kafka.

A seeded random set of healthy workloads, each its own topic and group, all running at once with real clients: a
producer at 1 to 2,000 msg/s over 1-12 partitions, read by 1-4 members that keep up, committing after every batch
(manual), by auto-commit at its default 5 s cadence, or reading a transactional producer's topic (a transaction every
0.1 s, a few messages each: lag 1 per partition once read, the commit marker) with `read_committed`. Once every
member has its partitions and every group has committed, lagbot checks them all with its default sampling (4
snapshots 5 s apart) and with `--samples 4 --every 3`, and every group must be OK: no partition WARN (or worse), no
severity, no cause, so no button. The workloads must also be what they say: lagbot's produce rate of each is its rate
in offsets (the messages, and with transactions the commit marker each transaction writes in every partition it
touched: at 10 transactions a second over 12 partitions, 120 offsets a second that are no message).

WORKLOADS workloads for each of SEEDS seeds (8 workloads, 16 graded checks): about two minutes on two shared cores
(the producers and consumers of a seed's workloads share the test's process).
"""

from __future__ import annotations

import math
import random
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer
from confluent_kafka.admin import AdminClient

from lagbot.core.config import build_settings
from lagbot.core.model import GroupVerdict, Severity, Status
from lagbot.engine.check import Checker
from lagbot.engine.window import MemoryWindowStore
from tests.conftest import Kafka, Names
from tests.support.waiting import wait_for

pytestmark = pytest.mark.integration

SEEDS = (22, 23)
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


def trouble(verdict: GroupVerdict) -> list[str]:
    """What a healthy group must not get: a partition not OK, a severity, a cause."""
    found = [f"{p.topic}/{p.partition} {p.status.name} ({p.reason}), lag {p.lag}" for p in verdict.partitions
             if p.status is not Status.OK]  # fmt: skip
    if verdict.status is not Status.OK:
        found.append(f"status {verdict.status.name}")
    if verdict.severity is not Severity.OK:
        found.append(f"severity {verdict.severity.name}: {verdict.severity_reason}")
    found += [f"cause {c.kind} -> {c.remediation}: {c.explanation}" for c in verdict.causes]
    return found


@pytest.mark.parametrize("seed", SEEDS)
def test_healthy_groups_get_no_warn_and_no_cause(kafka: Kafka, names: Names, seed: int) -> None:
    works = workloads(seed)
    topics = [names(f"healthy-{i}") for i in range(len(works))]
    groups = [names(f"healthy-group-{i}") for i in range(len(works))]
    for topic, work in zip(topics, works, strict=True):
        kafka.create_topic(topic, work.partitions)
    with ExitStack() as stack:
        members: list[Callable[[threading.Event], None]] = []
        for i, (topic, group, work) in enumerate(zip(topics, groups, works, strict=True)):
            consumers = [member(kafka.bootstrap, group, topic, work, f"m{i}-{k}") for k in range(work.members)]
            for c in consumers:
                stack.callback(c.close)
            assigned(consumers, work.partitions)
            members += [reading(c, work) for c in consumers]
        checking = threading.Event()
        markers = [Markers() for _ in works]
        writers = [
            producing(kafka.bootstrap, topic, work, names(f"txn-{i}"), checking, written)
            for i, (topic, work, written) in enumerate(zip(topics, works, markers, strict=True))
        ]
        stack.enter_context(threads(*members, *writers))
        admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
        for group in groups:
            wait_for(f"{group} to commit", lambda g=group: committed_somewhere(admin, g), 60.0, 0.5)
        settings = build_settings(
            {
                "clusters": [
                    {
                        "name": "apache",
                        "bootstrap_servers": kafka.bootstrap,
                        "groups": {"include": ["|".join(re.escape(g) for g in groups)]},
                        "request_timeout": 5,
                    }
                ]
            },
            source="test",
        )
        checking.set()
        reports = [Checker(settings, MemoryWindowStore(samples=10)).run(4, every) for every in (5.0, 3.0)]

    problems: list[str] = []
    unreal: list[str] = []
    checked = 0
    for report in reports:
        by_group = {v.group: v for v in report.verdicts}
        assert sorted(by_group) == sorted(groups)
        for group, work, written in zip(groups, works, markers, strict=True):
            verdict = by_group[group]
            checked += 1
            problems += [f"{work} {group}: {found}" for found in trouble(verdict)]
            produced = verdict.produce_rate or 0.0
            # lagbot's produce rate is the workload's in offsets (the workload is real): within a third at 10 msg/s
            # and more
            if work.mode == "transactions, then idle":
                if produced >= 1.0 or any((p.lag or 0) > 1 for p in verdict.partitions):
                    unreal.append(f"{work}: produced {produced:.1f} msg/s while idle, lag {verdict.total_lag}")
            elif work.rate >= 10 and produced != pytest.approx(work.rate + written.rate(), rel=0.35):
                unreal.append(f"{work}: produced {produced:.1f} offsets/s, {written.rate():.1f} of them markers")
    assert checked == 2 * WORKLOADS
    assert (problems, unreal) == ([], [])
