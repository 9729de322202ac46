"""The lag engine against Apache Kafka (and real Redis): exact offsets, statuses and causes.

Every number asserted here was produced and committed by the test through the Kafka protocol and
read back by the collector; nothing is hand-fed to the evaluator.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from lagbot.core.config import build_settings
from lagbot.core.model import GroupState, Severity, Status
from lagbot.engine.check import Checker
from lagbot.engine.collector import collect, make_admin
from lagbot.engine.offset_reader import Described
from lagbot.engine.window import MemoryWindowStore, RedisWindowStore
from lagbot.service.remedies import remedy
from tests.conftest import Kafka, Names
from tests.support.engine_rig import settings_for

pytestmark = pytest.mark.integration


# Fast behaviour judgement for tests: 3 samples over >= 2 s (production default: 10 s).
def lagbot(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run the real CLI in a subprocess, as a user would, its output to a pipe: whole tables. COLUMNS and LINES are
    left out (a library in this process may have put a terminal's size into the C environment the child inherits,
    and `lagbot check` fits its tables to COLUMNS: tests/cli/test_check_terminal.py)."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return subprocess.run(
        [sys.executable, "-m", "lagbot.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=env,
    )


@pytest.fixture
def writer(kafka: Kafka) -> Iterator[Any]:
    """Background writers to one partition, bounded in count and stopped at teardown."""
    stops: list[threading.Event] = []
    threads: list[threading.Thread] = []

    def start(topic: str, partition: int, per_tick: int, ticks: int = 200) -> None:
        stop = threading.Event()

        def loop() -> None:
            for _ in range(ticks):
                if stop.is_set():
                    return
                kafka.produce(topic, partition, per_tick)
                stop.wait(0.1)

        thread = threading.Thread(target=loop, daemon=True)
        thread.start()
        stops.append(stop)
        threads.append(thread)

    yield start
    for stop in stops:
        stop.set()
    for thread in threads:
        thread.join(timeout=30)


# ---------------------------------------------------------------------------------------------------
# Exact offsets
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("isolate", [True, False], ids=["child-process", "in-process"])
def test_collector_reads_exact_committed_log_end_and_unknown_lag(kafka: Kafka, names: Names, isolate: bool) -> None:
    """The same snapshot whether the groups are read from the child process (the bot) or in this process (`lagbot
    check`); only the first starts a child."""
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 3)
    for partition, count in ((0, 10), (1, 20), (2, 30)):
        kafka.produce(topic, partition, count)
    kafka.commit(group, {(topic, 0): 4, (topic, 1): 20})

    settings = settings_for(kafka, group)
    admin = make_admin(settings.clusters[0], isolate_group_reads=isolate)
    snapshot = collect(admin, settings.clusters[0])
    assert (admin.offsets.child_pid is not None) is isolate
    # Listed as an Empty classic group, it was not described: what the broker describes is what was assumed.
    assert admin.offsets.read([group], 10.0)[group].described == Described(GroupState.EMPTY, (), "")
    admin.offsets.close()

    assert snapshot.error is None
    assert list(snapshot.groups) == [group]
    observed = snapshot.groups[group]
    assert observed.state is GroupState.EMPTY
    # Partition 2 has nothing committed: it is listed (its topic is consumed) with None, never -1001.
    assert observed.committed == {(topic, 0): 4, (topic, 1): 20, (topic, 2): None}
    assert {tp: snapshot.log_end[tp] for tp in observed.committed} == {(topic, 0): 10, (topic, 1): 20, (topic, 2): 30}
    assert {tp: snapshot.log_start[tp] for tp in observed.committed} == {(topic, 0): 0, (topic, 1): 0, (topic, 2): 0}
    assert snapshot.partition_counts[topic] == 3


def test_check_json_reports_exact_lag_per_partition(kafka: Kafka, names: Names) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 3)
    for partition, count in ((0, 7), (1, 12), (2, 5)):
        kafka.produce(topic, partition, count)
    kafka.commit(group, {(topic, 0): 2, (topic, 1): 12})

    result = lagbot("check", "--bootstrap", kafka.bootstrap, "--group", group, "--samples", "1", "--json")

    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["clusters"] == [{"cluster": "default", "ok": True, "error": None}]
    [reported] = document["groups"]
    assert (reported["cluster"], reported["group"], reported["state"]) == ("default", group, "Empty")
    assert reported["status"] == "OK" and reported["severity"] == "ok"
    rows = [
        (p["topic"], p["partition"], p["committed"], p["log_end"], p["log_start"], p["lag"])
        for p in reported["partitions"]
    ]
    assert rows == [(topic, 0, 2, 7, 0, 5), (topic, 1, 12, 12, 0, 0), (topic, 2, None, 5, 0, None)]
    assert reported["total_lag"] == 5
    # One sample: lag in seconds is only known where the partition is caught up.
    assert [p["lag_seconds"] for p in reported["partitions"]] == [None, 0.0, None]
    # The broker's time index cannot help: every message is younger than the shortest horizon (1 min).
    assert [p["lag_seconds_method"] for p in reported["partitions"]] == [None, "window", None]
    # The group is not "0 s behind": its lagging partitions' figures are unknown, so its own is too.
    assert reported["lag_seconds"] is None
    assert all(p["owner"] is None for p in reported["partitions"])
    assert set(reported) >= {"cluster", "group", "state", "status", "severity", "partitions", "causes"}


def test_check_verbose_logs_each_snapshot_as_it_is_taken_and_its_json_stays_whole(kafka: Kafka, names: Names) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 1)
    kafka.produce(topic, 0, 9)
    kafka.commit(group, {(topic, 0): 4})

    result = lagbot("check", "-b", kafka.bootstrap, "-g", group, "-n", "3", "--every", "0.2", "--json", "-v")

    assert result.returncode == 0, result.stderr
    [reported] = json.loads(result.stdout)["groups"]
    assert reported["total_lag"] == 5
    records = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    taken = [(r["sample"], r["samples"], r["clusters"], r["cluster_errors"]) for r in records
             if r["msg"] == "snapshot taken"]  # fmt: skip
    assert taken == [(1, 3, 1, 0), (2, 3, 1, 0), (3, 3, 1, 0)]
    quiet = lagbot("check", "-b", kafka.bootstrap, "-g", group, "-n", "2", "--every", "0.2", "--json")
    assert quiet.returncode == 0 and "snapshot taken" not in quiet.stderr


def test_check_table_has_the_describe_columns(kafka: Kafka, names: Names) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 1)
    kafka.produce(topic, 0, 3)
    kafka.commit(group, {(topic, 0): 1})

    result = lagbot("check", "--bootstrap", kafka.bootstrap, "--group", group, "--samples", "1")

    assert result.returncode == 0, result.stderr
    header = next(line for line in result.stdout.splitlines() if line.startswith("GROUP"))
    assert header.split() == [
        "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
        "CONSUMER-ID", "HOST", "CLIENT-ID", "STATUS", "LAG-SECONDS",
    ]  # fmt: skip
    row = next(line for line in result.stdout.splitlines() if line.split()[:2] == [group, topic])
    assert row.split()[:6] == [group, topic, "0", "1", "3", "2"]


# ---------------------------------------------------------------------------------------------------
# Behaviour over a window: healthy, hot partition, stuck consumer, no active members
# ---------------------------------------------------------------------------------------------------


def test_healthy_group_is_ok_with_no_causes(kafka: Kafka, names: Names) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 2)
    kafka.produce(topic, 0, 50)
    kafka.produce(topic, 1, 50)
    consumer = kafka.consumer(group, **{"client.id": "healthy-1"})
    consumer.subscribe([topic])
    try:
        read = len(kafka.wait_assigned(consumer))
        deadline = time.monotonic() + 30
        while read < 100 and time.monotonic() < deadline:
            read += len(consumer.consume(100, 0.5))
        consumer.commit(asynchronous=False)
        assert read == 100

        report = Checker(settings_for(kafka, group), MemoryWindowStore(samples=10)).run(3, 1.0)
    finally:
        consumer.close()

    [verdict] = report.verdicts
    assert verdict.status is Status.OK
    assert verdict.severity is Severity.OK
    assert verdict.total_lag == 0
    assert verdict.causes == ()
    assert [(p.committed, p.log_end, p.lag, p.lag_seconds) for p in verdict.partitions] == [
        (50, 50, 0, 0.0),
        (50, 50, 0, 0.0),
    ]


def test_hot_partition_with_key_skew(kafka: Kafka, names: Names, writer: Any) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 3)
    for partition, count in ((0, 100), (1, 2_000), (2, 100)):
        kafka.produce(topic, partition, count)
    kafka.commit(group, {(topic, 0): 100, (topic, 1): 100, (topic, 2): 90})
    writer(topic, 1, per_tick=20)  # only partition 1 keeps being written: key skew

    report = Checker(settings_for(kafka, group), MemoryWindowStore(samples=10)).run(4, 1.0)

    [verdict] = report.verdicts
    hot = next(c for c in verdict.causes if c.kind == "hot_partition")
    assert hot.evidence["partition"] == 1
    assert hot.evidence["why"] == "key_skew"
    assert float(str(hot.evidence["lag_share"])) >= 0.99
    assert "partition 1 of " + topic in hot.explanation
    assert remedy(hot) == "drain"
    p1 = verdict.partitions[1]
    assert p1.produce_rate is not None and p1.produce_rate > 50
    assert verdict.partitions[0].lag == 0 and verdict.partitions[2].lag == 10


def test_stuck_consumer_is_stalled(kafka: Kafka, names: Names, writer: Any) -> None:
    """A live member that stopped committing: the group is Stable, offsets do not move, lag grows."""
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 2)
    kafka.produce(topic, 0, 30)
    kafka.produce(topic, 1, 30)
    consumer = kafka.consumer(group, **{"client.id": "stuck-worker"})
    consumer.subscribe([topic])
    try:
        kafka.wait_assigned(consumer)
        consumer.consume(5, 1.0)
        from confluent_kafka import TopicPartition

        consumer.commit(offsets=[TopicPartition(topic, 0, 10), TopicPartition(topic, 1, 10)], asynchronous=False)
        writer(topic, 0, per_tick=5)
        stop = threading.Event()

        def heartbeat() -> None:  # stays in the group (polls) but never commits again: stuck
            while not stop.is_set():
                consumer.poll(0.1)

        beating = threading.Thread(target=heartbeat, daemon=True)
        beating.start()
        try:
            report = Checker(settings_for(kafka, group), MemoryWindowStore(samples=10)).run(4, 1.0)
        finally:
            stop.set()
            beating.join(timeout=10)
    finally:
        consumer.close()

    [verdict] = report.verdicts
    assert verdict.state is GroupState.STABLE
    assert [p.status for p in verdict.partitions] == [Status.STALL, Status.STALL]
    assert [p.committed for p in verdict.partitions] == [10, 10]
    assert verdict.status is Status.STALL
    stuck = next(c for c in verdict.causes if c.kind == "stuck_consumer")
    assert stuck.evidence["partitions"] == [0, 1]
    assert remedy(stuck) == "restart"


def test_no_active_members_while_lag_grows(kafka: Kafka, names: Names, writer: Any) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 2)
    kafka.produce(topic, 0, 40)
    kafka.produce(topic, 1, 40)
    kafka.commit(group, {(topic, 0): 10, (topic, 1): 40})
    writer(topic, 0, per_tick=10)

    report = Checker(settings_for(kafka, group), MemoryWindowStore(samples=10)).run(4, 1.0)

    [verdict] = report.verdicts
    assert verdict.state is GroupState.EMPTY
    assert verdict.trend == "growing"
    assert verdict.partitions[0].status is Status.STOP
    # Partition 1 is caught up: nobody consumes it, but there is nothing to consume. Idle stays OK.
    assert verdict.partitions[1].status is Status.OK and verdict.partitions[1].lag == 0
    kinds = [c.kind for c in verdict.causes]
    assert kinds[0] == "no_active_members"
    assert remedy(verdict.causes[0]) == "scale"


def test_idle_topic_with_caught_up_consumer_never_alerts(kafka: Kafka, names: Names) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 1)
    kafka.produce(topic, 0, 25)
    kafka.commit(group, {(topic, 0): 25})

    report = Checker(settings_for(kafka, group), MemoryWindowStore(samples=10)).run(3, 1.0)

    [verdict] = report.verdicts
    assert (verdict.status, verdict.severity, verdict.total_lag, verdict.causes) == (Status.OK, Severity.OK, 0, ())


# ---------------------------------------------------------------------------------------------------
# Unreachable clusters, Redis window, CLI errors
# ---------------------------------------------------------------------------------------------------


def test_unreachable_cluster_gives_error_snapshot_not_a_hang() -> None:
    from lagbot.devkit.embedded import free_port

    settings = build_settings(
        {"clusters": [{"name": "gone", "bootstrap_servers": f"127.0.0.1:{free_port()}", "request_timeout": 2}]},
        source="test",
    )
    started = time.monotonic()
    snapshot = collect(make_admin(settings.clusters[0]), settings.clusters[0])
    elapsed = time.monotonic() - started

    assert snapshot.error is not None and "unreachable" in snapshot.error
    assert snapshot.groups == {}
    assert elapsed < 2 + 1 + 2  # request timeout + the wait's grace + slack


def test_check_exits_3_when_the_cluster_is_unreachable(tmp_path: Any) -> None:
    from lagbot.devkit.embedded import free_port

    config = tmp_path / "lagbot.yaml"
    config.write_text(
        f"clusters:\n  - name: gone\n    bootstrap_servers: 127.0.0.1:{free_port()}\n    request_timeout: 2\n"
    )

    result = lagbot("check", "--config", str(config), "--samples", "1", "--json")

    assert result.returncode == 3, result.stderr
    document = json.loads(result.stdout)
    assert document["clusters"][0]["ok"] is False
    assert "unreachable" in document["clusters"][0]["error"]
    assert "Traceback" not in result.stderr


def test_redis_window_keeps_exact_samples_across_cycles(kafka: Kafka, names: Names, redis_client: redis.Redis) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 1)
    kafka.produce(topic, 0, 8)
    kafka.commit(group, {(topic, 0): 3})
    store = RedisWindowStore(redis_client, samples=2, ttl=600)
    checker = Checker(settings_for(kafka, group), store)

    checker.sample()
    kafka.produce(topic, 0, 4)
    checker.sample()
    kafka.commit(group, {(topic, 0): 12})
    checker.sample()

    window = store.window("embedded", group)
    assert window is not None
    assert [(s.committed, s.log_end, s.lag) for s in window.partitions[(topic, 0)]] == [(3, 12, 9), (12, 12, 0)]
    assert redis_client.llen(f"lagbot:window:embedded:{group}") == 2
    assert 0 < redis_client.ttl(f"lagbot:window:embedded:{group}") <= 600


@pytest.mark.parametrize(
    ("config_text", "expected"),
    [
        ("clusters: []\n", "clusters: List should have at least 1 item"),
        ("clusters:\n  - name: a\n    bootstrap_servers: x:1\n    check_interval: soon\n", "clusters.0.check_interval"),
        ("clusters:\n  - name: a\n    bootstrap_servers: x:1\n    colour: red\n", "clusters.0.colour: Extra inputs"),
        ("clusters: [\n", "not valid YAML"),
    ],
    ids=["empty-clusters", "bad-duration", "unknown-field", "bad-yaml"],
)
def test_bad_config_exits_4_naming_file_and_field(tmp_path: Any, config_text: str, expected: str) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(config_text)

    result = lagbot("check", "--config", str(config), "--samples", "1")

    assert result.returncode == 4
    assert str(config) in result.stderr
    assert expected in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_a_broker_that_accepts_but_never_answers_gives_an_error_snapshot() -> None:
    """A slow (hung) broker: the TCP connection opens, no Kafka response ever comes. Bounded, no hang."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept_and_ignore() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
                accepted.append(connection)  # kept open, never answered
            except OSError:
                continue

    thread = threading.Thread(target=accept_and_ignore, daemon=True)
    thread.start()
    try:
        port = listener.getsockname()[1]
        settings = build_settings(
            {"clusters": [{"name": "hung", "bootstrap_servers": f"127.0.0.1:{port}", "request_timeout": 2}]},
            source="test",
        )
        started = time.monotonic()
        snapshot = collect(make_admin(settings.clusters[0]), settings.clusters[0])
        elapsed = time.monotonic() - started
    finally:
        stop.set()
        thread.join(timeout=5)
        for connection in accepted:
            connection.close()
        listener.close()

    assert snapshot.error is not None
    assert "hung" in snapshot.error and "unreachable" in snapshot.error
    assert elapsed < 2 + 1 + 2


