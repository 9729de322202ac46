"""`lagbot check --json` against Apache Kafka's own ConsumerGroupCommand, row by row, on one broker.

Three groups: two live members on the classic protocol, one member on the new consumer protocol
(KIP-848, `group.protocol=consumer`) and an Empty group with one never-committed partition. Offsets, lag,
owners (member id, host, client id), state and member count must be what Apache Kafka's tool prints.
Share groups (KIP-932): what the client lists of them is asserted here, since that decides what lagbot can show.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from typing import Any

import pytest
from confluent_kafka import ConsumerGroupType, ShareConsumer

from lagbot.devkit.apache_kafka import ApacheKafka, tool_argv
from tests.conftest import Kafka, Names
from tests.support.apache_groups import (
    describe_members,
    describe_rows,
    describe_state,
    live_group,
    report_rows,
)
from tests.support.bot_process import wait_for

pytestmark = pytest.mark.integration


def check_json(bootstrap: str, group_pattern: str) -> tuple[int, dict[str, Any]]:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "lagbot.cli.main",
            "check",
            "-b",
            bootstrap,
            "--group",
            group_pattern,
            "--samples",
            "1",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.stdout, result.stderr
    return result.returncode, json.loads(result.stdout)


def test_check_json_equals_consumer_group_command_row_by_row(kafka: Kafka, names: Names) -> None:
    classic_topic, new_topic, empty_topic = names("topic"), names("topic"), names("topic")
    classic, new, empty = names("classic"), names("consumer"), names("empty")
    kafka.create_topic(classic_topic, 3)
    kafka.create_topic(new_topic, 2)
    kafka.create_topic(empty_topic, 3)
    for partition, count in enumerate((10, 11, 12)):
        kafka.produce(classic_topic, partition, count)
    for partition, count in enumerate((7, 9)):
        kafka.produce(new_topic, partition, count)
    for partition, count in enumerate((20, 30, 40)):
        kafka.produce(empty_topic, partition, count)
    kafka.commit(empty, {(empty_topic, 0): 5, (empty_topic, 1): 30})  # partition 2: never committed

    with (
        live_group(kafka.bootstrap, classic, [classic_topic]) as two,
        live_group(kafka.bootstrap, new, [new_topic], protocol="consumer") as one,
    ):
        two.join("parity-classic-a")
        two.join("parity-classic-b")
        owned = two.wait_spread(3, owning=2)
        # The range assignor, members sorted by id (client id first): a owns 0 and 1, b owns 2.
        assert owned == {
            "parity-classic-a": [(classic_topic, 0), (classic_topic, 1)],
            "parity-classic-b": [(classic_topic, 2)],
        }
        two.commit("parity-classic-a", {(classic_topic, 0): 4})  # partition 1: assigned, never committed
        two.commit("parity-classic-b", {(classic_topic, 2): 12})
        one.join("parity-new")
        assert one.wait_spread(2, owning=1) == {"parity-new": [(new_topic, 0), (new_topic, 1)]}
        one.commit("parity-new", {(new_topic, 0): 3})

        code, document = check_json(kafka.bootstrap, f"{classic}|{new}|{empty}")
        tool = {g: describe_rows(kafka.bootstrap, g) for g in (classic, new, empty)}
        states = {g: describe_state(kafka.bootstrap, g) for g in (classic, new, empty)}
        members = {g: describe_members(kafka.bootstrap, g) for g in (classic, new)}

    assert code == 0
    reported = {g["group"]: g for g in document["groups"]}
    assert sorted(reported) == sorted([classic, new, empty])
    assert all(g["error"] is None for g in reported.values())

    # Live groups: every row equal, never-committed assigned partitions included ('-' on both sides).
    for group in (classic, new):
        assert report_rows(reported[group]) == tool[group]
        assert (reported[group]["state"], len(reported[group]["members"])) == states[group]
    [a, b] = members[classic]
    assert tool[classic] == [
        (classic_topic, 0, 4, 10, 6, a[0], "/127.0.0.1", "parity-classic-a"),
        (classic_topic, 1, None, 11, None, a[0], "/127.0.0.1", "parity-classic-a"),
        (classic_topic, 2, 12, 12, 0, b[0], "/127.0.0.1", "parity-classic-b"),
    ]
    assert states[classic] == ("Stable", 2) and (a[3], b[3]) == (2, 1)
    assert a[0].startswith("parity-classic-a-") and b[0].startswith("parity-classic-b-")
    [n] = members[new]
    assert tool[new] == [
        (new_topic, 0, 3, 7, 4, n[0], "/127.0.0.1", "parity-new"),
        (new_topic, 1, None, 9, None, n[0], "/127.0.0.1", "parity-new"),
    ]
    assert states[new] == ("Stable", 1) and n[3] == 2
    assert sorted(reported[classic]["members"], key=lambda m: m["client_id"]) == [
        {"member_id": m[0], "client_id": m[2], "host": m[1]} for m in members[classic]
    ]
    assert reported[new]["members"] == [{"member_id": n[0], "client_id": "parity-new", "host": "/127.0.0.1"}]

    # The Empty group: Apache's tool lists only committed partitions; lagbot adds the never-committed one
    # of the same topic with its lag unknown (null), never a made-up number.
    assert tool[empty] == [
        (empty_topic, 0, 5, 20, 15, None, None, None),
        (empty_topic, 1, 30, 30, 0, None, None, None),
    ]
    assert report_rows(reported[empty]) == [*tool[empty], (empty_topic, 2, None, 40, None, None, None, None)]
    assert states[empty] == ("Empty", 0)
    assert (reported[empty]["state"], reported[empty]["members"]) == ("Empty", [])

    # Judged alike: the same fields from the same pipeline, whatever the protocol.
    assert [reported[g]["total_lag"] for g in (classic, new, empty)] == [6, 4, 15]
    assert [reported[g]["status"] for g in (classic, new, empty)] == ["OK", "OK", "OK"]


def test_a_consumer_protocol_group_taking_on_a_new_assignment_is_reconciling_and_active(
    kafka: Kafka, names: Names
) -> None:
    topic, group = names("topic"), names("consumer")
    kafka.create_topic(topic, 2)
    kafka.produce(topic, 0, 9)
    kafka.produce(topic, 1, 4)
    with live_group(kafka.bootstrap, group, [topic], protocol="consumer") as live:
        live.join("reconcile-a")
        live.wait_spread(2, owning=1)
        live.commit("reconcile-a", {(topic, 0): 5})
        # a stops polling: it keeps heartbeating but never acknowledges giving a partition to b.
        live.pause("reconcile-a")
        live.join("reconcile-b")
        wait_for("the broker to say Reconciling", lambda: describe_state(kafka.bootstrap, group) == ("Reconciling", 2))
        code, document = check_json(kafka.bootstrap, group)
        tool = describe_rows(kafka.bootstrap, group)
        state = describe_state(kafka.bootstrap, group)
        members = describe_members(kafka.bootstrap, group)

    assert code == 0
    [reported] = document["groups"]
    # librdkafka reports Assigning and Reconciling as an unknown state; lagbot names it and counts it active.
    assert (reported["state"], len(reported["members"])) == state == ("Reconciling", 2)
    assert sorted((m["member_id"], m["host"], m["client_id"]) for m in reported["members"]) == sorted(
        (m[0], m[1], m[2]) for m in members
    )
    a = {m[2]: m[0] for m in members}["reconcile-a"]
    assert tool[0] == (topic, 0, 5, 9, 4, a, "/127.0.0.1", "reconcile-a")
    assert [row for row in report_rows(reported) if row[5]] == [row for row in tool if row[5]]
    assert [row[:5] for row in report_rows(reported)] == [(topic, 0, 5, 9, 4), (topic, 1, None, 4, None)]


def groups_tool(bootstrap: str) -> dict[str, str]:
    """Apache Kafka's GroupsCommand `--list`: every group of every type (classic, consumer, share, ...)."""
    argv = tool_argv("org.apache.kafka.tools.GroupsCommand", "--bootstrap-server", bootstrap, "--list")
    completed = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert completed.returncode == 0, completed.stderr
    # Group names are anyone's: a name with a space or a newline (the hostile-names fuzz leaves such groups on the
    # shared broker) splits its line. The groups this test names have neither; a line of one cell is such a piece.
    rows = (line.split() for line in completed.stdout.splitlines()[1:])
    return {cells[0]: cells[1] for cells in rows if len(cells) >= 2}


