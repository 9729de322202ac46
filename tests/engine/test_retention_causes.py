"""Retention on Apache Kafka: the log start moved by DeleteRecords, judged by a real check.

`AdminClient.delete_records` moves a partition's log start as retention would (Apache Kafka answers
DeleteRecords; the embedded broker does not). Past a group's committed offset: `data_loss`, with the exact
number of messages deleted before the group read them. Short of it, with most retained messages unread:
`retention_risk`. Both read back from the broker through the collector, never from a hand-made snapshot.
"""

from __future__ import annotations

import pytest
from confluent_kafka import TopicPartition

from lagbot.core.config import build_settings
from lagbot.core.model import Cause, GroupVerdict
from lagbot.engine.check import Checker
from lagbot.engine.window import MemoryWindowStore
from lagbot.service.remedies import remedy
from tests.conftest import Kafka, Names

pytestmark = pytest.mark.integration


def check(kafka: Kafka, group: str) -> GroupVerdict:
    """The group's verdict from one real check cycle (collector, evaluator, diagnosis)."""
    settings = build_settings(
        {"clusters": [{"name": "apache", "bootstrap_servers": kafka.bootstrap, "groups": {"include": [group]}}]},
        source="test",
    )
    [verdict] = Checker(settings, MemoryWindowStore(samples=5, ttl=60)).run(1, 0).verdicts
    return verdict


def delete_records(kafka: Kafka, topic: str, before: dict[int, int]) -> dict[int, int]:
    """DeleteRecords up to `before[partition]` (exclusive); returns the new log start per partition (low watermark)."""
    futures = kafka.admin.delete_records([TopicPartition(topic, p, o) for p, o in before.items()])
    return {tp.partition: future.result(15).low_watermark for tp, future in futures.items()}


def cause(verdict: GroupVerdict, kind: str) -> Cause:
    [found] = [c for c in verdict.causes if c.kind == kind]
    return found


def test_log_start_past_the_committed_offset_is_data_loss_with_the_messages_lost(kafka: Kafka, names: Names) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 3)
    for partition, n in {0: 100, 1: 60, 2: 40}.items():
        kafka.produce(topic, partition, n)
    kafka.commit(group, {(topic, 0): 30, (topic, 1): 50, (topic, 2): 40})
    # Partition 0 loses 70 - 30 = 40 unread messages, partition 1 loses 55 - 50 = 5; partition 2 was read to the end.
    assert delete_records(kafka, topic, {0: 70, 1: 55, 2: 40}) == {0: 70, 1: 55, 2: 40}

    verdict = check(kafka, group)
    assert [(p.partition, p.committed, p.log_start, p.log_end, p.lag) for p in verdict.partitions] == [
        (0, 30, 70, 100, 70),
        (1, 50, 55, 60, 10),
        (2, 40, 40, 40, 0),
    ]
    lost = cause(verdict, "data_loss")
    assert lost.explanation == (
        f"45 messages on 2 partition(s) were deleted by retention before the group read them "
        f"(worst: {topic}-0); the committed offset is below the log start"
    )
    assert lost.evidence == {"partitions": [0, 1], "messages_deleted_unread": 45}
    assert (lost.rank, lost.confidence, remedy(lost)) == (1, 0.99, "reset_offsets")
    assert [c.kind for c in verdict.causes if c.kind == "retention_risk"] == []


def test_most_retained_messages_unread_is_retention_risk(kafka: Kafka, names: Names) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 2)
    kafka.produce(topic, 0, 100)
    kafka.produce(topic, 1, 100)
    kafka.commit(group, {(topic, 0): 20, (topic, 1): 95})
    # Partition 0 keeps offsets 10..99 (90 messages), 80 of them unread: 89% (>= 80%), nothing lost yet.
    # Partition 1 keeps 10..99 too, with 5 unread: not at risk.
    assert delete_records(kafka, topic, {0: 10, 1: 10}) == {0: 10, 1: 10}

    verdict = check(kafka, group)
    assert [(p.partition, p.committed, p.log_start, p.log_end, p.lag) for p in verdict.partitions] == [
        (0, 20, 10, 100, 80),
        (1, 95, 10, 100, 5),
    ]
    risk = cause(verdict, "retention_risk")
    assert risk.explanation == (
        f"{topic}-0: lag is 89% of the retained messages (1 partition(s) at risk); "
        "retention will delete unread messages soon"
    )
    assert risk.evidence == {"partition": 0, "topic": topic, "lag_share_of_retained": 0.889}
    assert (risk.confidence, remedy(risk)) == (0.9, "drain")
    assert [c.kind for c in verdict.causes if c.kind == "data_loss"] == []

    # Retention then takes offsets 10..34 of partition 0: 20..34 were unread, so the risk became a loss of 15.
    assert delete_records(kafka, topic, {0: 35}) == {0: 35}
    after = check(kafka, group)
    lost = cause(after, "data_loss")
    assert lost.evidence == {"partitions": [0], "messages_deleted_unread": 15}
    assert [c.kind for c in after.causes if c.kind == "retention_risk"] == []