def test_groups_of_a_cluster_that_goes_down_turn_err(names: Names) -> None:
    """A dedicated broker is stopped between two cycles: the group seen before is reported ERR."""
    from lagbot.devkit.apache_kafka import ApacheKafka

    topic, group = names("topic"), names("group")
    with ApacheKafka().start() as own:
        local = Kafka(own.bootstrap)
        local.create_topic(topic, 1)
        local.produce(topic, 0, 5)
        local.commit(group, {(topic, 0): 2})
        del local  # librdkafka clients are destroyed while their broker is up: no reconnect wait later
        gc.collect()
        settings = build_settings(
            {"clusters": [{"name": "doomed", "bootstrap_servers": own.bootstrap, "request_timeout": 2}]},
            source="test",
        )
        checker = Checker(settings, MemoryWindowStore(samples=5))
        before = checker.cycle()
    assert [(v.group, v.status, v.total_lag) for v in before.verdicts] == [(group, Status.OK, 3)]

    after = checker.cycle()

    assert list(after.cluster_errors) == ["doomed"]
    [verdict] = after.verdicts
    assert (verdict.group, verdict.status) == (group, Status.ERR)
    assert verdict.error is not None and "unreachable" in verdict.error
    assert verdict.partitions == ()


@pytest.mark.parametrize(
    ("levels", "code", "severity"),
    [
        ("warn: {messages: 100}\n  critical: {messages: 100000}\n  page: {messages: 1000000}\n", 1, "warn"),
        ("warn: {messages: 10}\n  critical: {messages: 200}\n  page: {messages: 1000000}\n", 2, "critical"),
        ("warn: {messages: 10}\n  critical: {messages: 20}\n  page: {messages: 250}\n", 2, "page"),
    ],
    ids=["warn-exits-1", "critical-exits-2", "page-exits-2"],
)
def test_check_exit_code_follows_severity(
    kafka: Kafka, names: Names, tmp_path: Any, levels: str, code: int, severity: str
) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 1)
    kafka.produce(topic, 0, 300)
    kafka.commit(group, {(topic, 0): 0})
    config = tmp_path / "lagbot.yaml"
    config.write_text(
        f"clusters:\n  - name: embedded\n    bootstrap_servers: {kafka.bootstrap}\n"
        f"    groups: {{include: ['{group}']}}\nthresholds:\n  {levels}"
    )

    result = lagbot("check", "--config", str(config), "--samples", "2", "--every", "0.5", "--json")

    assert result.returncode == code, result.stderr
    [reported] = json.loads(result.stdout)["groups"]
    assert (reported["total_lag"], reported["severity"]) == (300, severity)


def test_check_only_demo_runs_end_to_end_on_the_embedded_broker() -> None:
    result = lagbot("demo", "--check-only", "--every", "1", "--samples", "3", timeout=180)

    assert result.returncode == 0, result.stderr
    assert "user-events-consumer (embedded)" in result.stdout
    assert "orders-consumer (embedded) · severity OK · consuming" in result.stdout
    assert "[no_active_members]" in result.stdout and "[hot_partition]" in result.stdout
    assert "demo done: `lagbot check` on these groups exits" in result.stderr
