"""Fault: Apache Kafka restarted while the collector reads committed offsets.

Right after a broker restart its group coordinators answer OffsetFetch with coordinator errors, and an
AdminClient's ListConsumerGroupOffsets answered so crashes librdkafka (2.16: SIGSEGV in rd_kafka_cgrp_op, or
SIGABRT). The collector reads committed offsets through `lagbot.engine.offset_reader`'s child process instead: this test
restarts a broker of its own (the session's one stays up) while collecting in a tight loop in this very
process, and asserts the process survives, every read that failed says why, and the next snapshots have the
exact committed offsets again. The number of child crashes seen is printed (`-s`).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import NewTopic

from lagbot.core import messages
from lagbot.core.config import build_settings
from lagbot.core.model import ClusterSnapshot
from lagbot.devkit.apache_kafka import ApacheKafka
from lagbot.engine import wording as engine_wording
from lagbot.engine.collector import ClusterAdmin, collect, make_admin

pytestmark = pytest.mark.integration

GROUPS = 40
TOPIC = "orders"


@pytest.fixture
def own_broker() -> Iterator[ApacheKafka]:
    kafka = ApacheKafka().start()
    try:
        yield kafka
    finally:
        kafka.stop()


def expected(index: int) -> dict[tuple[str, int], int | None]:
    return {(TOPIC, 0): 10 + index, (TOPIC, 1): None}


def seed(broker: ApacheKafka) -> None:
    """A 2-partition topic with 20 messages each and GROUPS empty groups, each committed at 10 + i on partition 0."""
    from confluent_kafka import Producer

    admin = ClusterAdmin({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics([NewTopic(TOPIC, 2, 1)]).values():
        future.result(15)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for partition in (0, 1):
        for _ in range(20):
            producer.produce(TOPIC, b"m", partition=partition)
    assert producer.flush(15) == 0
    for i in range(GROUPS):
        request = ConsumerGroupTopicPartitions(f"g{i:02d}", [TopicPartition(TOPIC, 0, 10 + i)])
        [future] = admin.alter_consumer_group_offsets([request]).values()
        assert all(tp.error is None for tp in future.result(15).topic_partitions)


def correct(snapshot: ClusterSnapshot) -> bool:
    if snapshot.error is not None or len(snapshot.groups) != GROUPS:
        return False
    return all(
        g.error is None and g.committed == expected(int(name[1:])) for name, g in sorted(snapshot.groups.items())
    )


def test_collector_survives_a_broker_restart_and_a_client_crash_and_reads_exact_offsets_after(
    own_broker: ApacheKafka,
) -> None:
    seed(own_broker)
    settings = build_settings(
        {"clusters": [{"name": "restarted", "bootstrap_servers": own_broker.bootstrap, "request_timeout": 5}]},
        source="test",
    )
    cluster = settings.clusters[0]
    admin = make_admin(cluster)
    assert isinstance(admin, ClusterAdmin)
    assert correct(collect(admin, cluster))

    # A broker restart, collecting from the moment it listens again, its coordinators still loading.
    failures: list[str] = []
    own_broker.halt()
    own_broker.resume(wait_ready=False)
    back = time.monotonic()
    while not correct(snapshot := collect(admin, cluster)):
        failures.extend([snapshot.error] if snapshot.error else [g.error for g in snapshot.groups.values() if g.error])
        assert time.monotonic() - back < 90, f"no exact snapshot within 90 s of the restart; last: {failures[-3:]}"
    recovered = time.monotonic() - back
    restart_crashes = admin.offsets.failures

    # The crash librdkafka gives on a coordinator error, for certain: the reader's child is stopped, the request
    # written to it, then it gets SIGSEGV and is continued (so it dies mid-request, never answering).
    pid = admin.offsets.child_pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    timer = threading.Timer(1.0, lambda: (os.kill(pid, signal.SIGSEGV), os.kill(pid, signal.SIGCONT)))
    timer.start()
    crashed = collect(admin, cluster)
    timer.join()
    after = collect(admin, cluster)

    print(
        f"\nbroker restart: exact offsets again after {recovered:.1f} s ({len(failures)} failed reads, "
        f"{restart_crashes} client crashes survived); SIGSEGV in the reader: answered {crashed.error!r}"
    )
    assert all(isinstance(f, str) and f for f in failures)
    # Every group failed alike, so the cycle as a whole says why (and the next one reads them again).
    crash = messages.offset_reader_failed("the Kafka client crashed (SIGSEGV)")
    assert crashed.error == engine_wording.cluster_unreachable("restarted", "describing consumer groups", crash)
    assert crashed.groups == {}
    assert correct(after), after
    assert admin.offsets.failures == restart_crashes + 1
    admin.offsets.close()
