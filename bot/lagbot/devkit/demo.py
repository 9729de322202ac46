"""`lagbot demo`: the whole check on embedded defaults, with nothing to configure.

Starts Apache Kafka when this checkout fetched it (`make kafka-fetch`), else the embedded broker; sets up two
groups through the plain Kafka protocol, and runs the same
`Checker` as `lagbot check`:
- `user-events-consumer`: its consumers are gone (group Empty) while a producer keeps writing to
  partition 1 of `user-events`: lag grows on one hot partition.
- `orders-consumer`: a real consumer that has read and committed everything: caught up, OK.
The demo's thresholds are scaled down to its small numbers (warn at 1,000 messages growing, critical
at 20,000) and printed, so the severities mean something.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from rich.console import Console

from lagbot.cli.exits import exit_code
from lagbot.cli.terminal import print_report
from lagbot.core import messages
from lagbot.core.config import build_settings
from lagbot.devkit import wording
from lagbot.devkit.apache_kafka import broker_version, demo_broker
from lagbot.devkit.embedded import exact_producer, produce
from lagbot.engine.check import Checker
from lagbot.engine.report import report_json
from lagbot.engine.window import MemoryWindowStore
from lagbot.service.remedies import remedy

LAGGING_GROUP = "user-events-consumer"
HEALTHY_GROUP = "orders-consumer"
DEMO_THRESHOLDS: dict[str, Any] = {
    "warn": {"messages": 1_000, "growing": True, "sustained_for": 0},
    "critical": {"messages": 20_000, "doubling_within": "10m", "doubling_min_lag": 1_000},
    "page": {"messages": 100_000},
}


def _setup(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic("user-events", 3, 1), NewTopic("orders", 2, 1)]).values():
        future.result(15)
    producer = exact_producer(bootstrap)
    for partition, count in ((0, 300), (1, 2_000), (2, 300)):
        produce(producer, "user-events", partition, count)
    for partition in (0, 1):
        produce(producer, "orders", partition, 100)
    committed = [TopicPartition("user-events", p, o) for p, o in ((0, 300), (1, 200), (2, 280))]
    _commit(admin, ConsumerGroupTopicPartitions(LAGGING_GROUP, committed))


def _commit(admin: AdminClient, request: ConsumerGroupTopicPartitions, timeout: float = 30.0) -> None:
    """AlterConsumerGroupOffsets, checked partition by partition (errors come there, not raised).

    A broker that has just started answers NOT_COORDINATOR until its group coordinator is loaded (measured
    on Apache Kafka 4.1): retried until `timeout`, so the demo's lagging group is never silently missing.
    """
    retriable = {KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS}
    deadline = time.monotonic() + timeout
    while True:
        [future] = admin.alter_consumer_group_offsets([request]).values()
        errors = [tp.error for tp in future.result(15).topic_partitions if tp.error is not None]
        if not errors:
            return
        if any(e.code() not in retriable for e in errors) or time.monotonic() > deadline:
            raise KafkaException(errors[0])
        time.sleep(0.2)


def _healthy_consumer(bootstrap: str, stop: threading.Event) -> None:
    """A real member of orders-consumer: reads everything and commits after each poll batch."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": HEALTHY_GROUP,
            "client.id": "orders-worker-1",
            "session.timeout.ms": 6000,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe(["orders"])
    try:
        while not stop.is_set():
            batch = consumer.consume(100, 0.2)
            if batch:
                consumer.commit(asynchronous=False)
    finally:
        consumer.close()


def _hot_writer(bootstrap: str, stop: threading.Event, per_second: int) -> None:
    """Keeps writing to user-events partition 1 (the hot partition), bounded by the stop event."""
    producer = exact_producer(bootstrap)
    while not stop.is_set():
        started = time.monotonic()
        produce(producer, "user-events", 1, per_second // 10)
        stop.wait(max(0.0, 0.1 - (time.monotonic() - started)))


def run_demo(*, every: float, samples: int, as_json: bool) -> int:
    """Run the demo and print what it found; returns 0 (the demo worked), saying what `check` would exit."""
    console = Console(stderr=True)
    stop = threading.Event()
    with demo_broker().start() as broker:
        console.print(wording.demo_started(broker.bootstrap, broker_version(broker)))
        _setup(broker.bootstrap)
        threads = [
            threading.Thread(target=_healthy_consumer, args=(broker.bootstrap, stop), daemon=True),
            threading.Thread(target=_hot_writer, args=(broker.bootstrap, stop, 300), daemon=True),
        ]
        for thread in threads:
            thread.start()
        try:
            time.sleep(5)  # let the healthy consumer join (session.timeout.ms=6000: ~3 s) and catch up
            settings = build_settings(
                {
                    "clusters": [{"name": "embedded", "bootstrap_servers": broker.bootstrap}],
                    "thresholds": DEMO_THRESHOLDS,
                },
                source="demo",
            )
            console.print(wording.demo_thresholds(json.dumps(DEMO_THRESHOLDS)))
            checker = Checker(settings, MemoryWindowStore(samples=samples))

            def progress(taken: int) -> None:
                if console.is_terminal:
                    console.print(messages.cli_sampling(taken, samples, every), end="\r")

            report = checker.run(samples, every, progress=progress)
        finally:
            stop.set()
            for thread in threads:
                thread.join(timeout=10)
    if as_json:
        print(json.dumps(report_json(report, remedy=remedy), indent=2))
    else:
        print_report(report, Console())
    console.print(wording.demo_exit(exit_code(report)))
    return 0
