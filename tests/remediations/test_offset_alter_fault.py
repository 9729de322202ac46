"""Fault: the Kafka client that sends a remediation's offset commit dies in the middle of it.

AlterConsumerGroupOffsets goes to the group's coordinator through the admin coordinator lookup that a broker
restart can crash (lagbot.engine.offset_reader), so remediations send it from the offset reader's child, never
from the bot's own AdminClient. These tests use an admin whose in-process offset requests fail the test, so a
path that still sent one would be caught; they kill the child while it holds a commit, and read the committed
offsets back from the broker each time.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from typing import Any, NoReturn

import pytest

from lagbot.core.model import GroupState
from lagbot.engine.collector import ClusterAdmin
from lagbot.remediations import kafka as kafka_actions
from lagbot.remediations import wording
from lagbot.remediations.drain.offsets import advance_offsets
from lagbot.remediations.drain.plan import PartitionDrain
from tests.conftest import Kafka, Names

pytestmark = pytest.mark.integration


class ChildOnlyAdmin(ClusterAdmin):
    """A ClusterAdmin whose own group-coordinator requests fail the test: they must go through `offsets`."""

    def alter_consumer_group_offsets(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise AssertionError("AlterConsumerGroupOffsets was sent from the bot's own process")

    def list_consumer_group_offsets(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise AssertionError("OffsetFetch was sent from the bot's own process")

    def describe_consumer_groups(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise AssertionError("DescribeGroups was sent from the bot's own process")


@pytest.fixture
def admin(kafka: Kafka) -> Iterator[ChildOnlyAdmin]:
    client = ChildOnlyAdmin({"bootstrap.servers": kafka.bootstrap})
    yield client
    client.offsets.close()


def committed(admin: ClusterAdmin, group: str, topic: str) -> dict[tuple[str, int], int | None]:
    return kafka_actions.committed_offsets(admin, group, [(topic, 0), (topic, 1)], 10.0)


def test_a_commit_is_sent_by_the_reader_child_and_read_back_exact(
    kafka: Kafka, names: Names, admin: ChildOnlyAdmin
) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 2)
    kafka.produce(topic, 0, 20)
    kafka.produce(topic, 1, 20)

    kafka_actions.alter_offsets(admin, group, {(topic, 0): 5, (topic, 1): 17}, 10.0)

    assert committed(admin, group, topic) == {(topic, 0): 5, (topic, 1): 17}
    assert admin.offsets.child_pid is not None
    assert admin.offsets.failures == 0


def test_a_child_killed_holding_a_commit_gives_an_unknown_outcome_and_the_next_commit_works(
    kafka: Kafka, names: Names, admin: ChildOnlyAdmin
) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 2)
    kafka.produce(topic, 0, 20)
    kafka.produce(topic, 1, 20)
    kafka.commit(group, {(topic, 0): 3, (topic, 1): 4})
    assert committed(admin, group, topic) == {(topic, 0): 3, (topic, 1): 4}  # starts the child

    # The child is stopped before the commit is written to it, then killed: it never sends it.
    pid = admin.offsets.child_pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    timer = threading.Timer(1.0, lambda: (os.kill(pid, signal.SIGKILL), os.kill(pid, signal.SIGCONT)))
    timer.start()
    with pytest.raises(kafka_actions.AlterOutcomeUnknown) as lost:
        kafka_actions.alter_offsets(admin, group, {(topic, 0): 10, (topic, 1): 11}, 5.0)
    timer.join()

    doing = wording.doing_alter_offsets(group)
    assert str(lost.value) == wording.kafka_action_unknown(doing, "the Kafka client crashed (SIGKILL)")
    assert admin.offsets.failures == 1
    assert committed(admin, group, topic) == {(topic, 0): 3, (topic, 1): 4}  # nothing was stored, a new child read

    kafka_actions.alter_offsets(admin, group, {(topic, 0): 10, (topic, 1): 11}, 10.0)
    assert committed(admin, group, topic) == {(topic, 0): 10, (topic, 1): 11}
    assert admin.offsets.failures == 1


def test_the_drain_commit_goes_through_the_child_and_reports_a_lost_answer_by_reading_back(
    kafka: Kafka, names: Names, admin: ChildOnlyAdmin
) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 2)
    kafka.produce(topic, 0, 20)
    kafka.produce(topic, 1, 20)
    kafka.commit(group, {(topic, 0): 2, (topic, 1): 2})
    drained = [PartitionDrain(topic, 0, 2, 2, 12), PartitionDrain(topic, 1, 2, 2, 15)]

    assert advance_offsets(admin, group, drained) == {(topic, 0): 12, (topic, 1): 15}
    assert committed(admin, group, topic) == {(topic, 0): 12, (topic, 1): 15}
    described, _ = kafka_actions.describe_group(admin, group, 10.0)
    assert described == GroupState.EMPTY
    assert admin.offsets.failures == 0
