"""Causes that need a live group, diagnosed from Apache Kafka: owners, idle members, unassigned partitions,
the partition ceiling and rebalance churn.

Members are real consumers (tests/support/apache_groups.py); who owns what is cross-checked with
Apache Kafka's own ConsumerGroupCommand, and every offset is produced and committed by the test.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka.admin import NewPartitions
from rich.console import Console

from lagbot.cli import wording as cli_wording
from lagbot.cli.terminal import print_report
from lagbot.core import messages
from lagbot.core.config import build_settings
from lagbot.core.model import GroupState, GroupVerdict, Status
from lagbot.engine import wording as engine_wording
from lagbot.engine.check import Checker
from lagbot.engine.window import MemoryWindowStore
from lagbot.service.remedies import remedy
from lagbot.slack.render import table_rows
from tests.conftest import Kafka, Names
from tests.support.apache_groups import describe_members, describe_rows, describe_state, live_group

pytestmark = pytest.mark.integration

HOST = "/127.0.0.1"


def checker(kafka: Kafka, group: str) -> Checker:
    settings = build_settings(
        {
            "clusters": [
                {
                    "name": "apache",
                    "bootstrap_servers": kafka.bootstrap,
                    "groups": {"include": [group]},
                    "request_timeout": 5,
                }
            ],
            "evaluation": {"min_samples": 3, "min_span": 2},
        },
        source="test",
    )
    return Checker(settings, MemoryWindowStore(samples=10))


def cause(verdict: GroupVerdict, kind: str) -> Any:
    found = [c for c in verdict.causes if c.kind == kind]
    assert len(found) == 1, [c.kind for c in verdict.causes]
    return found[0]


def terminal(report: Any) -> list[str]:
    out = io.StringIO()
    print_report(report, Console(file=out, width=1000, no_color=True))  # one line per cause, however long
    return out.getvalue().splitlines()


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_a_stuck_member_is_named_by_member_id_client_id_and_host(kafka: Kafka, names: Names, protocol: str) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 2)
    kafka.produce(topic, 0, 30)
    kafka.produce(topic, 1, 30)
    with live_group(kafka.bootstrap, group, [topic], protocol=protocol) as live:
        live.join("owners-a")
        live.join("owners-b")
        owned = live.wait_spread(2, owning=2)
        # The member that owns partition 0 stops committing at 10 (20 waiting); the other is caught up.
        [sc] = [client for client, tps in owned.items() if tps == [(topic, 0)]]
        [fc] = [client for client, tps in owned.items() if tps == [(topic, 1)]]
        live.commit(sc, {(topic, 0): 10})
        live.commit(fc, {(topic, 1): 30})
        report = checker(kafka, group).run(3, 1.0)
        tool = describe_rows(kafka.bootstrap, group)

    [a, b] = [row[5] for row in tool]
    assert tool == [(topic, 0, 10, 30, 20, a, HOST, sc), (topic, 1, 30, 30, 0, b, HOST, fc)]
    [verdict] = report.verdicts
    assert (verdict.state, verdict.status) == (GroupState.STABLE, Status.STALL)
    owners = {m.client_id: m for m in verdict.members}
    assert [(p.status, p.owner) for p in verdict.partitions] == [(Status.STALL, owners[sc]), (Status.OK, owners[fc])]
    assert len(verdict.members) == 2 and {c: m.owner_json() for c, m in owners.items()} == {
        sc: {"member_id": a, "client_id": sc, "host": HOST},
        fc: {"member_id": b, "client_id": fc, "host": HOST},
    }

    stuck = cause(verdict, "stuck_consumer")
    # Its only partition is stuck while its sibling commits: the member itself is named as stuck.
    assert stuck.explanation == (
        f"partition 0 of {topic}: committed offset not moving while 20 messages wait; owner: {sc}@{HOST} (member {a})"
        f"; every partition of {sc}@{HOST} (member {a}) is stuck: that member is stuck, restart it"
    )
    owner = {"member_id": a, "client_id": sc, "host": HOST}
    assert stuck.evidence == {"partitions": [0], "owners": [owner], "stuck_members": [owner]}
    assert remedy(stuck) == "restart"

    [stalled, fine] = verdict.partitions
    stalled_s = messages.lag_seconds_cell(stalled.lag_seconds, True)
    fine_s = messages.lag_seconds_cell(fine.lag_seconds, False)
    assert table_rows(verdict) == [
        [f"{topic}/0", "10", "30", "20", stalled_s, f"{sc}@{HOST} (member {a})", "STALL"],
        [f"{topic}/1", "30", "30", "0", fine_s, f"{fc}@{HOST} (member {b})", "OK"],
    ]
    assert stalled.lag_seconds_lower_bound and not fine.lag_seconds_lower_bound
    printed = terminal(report)
    assert cli_wording.cli_cause_line(stuck, "restart") in printed
    assert [line.split()[:9] for line in printed if line.split()[:2] == [group, topic]] == [
        [group, topic, "0", "10", "30", "20", a, HOST, sc],
        [group, topic, "1", "30", "30", "0", b, HOST, fc],
    ]


@pytest.mark.parametrize("behind", [False, True], ids=["caught-up", "behind"])
def test_idle_members_on_the_consumer_protocol(kafka: Kafka, names: Names, behind: bool) -> None:
    # More members than partitions is no trouble in itself: a group that has read everything gets no cause. A group
    # that is behind (here its offsets are stuck at 2 of 8) is told that its idle members cannot help, and never
    # offered to scale: more members would own nothing too.
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 2)
    kafka.produce(topic, 0, 8)
    kafka.produce(topic, 1, 8)
    with live_group(kafka.bootstrap, group, [topic], protocol="consumer") as live:
        for client in ("idle-a", "idle-b", "idle-c"):
            live.join(client)
        owned = live.wait_spread(2, owning=2)
        for client, tps in owned.items():
            if tps:
                live.commit(client, {tp: 2 if behind else 8 for tp in tps})
        report = checker(kafka, group).run(3, 1.0)
        tool = describe_members(kafka.bootstrap, group)
        state = describe_state(kafka.bootstrap, group)

    [idle] = [client for client, tps in owned.items() if not tps]
    assert state == ("Stable", 3)
    assert sorted((client, count) for _, _, client, count in tool) == sorted(
        (client, len(tps)) for client, tps in owned.items()
    )
    [verdict] = report.verdicts
    assert verdict.state is GroupState.STABLE and len(verdict.members) == 3
    if not behind:
        assert (verdict.status, verdict.total_lag, verdict.causes) == (Status.OK, 0, ())
        return
    assert (verdict.status, verdict.total_lag) == (Status.STALL, 12)
    found = cause(verdict, "idle_members")
    assert found.explanation == (
        f"3 members for 2 partitions: 1 own nothing ({idle}); more members cannot read faster (one member per"
        " partition at most)"
    )
    assert found.evidence == {"members": 3, "partitions": 2, "idle": [idle]}
    assert remedy(found) is None
    assert "scale" not in [remedy(c) for c in verdict.causes]


def test_a_partition_added_after_the_assignment_is_unassigned(kafka: Kafka, names: Names) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 2)
    with live_group(kafka.bootstrap, group, [topic]) as live:
        # The classic protocol's leader notices new partitions only on its next metadata refresh (1 h here).
        for client in ("grow-a", "grow-b"):
            live.join(client, **{"topic.metadata.refresh.interval.ms": 3_600_000})
        live.wait_spread(2, owning=2)
        for future in kafka.admin.create_partitions([NewPartitions(topic, 3)]).values():
            future.result(15)
        kafka.produce(topic, 2, 6)
        report = checker(kafka, group).run(1, 0)
        tool = describe_rows(kafka.bootstrap, group)
        assert live.assignments() == {"grow-a": [(topic, 0)], "grow-b": [(topic, 1)]}

    assert [(row[1], row[7]) for row in tool] == [(0, "grow-a"), (1, "grow-b")]  # nobody has partition 2
    [verdict] = report.verdicts
    assert verdict.state is GroupState.STABLE
    assert [(p.partition, p.log_end, p.owner.client_id if p.owner else None) for p in verdict.partitions] == [
        (0, 0, "grow-a"),
        (1, 0, "grow-b"),
        (2, 6, None),
    ]
    found = cause(verdict, "unassigned_partitions")
    assert found.explanation == f"the group is Stable with 2 member(s) but nobody owns {topic}-2"
    assert found.evidence == {"partitions": [[topic, 2]]}


class Background:
    """Bounded loops in threads; `stop` ends and joins them (before what they use is closed)."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def __call__(self, step: Any, every: float, times: int) -> None:
        def loop() -> None:
            for _ in range(times):
                if self._stop.is_set():
                    return
                step()
                self._stop.wait(every)

        thread = threading.Thread(target=loop, daemon=True)
        thread.start()
        self._threads.append(thread)

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)


