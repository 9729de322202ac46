"""ListOffsets of many partitions through confluent-kafka's AdminClient, asked in chunks that are in flight together.

Why chunks: librdkafka's handling of one ListOffsets call grows faster than its partitions. Measured on Apache Kafka
4.1 with confluent-kafka 2.16.1, one broker on loopback, one call for the latest offsets: 625 partitions answered in
21-70 ms, 1,250 in 38-42 ms, 2,500 in 101-122 ms, 5,000 in 286-358 ms (the call itself, before any answer, 63-167
ms). Latest and earliest of 5,000 partitions (100,000 group-partitions in 2,000 groups sharing 100 topics of 50
partitions): one call each 506-707 ms, in chunks of 500 partitions 196-359 ms (medians of 4: 574 and 315 ms).
The requests grow with the chunks (a few for a cluster of thousands of partitions) instead of staying at one per
partition leader; the answers are the same, partition by partition.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any

from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from lagbot.core.model import TopicPartition

CHUNK_PARTITIONS = 500
"""Partitions per ListOffsets call (see the module's docstring for the measurements that chose it)."""


def ask_offsets(
    admin: AdminClient, partitions: Sequence[TopicPartition], spec: Any, timeout: float
) -> dict[KafkaTopicPartition, Future[Any]]:
    """ListOffsets of every partition for `spec` (an `OffsetSpec`: latest, earliest, for a timestamp): one future per
    partition, as `AdminClient.list_offsets` gives them, the chunks' requests all sent before this returns."""
    futures: dict[KafkaTopicPartition, Future[Any]] = {}
    for start in range(0, len(partitions), CHUNK_PARTITIONS):
        chunk = partitions[start : start + CHUNK_PARTITIONS]
        futures.update(admin.list_offsets({KafkaTopicPartition(t, p): spec for t, p in chunk}, request_timeout=timeout))
    return futures