def enable_share_groups(broker: ApacheKafka) -> None:
    """Share groups are off by default in Apache Kafka 4.1: finalise the `share.version=1` feature (cluster-wide)."""
    argv = tool_argv("org.apache.kafka.tools.FeatureCommand")
    completed = subprocess.run(
        [*argv, "--bootstrap-server", broker.bootstrap, "upgrade", "--feature", "share.version=1"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr


def test_a_share_group_is_not_listed_by_the_client_and_lagbot_judges_the_rest(
    broker: ApacheKafka, kafka: Kafka, names: Names
) -> None:
    topic, share, classic = names("topic"), names("share"), names("classic")
    kafka.create_topic(topic, 1)
    kafka.produce(topic, 0, 5)
    kafka.commit(classic, {(topic, 0): 2})
    enable_share_groups(broker)
    member = ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": share, "log_level": 0})
    member.subscribe([topic])
    stop = threading.Event()
    # The member polls all along, as a share consumer does (it heartbeats and stays in its group), while each probe
    # runs Apache Kafka's tool, a JVM of a few seconds each on two busy cores.

    def keep_polling() -> None:
        while not stop.is_set():
            member.poll(0.2)

    polling = threading.Thread(target=keep_polling, daemon=True)
    polling.start()
    try:
        wait_for(
            "the broker to list the share group",
            lambda: groups_tool(broker.bootstrap).get(share) == "Share",
            timeout=180,
            every=1,
        )
        listed = kafka.admin.list_consumer_groups(request_timeout=10).result(15)
        code, document = check_json(broker.bootstrap, f"{share}|{classic}")
    finally:
        stop.set()
        polling.join(30)
        member.close()

    # confluent-kafka (librdkafka) lists classic and consumer groups only; its group types have no share value.
    assert [t.name for t in ConsumerGroupType] == ["UNKNOWN", "CONSUMER", "CLASSIC"]
    assert listed.errors == []
    assert share not in {g.group_id for g in listed.valid}
    assert {g.group_id: g.type for g in listed.valid if g.group_id == classic} == {classic: ConsumerGroupType.CLASSIC}
    # So lagbot cannot name the share group; it judges the other group and neither errs nor crashes.
    assert code == 0, document
    assert [(g["group"], g["state"], g["total_lag"], g["error"]) for g in document["groups"]] == [
        (classic, "Empty", 3, None)
    ], document
    assert document["clusters"] == [{"cluster": "default", "ok": True, "error": None}]