@pytest.fixture
def background() -> Iterator[Background]:
    """Loops stopped and joined at teardown at the latest."""
    loops = Background()
    yield loops
    loops.stop()


def test_partition_ceiling_with_one_member_per_partition(kafka: Kafka, names: Names, background: Background) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 2)
    with live_group(kafka.bootstrap, group, [topic]) as live:
        live.join("ceiling-a")
        live.join("ceiling-b")
        assert live.wait_spread(2, owning=2) == {"ceiling-a": [(topic, 0)], "ceiling-b": [(topic, 1)]}
        done = {0: 0, 1: 0}

        def consume_slowly() -> None:  # each member commits 2 messages a tick: 10 msg/s a partition
            for partition, client in ((0, "ceiling-a"), (1, "ceiling-b")):
                done[partition] += 2
                live.commit(client, {(topic, partition): done[partition]})

        background(lambda: [kafka.produce(topic, p, 20) for p in (0, 1)], 0.2, 150)  # ~100 msg/s a partition
        background(consume_slowly, 0.2, 150)
        # 7.5 s of samples: the lag must rise by more than 5 s of writes (auto-commit's cadence) before lagbot calls a
        # deficit that began with the check (lagbot.engine.rules `outgrew_commits`); a 3 s window cannot tell it
        # from a consumer that commits every 5 s.
        report = checker(kafka, group).run(4, 2.5)
        members = describe_members(kafka.bootstrap, group)
        background.stop()  # no commit after the group's consumers close

    assert [(client, count) for _, _, client, count in members] == [("ceiling-a", 1), ("ceiling-b", 1)]
    [verdict] = report.verdicts
    assert verdict.trend == "growing" and len(verdict.members) == len(verdict.partitions) == 2
    assert verdict.produce_rate is not None and verdict.consume_rate is not None
    assert 0 < verdict.consume_rate < verdict.produce_rate
    found = cause(verdict, "partition_ceiling")
    assert found.explanation == engine_wording.cause_ceiling(verdict.produce_rate, verdict.consume_rate, 2)
    assert found.evidence == {
        "produce_rate": round(verdict.produce_rate, 2),
        "consume_rate": round(verdict.consume_rate, 2),
        "partitions": 2,
    }
    assert remedy(found) == "drain"
    assert "throughput_deficit" not in [c.kind for c in verdict.causes]  # scaling cannot help here


