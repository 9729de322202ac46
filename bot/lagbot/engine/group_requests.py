"""The Kafka requests of one read or one commit of consumer groups, sent through an AdminClient, and their answers as
JSON-ready documents: what the offset reader's child sends (lagbot.engine.offset_reader), and what its in-process form
sends for `lagbot check`.

A request document is `{"timeout", "groups": {group: partitions or None}, "describe": [group, ...]}` (OffsetFetch of
every group, DescribeGroups of those named) or `{"timeout", "alter": {"group", "offsets"}}` (AlterConsumerGroupOffsets).
`send` sends its Kafka requests at once and returns the call that waits for their answers: the requests of several
documents are then in flight together. Loads only the Kafka client and lagbot.core (the child keeps what it imports
for the bot's lifetime).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from concurrent.futures import Future
from typing import Any, TypedDict, final

from lagbot.core import messages
from lagbot.core.model import GroupState, Member

# The documents, as JSON carries them between the bot and the child: a tuple below is a JSON array of those items.


@final
class ReadRequest(TypedDict):
    """OffsetFetch of every group (of its `[topic, partition]`s, or None: every partition it committed), and
    DescribeGroups of those in `describe`."""

    timeout: float
    groups: dict[str, list[tuple[str, int]] | None]
    describe: list[str]


class AlterOffsets(TypedDict):
    group: str
    offsets: list[tuple[str, int, int]]
    """`[topic, partition, offset]` to commit."""


@final
class AlterRequest(TypedDict):
    """AlterConsumerGroupOffsets of one group."""

    timeout: float
    alter: AlterOffsets


Request = ReadRequest | AlterRequest


class DescribedGroup(TypedDict):
    """A group as DescribeGroups reported it: its state's value, `[member id, client id, host, [[topic,
    partition], ...]]` per member, and its assignor."""

    state: str
    members: list[tuple[str, str, str, list[tuple[str, int]]]]
    assignor: str


class GroupDocument(TypedDict, total=False):
    """One group's answer: its `[topic, partition, offset (negative: none), error or None]` rows or the `error` that
    failed them; and when it was described, its description or the `described_error` that failed it."""

    error: str
    offsets: list[tuple[str, int, int, str | None]]
    described: DescribedGroup
    described_error: str


ReadAnswer = dict[str, GroupDocument]
"""Every group's answer to a ReadRequest, by group."""


class AlterAnswer(TypedDict, total=False):
    """The answer to an AlterRequest: `[topic, partition, error code or None, error or None]` per partition, or the
    `error` (and its KafkaError `code`, when it has one) that failed the whole request."""

    altered: list[tuple[str, int, int | None, str | None]]
    error: str
    code: int | None


Answer = ReadAnswer | AlterAnswer


def _error_text(exc: BaseException) -> str:
    error: Any = exc.args[0] if exc.args else None
    if hasattr(error, "str") and hasattr(error, "name"):
        return f"{error.str()} ({error.name()})"
    return str(exc) or type(exc).__name__


def read_request(
    groups: Mapping[str, Sequence[tuple[str, int]] | None], timeout: float, describe: AbstractSet[str]
) -> ReadRequest:
    """OffsetFetch of `groups` (each: its partitions, or None: every partition it committed), DescribeGroups of
    those in `describe`."""
    return {
        "timeout": timeout,
        "describe": [g for g in groups if g in describe],
        "groups": {g: None if tps is None else list(tps) for g, tps in groups.items()},
    }


def alter_request(group: str, offsets: Mapping[tuple[str, int], int], timeout: float) -> AlterRequest:
    """AlterConsumerGroupOffsets of `group` to `offsets`, in partition order."""
    rows = [(t, p, o) for (t, p), o in sorted(offsets.items())]
    return {"timeout": timeout, "alter": {"group": group, "offsets": rows}}


def send(admin: Any, request: Request) -> Callable[[], Answer]:
    """The request's Kafka requests sent; the call returned waits for them and gives the answer. A commit (`alter`)
    is sent and answered at once: it is never asked ahead of another request."""
    if "alter" in request:
        answer = _alter(admin, request["alter"], float(request["timeout"]))
        return lambda: answer
    return _read(admin, request)


def _alter(admin: Any, alter: AlterOffsets, timeout: float) -> AlterAnswer:
    from concurrent.futures import TimeoutError as FuturesTimeout

    from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException
    from confluent_kafka import TopicPartition as KafkaTopicPartition

    group = str(alter["group"])
    request = ConsumerGroupTopicPartitions(group, [KafkaTopicPartition(t, p, o) for t, p, o in alter["offsets"]])
    future = admin.alter_consumer_group_offsets([request], request_timeout=timeout)[group]
    try:
        result = future.result(timeout + 1.0)
    except FuturesTimeout:
        return {"error": messages.timed_out(timeout), "code": None}
    except KafkaException as exc:
        error: Any = exc.args[0] if exc.args else None
        return {"error": _error_text(exc), "code": error.code() if hasattr(error, "code") else None}
    return {
        "altered": [
            (tp.topic, tp.partition, None, None)
            if tp.error is None
            else (tp.topic, tp.partition, tp.error.code(), tp.error.str())
            for tp in result.topic_partitions or ()
        ]
    }


def _read(admin: Any, request: ReadRequest) -> Callable[[], ReadAnswer]:
    """Every group's OffsetFetch, and DescribeGroups of those in `describe`, sent; the call returned waits for their
    answers (within the request's timeout, from when they were sent) and encodes them."""
    from confluent_kafka import ConsumerGroupTopicPartitions
    from confluent_kafka import TopicPartition as KafkaTopicPartition

    timeout = float(request["timeout"])
    deadline = time.monotonic() + timeout + 1.0
    futures: dict[str, Future[Any]] = {}
    for group, partitions in request["groups"].items():
        tps = None if partitions is None else [KafkaTopicPartition(t, p) for t, p in partitions]
        futures[group] = admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group, tps)], request_timeout=timeout
        )[group]
    asked = request["describe"]
    described = admin.describe_consumer_groups(asked, request_timeout=timeout) if asked else {}
    return lambda: _gathered(futures, described, timeout, deadline)


def _gathered(
    futures: Mapping[str, Future[Any]], described: Mapping[str, Future[Any]], timeout: float, deadline: float
) -> ReadAnswer:
    from concurrent.futures import wait

    wait([*futures.values(), *described.values()], timeout=max(0.0, deadline - time.monotonic()))
    answer: ReadAnswer = {}
    for group, future in futures.items():
        problem = _future_problem(future, timeout)
        if problem is not None:
            answer[group] = {"error": problem}
        else:
            answer[group] = {
                "offsets": [
                    (tp.topic, tp.partition, tp.offset, None if tp.error is None else tp.error.str())
                    for tp in future.result().topic_partitions or ()
                ]
            }
        if group in described:
            answer[group].update(_description(described[group], timeout))
    return answer


def _future_problem(future: Future[Any], timeout: float) -> str | None:
    if not future.done():
        return messages.timed_out(timeout)
    exc = future.exception()
    return None if exc is None else _error_text(exc)


def _description(future: Future[Any], timeout: float) -> GroupDocument:
    problem = _future_problem(future, timeout)
    if problem is not None:
        return {"described_error": problem}
    description = future.result()
    members = [_member(m) for m in description.members]
    return {
        "described": {
            "state": described_state(description).value,
            "members": [(m.member_id, m.client_id, m.host, list(m.assignment)) for m in members],
            "assignor": str(description.partition_assignor or ""),
        }
    }


def _member(description: Any) -> Member:
    assignment = description.assignment.topic_partitions if description.assignment else []
    return Member(
        member_id=description.member_id,
        client_id=description.client_id,
        host=description.host,
        assignment=tuple(sorted((tp.topic, tp.partition) for tp in assignment)),
    )


def _state(state: Any) -> GroupState:
    names = {
        "STABLE": GroupState.STABLE,
        "PREPARING_REBALANCING": GroupState.PREPARING_REBALANCE,
        "COMPLETING_REBALANCING": GroupState.COMPLETING_REBALANCE,
        "EMPTY": GroupState.EMPTY,
        "DEAD": GroupState.DEAD,
    }
    return names.get(getattr(state, "name", str(state)).upper(), GroupState.UNKNOWN)


def described_state(description: Any) -> GroupState:
    """The state of a described group; a consumer-protocol (KIP-848) group with members in a state librdkafka
    does not name is reconciling: the broker says Assigning or Reconciling, which librdkafka reports as unknown."""
    from confluent_kafka import ConsumerGroupType

    state = _state(description.state)
    if state is GroupState.UNKNOWN and description.type == ConsumerGroupType.CONSUMER and description.members:
        return GroupState.RECONCILING
    return state
