"""Offset resets against Apache Kafka: the dry-run table from a real check, exact offsets read back,
and a refusal while a real consumer is in the group: lagbot refuses before asking the broker (Apache Kafka
would refuse too, but not every Kafka-compatible broker does; the broker's own refusal, when a consumer joins
after lagbot's check, is tests/remediations/test_reset_refused_by_broker.py).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import pytest

from lagbot.core.config import build_settings
from lagbot.core.model import GroupVerdict
from lagbot.engine.check import Checker
from lagbot.engine.window import MemoryWindowStore
from lagbot.remediations.base import ExecutionContext, Plan
from lagbot.remediations.reset_offsets.remediation import ResetOffsets, ResetParams, resolve_times
from tests.conftest import Kafka, Names
from tests.support.group_commits import committed

pytestmark = pytest.mark.integration
NOW = 1_800_000_000.0


def check(kafka: Kafka, group: str) -> GroupVerdict:
    """The group's verdict from one real check cycle (collector + evaluator)."""
    settings = build_settings(
        {"clusters": [{"name": "apache", "bootstrap_servers": kafka.bootstrap, "groups": {"include": [group]}}]},
        source="test",
    )
    [verdict] = Checker(settings, MemoryWindowStore(samples=5, ttl=60)).run(1, 0).verdicts
    return verdict


def rows(table: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(r["partition"], r["before"], r["after"], r["skipped"], r["reread"]) for r in table]


def execute(kafka: Kafka, plan: Plan) -> Any:
    lines: list[str] = []
    outcome = ResetOffsets().execute(plan, ExecutionContext(admin=kafka.admin, progress=lines.append, timeout=10))
    return outcome, lines


def setup_group(kafka: Kafka, names: Names, counts: dict[int, int], commits: dict[int, int]) -> tuple[str, str]:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, len(counts))
    for partition, n in counts.items():
        if n:
            kafka.produce(topic, partition, n)
    kafka.commit(group, {(topic, p): o for p, o in commits.items()})
    return topic, group


def test_reset_to_latest_dry_run_then_exact_offsets(kafka: Kafka, names: Names) -> None:
    topic, group = setup_group(kafka, names, {0: 10, 1: 6, 2: 4}, {0: 3, 1: 6, 2: 1})
    plan = ResetOffsets().plan(check(kafka, group), ResetParams(mode="latest"), now=NOW)
    assert rows(plan.after["table"]) == [(0, 3, 10, 7, 0), (1, 6, 6, 0, 0), (2, 1, 4, 3, 0)]
    assert plan.confirm is not None and plan.confirm.startswith(
        f"Data loss: resetting {group} to latest skips 10 messages"
    )

    kafka.produce(topic, 0, 2)  # written between the proposal and the approval: the reset goes to the new end
    outcome, lines = execute(kafka, Plan.from_json(plan.to_json()))  # as stored in Redis until approved
    assert outcome.ok, outcome.detail
    assert rows(outcome.data["table"]) == [(0, 3, 12, 9, 0), (1, 6, 6, 0, 0), (2, 1, 4, 3, 0)]
    assert outcome.detail == f"reset 3 partition(s) of {group}: 12 messages skipped, 0 to re-read"
    assert committed(kafka, group, topic, 3) == {0: 12, 1: 6, 2: 4}
    assert lines == [f"resetting 3 partition(s) of {group} ..."]


def test_reset_shift_both_ways_clamped_to_the_log(kafka: Kafka, names: Names) -> None:
    topic, group = setup_group(kafka, names, {0: 10, 1: 10}, {0: 5, 1: 9})
    back = ResetOffsets().plan(check(kafka, group), ResetParams(mode="shift", shift=-7), now=NOW)
    assert rows(back.after["table"]) == [(0, 5, 0, 0, 5), (1, 9, 2, 0, 7)]  # 5 - 7 clamped to the log start
    assert execute(kafka, back)[0].ok
    assert committed(kafka, group, topic, 2) == {0: 0, 1: 2}

    forward = ResetOffsets().plan(check(kafka, group), ResetParams(mode="shift", shift=9), now=NOW)
    assert rows(forward.after["table"]) == [(0, 0, 9, 9, 0), (1, 2, 10, 8, 0)]  # 2 + 9 clamped to the log end
    assert execute(kafka, forward)[0].ok
    assert committed(kafka, group, topic, 2) == {0: 9, 1: 10}


def wait_past(moment: float) -> None:
    deadline = time.monotonic() + 5
    while time.time() < moment and time.monotonic() < deadline:
        time.sleep(0.01)


def test_reset_to_a_datetime(kafka: Kafka, names: Names) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 1)
    kafka.produce(topic, 0, 5)
    # Apache Kafka's ListOffsets by timestamp is exact to the millisecond (the producer stamps each message):
    # the moment is put a few milliseconds after the first five messages and before the next four.
    wait_past(time.time() + 0.005)
    cut = time.time()
    wait_past(cut + 0.005)
    kafka.produce(topic, 0, 4)
    kafka.commit(group, {(topic, 0): 1})

    verdict = check(kafka, group)
    params = ResetParams(mode="datetime", to_datetime=datetime.fromtimestamp(cut, tz=UTC))
    params = resolve_times(params, [p.tp for p in verdict.partitions], kafka.admin, 10)
    assert params.at_time == ((topic, 0, 5),)  # the first message written after the moment
    plan = ResetOffsets().plan(verdict, params, now=NOW)
    assert rows(plan.after["table"]) == [(0, 1, 5, 4, 0)]
    outcome, _ = execute(kafka, plan)
    assert outcome.ok, outcome.detail
    assert rows(outcome.data["table"]) == [(0, 1, 5, 4, 0)]  # looked up again right before altering
    assert committed(kafka, group, topic, 1) == {0: 5}


def test_reset_refused_while_a_consumer_is_active(kafka: Kafka, names: Names) -> None:
    topic, group = setup_group(kafka, names, {0: 10}, {0: 2})
    plan = ResetOffsets().plan(check(kafka, group), ResetParams(mode="latest"), now=NOW)  # proposed while Empty
    consumer = kafka.consumer(group)
    try:
        consumer.subscribe([topic])
        kafka.wait_assigned(consumer)  # the group is Stable now; the consumer commits nothing
        outcome, lines = execute(kafka, plan)
    finally:
        consumer.close()
    assert not outcome.ok
    assert outcome.detail == (
        "pre-flight check failed, nothing changed: the group is Empty (no live consumers): "
        "the group is Stable: stop its consumers first (offsets are only reset on an Empty group)"
    )
    assert lines == []
    assert committed(kafka, group, topic, 1) == {0: 2}


def test_reset_without_an_admin_changes_nothing(kafka: Kafka, names: Names) -> None:
    topic, group = setup_group(kafka, names, {0: 3}, {0: 1})
    plan = ResetOffsets().plan(check(kafka, group), ResetParams(mode="latest"), now=NOW)
    outcome = ResetOffsets().execute(plan, ExecutionContext())
    assert outcome.detail == (
        "pre-flight check failed, nothing changed: the group is Empty (no live consumers): "
        "no Kafka admin client for the group's cluster"
    )
    assert committed(kafka, group, topic, 1) == {0: 1}