def test_members_joining_and_leaving_is_rebalance_churn(kafka: Kafka, names: Names) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 2)
    kafka.produce(topic, 0, 5)
    check = checker(kafka, group)
    seen: list[tuple[float, tuple[str, ...]]] = []

    def sample() -> dict[str, Any]:
        snapshots = check.sample()
        observed = snapshots["apache"].groups[group]
        assert observed.state is GroupState.STABLE
        seen.append((snapshots["apache"].taken_at, tuple(sorted(m.client_id for m in observed.members))))
        return snapshots

    with live_group(kafka.bootstrap, group, [topic]) as live:
        live.join("churn-a")
        live.wait_spread(2, owning=1)
        sample()
        live.join("churn-b")
        live.wait_spread(2, owning=2)
        sample()
        both = describe_members(kafka.bootstrap, group)
        live.leave("churn-b")
        live.wait_spread(2, owning=1)
        report = check.evaluate(sample())

    assert [clients for _, clients in seen] == [("churn-a",), ("churn-a", "churn-b"), ("churn-a",)]
    assert [client for _, _, client, _ in both] == ["churn-a", "churn-b"]
    [verdict] = report.verdicts
    found = cause(verdict, "rebalance_churn")
    assert found.evidence == {
        "changes": 2,
        "rebalancing_samples": 0,
        "samples": 3,
        "changed_at": [seen[1][0], seen[2][0]],  # the samples that saw churn-b join, then leave
        "rebalancing_at": [],
    }
    assert found.explanation == engine_wording.cause_churn(2, 0, 3, seen[-1][0] - seen[0][0])
    assert remedy(found) is None
