"""A group's commits: committing offsets for a group with no live members (AlterConsumerGroupOffsets), as the tests
and the corpus do, and reading back what the broker holds (`committed`, the one helper every test uses)."""

from __future__ import annotations

from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, TopicPartition

from lagbot.devkit.embedded import committed_offsets
from tests.support.waiting import wait_for

COORDINATOR_NOT_READY = (
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError.NOT_COORDINATOR,
)


def commit_to_empty_group(
    admin: Any, group: str, offsets: dict[tuple[str, int], int], timeout: float = 30.0, every: float = 0.2
) -> None:
    """Commit `offsets` for `group`; errors come per partition, not raised.

    A broker that has just started answers NOT_COORDINATOR (or a load in progress) until its group coordinator is
    loaded (measured on Apache Kafka 4.1): those are retried until `timeout`; any other error fails at once.
    """
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(t, p, o) for (t, p), o in offsets.items()])

    def committed() -> bool:
        [future] = admin.alter_consumer_group_offsets([request]).values()
        errors = [tp.error for tp in future.result(15).topic_partitions if tp.error is not None]
        if any(e.code() not in COORDINATOR_NOT_READY for e in errors):
            raise AssertionError(f"committing {offsets} for {group} failed: {errors}")
        return not errors

    wait_for(f"the coordinator of {group} to take the commit of {offsets}", committed, timeout, every)


def committed(kafka: Any, group: str, topic: str, partitions: int) -> dict[int, int]:
    """The group's committed offset of each partition of `topic` as the broker returns it (-1001: none), read by the
    offset reader of `kafka.admin` (tests/conftest.py's Kafka)."""
    return dict(enumerate(committed_offsets(kafka.admin, group, topic, partitions)))
