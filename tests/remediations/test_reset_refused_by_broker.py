"""A reset the broker itself refuses: a consumer joins between lagbot's "is the group Empty?" and the change.

lagbot checks the group is inactive right before altering its offsets, but a consumer may join in between.
Apache Kafka then refuses the commit (UNKNOWN_MEMBER_ID, on the classic and the consumer protocol alike).
The race is made certain, not mocked: the client's real offset reader describes the group (Empty), then a real
consumer joins and is assigned, then lagbot asks the broker. The outcome, as the incident thread shows it, says the
broker refused because the group is active again and that nothing changed, and the offsets read back agree.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
from confluent_kafka import Consumer

from lagbot.core.config import build_settings
from lagbot.core.model import GroupVerdict
from lagbot.engine.check import Checker
from lagbot.engine.offset_reader import GroupRead, OffsetReader
from lagbot.engine.window import MemoryWindowStore
from lagbot.remediations.base import ExecutionContext
from lagbot.remediations.reset_offsets.remediation import ResetOffsets, ResetParams
from lagbot.service import wording as service_wording
from tests.conftest import Kafka, Names
from tests.support.group_commits import committed

pytestmark = pytest.mark.integration
NOW = 1_800_000_000.0


class JoinAfterDescribe:
    """Wraps the client's real offset reader: right after it describes the group, a consumer joins (`join`)."""

    def __init__(self, reader: OffsetReader, join: Callable[[], None]) -> None:
        self._read = reader.read
        self._join = join
        self.states_seen: list[str] = []

    def read(self, groups: Sequence[str], timeout: float) -> dict[str, GroupRead]:
        answer = self._read(groups, timeout)
        self.states_seen += [a.described.state.name for a in answer.values() if not isinstance(a.described, str)]
        self._join()
        return answer


def check(kafka: Kafka, group: str) -> GroupVerdict:
    settings = build_settings(
        {"clusters": [{"name": "apache", "bootstrap_servers": kafka.bootstrap, "groups": {"include": [group]}}]},
        source="test",
    )
    [verdict] = Checker(settings, MemoryWindowStore(samples=5, ttl=60)).run(1, 0).verdicts
    return verdict


def member(kafka: Kafka, group: str, protocol: str) -> Consumer:
    if protocol == "classic":
        return kafka.consumer(group)
    config = {
        "bootstrap.servers": kafka.bootstrap,
        "group.id": group,
        "group.protocol": "consumer",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    }
    return Consumer(config)


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_a_consumer_joining_after_the_check_makes_the_broker_refuse_and_nothing_changes(
    kafka: Kafka, names: Names, protocol: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 2)
    kafka.produce(topic, 0, 10)
    kafka.produce(topic, 1, 6)
    kafka.commit(group, {(topic, 0): 2, (topic, 1): 5})
    plan = ResetOffsets().plan(check(kafka, group), ResetParams(mode="latest"), now=NOW)
    assert plan.after["offsets"] == [[topic, 0, 10], [topic, 1, 6]]

    consumer = member(kafka, group, protocol)

    def join() -> None:
        consumer.subscribe([topic])
        kafka.wait_assigned(consumer)

    hook = JoinAfterDescribe(kafka.admin.offsets, join)
    monkeypatch.setattr(kafka.admin.offsets, "read", hook.read)  # undone when the test ends
    lines: list[str] = []
    try:
        outcome = ResetOffsets().execute(plan, ExecutionContext(admin=kafka.admin, progress=lines.append, timeout=10))
    finally:
        consumer.close()

    assert hook.states_seen == ["EMPTY"]  # lagbot's own check passed: the broker is what refused
    assert not outcome.ok
    refusal = (
        f"the broker refused to alter the committed offsets of group '{group}': the group has live consumers now "
        "(one joined after lagbot found it Empty); nothing changed (offsets read back as before): "
        "stop its consumers, then propose again"
    )
    assert outcome.detail == refusal
    # The line the incident thread gets (Remediator._finish).
    assert service_wording.remediation_result(outcome.ok, plan.summary, outcome.detail) == (
        f":x: *{plan.summary}* failed: {refusal}"
    )
    assert lines == [f"resetting 2 partition(s) of {group} ..."]
    assert committed(kafka, group, topic, 2) == {0: 2, 1: 5}
