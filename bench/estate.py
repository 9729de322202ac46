"""A benchmark estate on a running broker: groups reading shared topics, with known lag on every partition.

`build_estate` creates topics of P partitions, writes a known number of messages to each partition and
commits a known offset for every group on every partition of its topic, all in parallel futures
(AdminClient.alter_consumer_group_offsets, one group per request). `Estate.expected_lag` is the lag of
every group-partition, computed from what was written, so a benchmark can check that the figures a tool
prints are the broker's.
"""

from __future__ import annotations

import time
from concurrent.futures import Future, wait
from dataclasses import dataclass
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

GroupPartition = tuple[str, str, int]
"""(group, topic, partition)"""


@dataclass(frozen=True)
class Estate:
    prefix: str
    groups: list[str]
    topics: list[str]
    partitions: int
    groups_per_topic: int
    log_end: dict[tuple[str, int], int]
    committed: dict[GroupPartition, int]

    @property
    def group_partitions(self) -> int:
        return len(self.committed)

    def topic_of(self, index: int) -> str:
        return self.topics[index // self.groups_per_topic]

    def expected_lag(self) -> dict[GroupPartition, int]:
        return {(g, t, p): self.log_end[(t, p)] - offset for (g, t, p), offset in self.committed.items()}


def messages_in(topic_index: int, partition: int) -> int:
    """Messages written to a partition: 3 to 19, varying with topic and partition."""
    return 3 + (topic_index * 7 + partition * 5) % 17


def committed_at(group_index: int, partition: int, log_end: int) -> int:
    """A group's committed offset on a partition: 0 to the log end, so lag varies from 0 to the log end."""
    return (group_index * 3 + partition) % (log_end + 1)


def build_estate(bootstrap: str, prefix: str, groups: int, partitions: int, groups_per_topic: int) -> Estate:
    """Topics, messages and committed offsets for `groups` groups, `groups_per_topic` of them on each topic."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic_count = (groups + groups_per_topic - 1) // groups_per_topic
    topics = [f"{prefix}-t{i}" for i in range(topic_count)]
    _all(admin.create_topics([NewTopic(t, partitions, 1) for t in topics], request_timeout=60).values(), 120)
    log_end = _produce(bootstrap, topics, partitions)
    names = [f"{prefix}-g{i}" for i in range(groups)]
    committed: dict[GroupPartition, int] = {}
    requests = []
    for i, group in enumerate(names):
        topic = topics[i // groups_per_topic]
        offsets = []
        for p in range(partitions):
            offset = committed_at(i, p, log_end[(topic, p)])
            committed[(group, topic, p)] = offset
            offsets.append(TopicPartition(topic, p, offset))
        requests.append(ConsumerGroupTopicPartitions(group, offsets))
    _commit(admin, requests)
    return Estate(prefix, names, topics, partitions, groups_per_topic, log_end, committed)


def _commit(admin: AdminClient, requests: list[ConsumerGroupTopicPartitions], rounds: int = 30) -> None:
    """Every group's offsets, all requests in flight together; again for the groups whose commit failed (a
    fresh broker answers COORDINATOR_LOAD_IN_PROGRESS per partition while it loads its offsets topic)."""
    pending = requests
    for _ in range(rounds):
        futures: list[tuple[ConsumerGroupTopicPartitions, Future[Any]]] = []
        for request in pending:
            [future] = admin.alter_consumer_group_offsets([request], request_timeout=120).values()
            futures.append((request, future))
        wait([f for _, f in futures], timeout=300)
        pending = [r for r, f in futures if f.exception() is not None or _failed(f.result(0))]
        if not pending:
            return
        time.sleep(0.5)
    raise RuntimeError(f"offsets of {len(pending)} groups not committed after {rounds} rounds")


def _failed(result: Any) -> bool:
    return any(tp.error is not None for tp in result.topic_partitions)


def _produce(bootstrap: str, topics: list[str], partitions: int) -> dict[tuple[str, int], int]:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all", "enable.idempotence": True})
    log_end: dict[tuple[str, int], int] = {}
    for ti, topic in enumerate(topics):
        for p in range(partitions):
            count = messages_in(ti, p)
            for _ in range(count):
                producer.produce(topic, value=b"m", partition=p)
            producer.poll(0)
            log_end[(topic, p)] = count
    remaining = producer.flush(120)
    if remaining:
        raise RuntimeError(f"{remaining} messages not delivered within 120 s")
    return log_end


def _all(futures: Any, timeout: float) -> None:
    pending = list(futures)
    started = time.monotonic()
    wait(pending, timeout=timeout)
    for future in pending:
        future.result(max(0.0, timeout - (time.monotonic() - started)))
