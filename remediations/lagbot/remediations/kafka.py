"""The few admin requests remediations make right before acting: describe a group, read and alter offsets.

Plain Kafka protocol through confluent-kafka's AdminClient, each wait bounded by `timeout` (+1 s). Any
failure raises `KafkaActionError` whose message says what was being done and why it failed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from concurrent.futures import Future, wait
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import OffsetSpec

from lagbot.core import messages
from lagbot.core.model import GroupState, Member, TopicPartition
from lagbot.engine.collector import offset_reader
from lagbot.engine.offset_reader import AlterFailed
from lagbot.remediations import wording

NO_OFFSET = -1
"""What ListOffsets answers for a timestamp later than every message of the partition."""


class KafkaActionError(Exception):
    """A broker request a remediation needed failed; the message says which and why."""


class GroupActiveError(KafkaActionError):
    """The broker refused to alter a group's offsets because the group has live members now.

    `refused`: the partitions refused; others of the request may have been altered (the caller reads back).
    """

    def __init__(self, message: str, refused: Iterable[TopicPartition]) -> None:
        super().__init__(message)
        self.refused = tuple(refused)


class AlterOutcomeUnknown(KafkaActionError):
    """An offset commit got no answer (the reader's child crashed or timed out): read the offsets back to know."""


_MEMBER_ERRORS = (KafkaError.UNKNOWN_MEMBER_ID, KafkaError.ILLEGAL_GENERATION, KafkaError.REBALANCE_IN_PROGRESS)
"""What the broker answers an offset commit without a member id while the group has members (measured on
Apache Kafka 4.1: UNKNOWN_MEMBER_ID, for groups on the classic and on the consumer protocol alike)."""


def describe_group(admin: Any, group: str, timeout: float) -> tuple[GroupState, tuple[Member, ...]]:
    """The group's state and members as the coordinator reports them now.

    Read through the client's offset reader (a child process), never this process's AdminClient: librdkafka's
    admin coordinator lookup can abort the process while a broker restarts (lagbot.engine.offset_reader).
    """
    described = offset_reader(admin).read([group], timeout)[group].described
    if isinstance(described, str):
        raise KafkaActionError(wording.kafka_action_failed(wording.doing_describe(group), described))
    return described.state, described.members


def committed_offsets(
    admin: Any, group: str, partitions: Iterable[TopicPartition], timeout: float
) -> dict[TopicPartition, int | None]:
    """The group's committed offset of each partition; None where nothing is committed.

    Read through the client's offset reader (a child process, `lagbot.engine.offset_reader`), never this process's
    AdminClient: a coordinator error on that request crashes librdkafka.
    """
    answer = offset_reader(admin).fetch({group: list(partitions)}, timeout)[group]
    if isinstance(answer, str):
        raise KafkaActionError(wording.kafka_action_failed(wording.doing_fetch_offsets(group), answer))
    return {(c.topic, c.partition): c.offset for c in answer}


def list_offsets(
    admin: Any, partitions: Iterable[TopicPartition], spec: Any, timeout: float
) -> dict[TopicPartition, int]:
    """One batched ListOffsets round: `spec` is OffsetSpec.latest(), .earliest() or .for_timestamp(ms)."""
    request = {KafkaTopicPartition(t, p): spec for t, p in partitions}
    if not request:
        return {}
    futures = admin.list_offsets(request, request_timeout=timeout)
    wait(list(futures.values()), timeout=timeout + 1.0)
    offsets: dict[TopicPartition, int] = {}
    for tp, future in futures.items():
        offsets[(tp.topic, tp.partition)] = _result(
            future, 0, wording.doing_list_offsets(tp.topic, tp.partition)
        ).offset
    return offsets


def log_bounds(
    admin: Any, partitions: Iterable[TopicPartition], timeout: float
) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int]]:
    """(log start, log end) of each partition."""
    wanted = list(partitions)
    return (
        list_offsets(admin, wanted, OffsetSpec.earliest(), timeout),
        list_offsets(admin, wanted, OffsetSpec.latest(), timeout),
    )


def offsets_for_time(
    admin: Any, partitions: Iterable[TopicPartition], at_ms: int, timeout: float
) -> dict[TopicPartition, int]:
    """The offset of the first message at or after `at_ms` per partition; NO_OFFSET where there is none."""
    return list_offsets(admin, partitions, OffsetSpec.for_timestamp(at_ms), timeout)


def alter_offsets(admin: Any, group: str, offsets: Mapping[TopicPartition, int], timeout: float) -> None:
    """Commit `offsets` for the group (AlterConsumerGroupOffsets). The caller checks the group is inactive.

    Sent through the client's offset reader (a child process, `lagbot.engine.offset_reader`), never this process's
    AdminClient: the request goes to the group's coordinator through the admin coordinator lookup that a broker
    restart can crash.

    Raises:
        GroupActiveError: the broker refused because the group has live members (one joined since the check).
        AlterOutcomeUnknown: no answer came (the child crashed or timed out): the offsets may or may not be stored.
        KafkaActionError: any other failure.
    """
    doing = wording.doing_alter_offsets(group)
    answer = offset_reader(admin).alter(group, offsets, timeout)
    if isinstance(answer, AlterFailed):
        if answer.unknown:
            raise AlterOutcomeUnknown(wording.kafka_action_unknown(doing, answer.problem))
        if answer.error_code in _MEMBER_ERRORS:
            raise GroupActiveError(wording.broker_refused_active_group(group), offsets)
        raise KafkaActionError(wording.kafka_action_failed(doing, answer.problem))
    failed = [a for a in answer if a.error_code is not None]
    if failed and all(a.error_code in _MEMBER_ERRORS for a in failed):
        raise GroupActiveError(wording.broker_refused_active_group(group), [(a.topic, a.partition) for a in failed])
    if failed:
        first = failed[0]
        raise KafkaActionError(wording.kafka_action_failed(doing, f"{first.topic}-{first.partition}: {first.error}"))


def _result(future: Future[Any], timeout: float, doing: str) -> Any:
    wait([future], timeout=timeout + 1.0)
    if not future.done():
        raise KafkaActionError(wording.kafka_action_failed(doing, messages.timed_out(timeout)))
    exc = future.exception(0)
    if exc is not None:
        problem = exc.args[0].str() if isinstance(exc, KafkaException) and exc.args else str(exc)
        raise KafkaActionError(wording.kafka_action_failed(doing, problem or type(exc).__name__))
    return future.result(0)
