"""The drain against Apache Kafka and real Spark (local[2]): exactly once, offsets, failures, pause.

Every offset asserted was produced by the test and read back from the broker or from the Parquet
files (with pyarrow, not with the Spark that wrote them). Backlogs are produced with a batching
producer: Apache Kafka reports the exact log end after batches. Transactions (committed and aborted):
tests/remediations/test_drain_transactions.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from lagbot.core.model import Member
from lagbot.remediations.base import Outcome, Plan
from lagbot.remediations.drain.job import JobConfig, JobProgress, run_job, spark_session
from lagbot.remediations.drain.offsets import DrainError, advance_offsets
from lagbot.remediations.drain.plan import Manifest
from lagbot.remediations.drain.remediation import plan_partitions, plan_ranges
from lagbot.remediations.drain.run import submit
from lagbot.remediations.drain.settings import DrainSettings
from lagbot.remediations.executors.base import Executor, ExecutorError, Workload
from tests.conftest import Kafka, Names
from tests.support.drain_rig import (
    DRAIN,
    context,
    exactly_once,
    fill,
    make_plan,
    manifest_at,
    parquet_rows,
)
from tests.support.group_commits import committed

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    session = spark_session("local[2]", app_name="lagbot-drain-tests")
    yield session
    session.stop()


@pytest.mark.parametrize("writer", ["arrow", "spark"])
def test_drains_a_hot_partition_exactly_once_then_advances_the_offsets(
    kafka: Kafka, names: Names, spark: Any, tmp_path: Path, writer: str
) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 3)
    counts = {0: 80_000, 1: 10_000, 2: 10_000}  # 100,000 messages, partition 0 hot
    fill(kafka.bootstrap, topic, counts)
    start = {0: 0, 1: 2_500, 2: 10_000}  # partition 2 is caught up: nothing to drain there
    kafka.commit(group, {(topic, p): o for p, o in start.items()})
    sink = tmp_path / "drained"

    plan = make_plan(kafka, group, str(sink), chunk=10_000, writer=writer)
    assert plan.after["tasks"] == 8 + 1  # the hot partition is read by 8 tasks, partition 1 by one
    assert plan.after["offsets"] == 80_000 + 7_500
    assert plan.after["commit"] == {f"{topic}/0": 80_000, f"{topic}/1": 10_000}
    seen: list[JobProgress] = []
    lines: list[str] = []
    outcome = DRAIN.execute(Plan.from_json(plan.to_json()), context(kafka, spark, lines, on_progress=seen.append))

    assert outcome.ok, outcome.detail
    rows = parquet_rows(sink)
    per_partition = Counter((r["topic"], r["partition"]) for r in rows)
    assert per_partition == {(topic, 0): 80_000, (topic, 1): 7_500}
    offsets = Counter((r["partition"], r["offset"]) for r in rows)
    assert set(offsets.values()) == {1}  # every offset exactly once
    assert set(offsets) == {(0, o) for o in range(80_000)} | {(1, o) for o in range(2_500, 10_000)}
    sample = next(r for r in rows if r["partition"] == 1 and r["offset"] == 4_242)
    assert (sample["key"], sample["value"][:7], sample["headers"]) == (b"k4242", b"1:4242:", [
        {"key": "n", "value": b"4242"}
    ])  # fmt: skip
    assert len({r["offset_range"] for r in rows if r["partition"] == 0}) == 8
    assert hidden_files(sink) == []  # no temporary file left behind

    assert committed(kafka, group, topic, 3) == {0: 80_000, 1: 10_000, 2: 10_000}
    manifest = Manifest.from_json((sink / "_lagbot" / f"drain-{group}-{plan.after['plan_id']}.json").read_text())
    assert manifest.complete and manifest.messages == 87_500
    assert [(r.partition, r.start, r.end, r.count, r.first_offset, r.last_offset) for r in manifest.ranges][:2] == [
        (0, 0, 10_000, 10_000, 0, 9_999),
        (0, 10_000, 20_000, 10_000, 10_000, 19_999),
    ]
    assert manifest.total_bytes == sum(len(r["key"]) + len(r["value"]) for r in rows)
    assert seen[-1].ranges_done == seen[-1].ranges_total == 9 and seen[-1].messages == 87_500
    assert any(line.startswith(f"draining {group}: 9/9 ranges") for line in lines)
    assert outcome.data["committed"] == {f"{topic}/0": 80_000, f"{topic}/1": 10_000}


def hidden_files(sink: Path) -> list[Path]:
    """Files readers skip (`.` names) inside the range directories: temporaries a writer left."""
    return [p for p in sink.glob("topic=*/partition=*/offset_range=*/.*") if p.is_file() and ".crc" not in p.name]


def failed_drain(
    kafka: Kafka, names: Names, spark: Any, tmp_path: Path, *, writer: str
) -> tuple[str, str, Path, Plan, Outcome]:
    """A drain of 30,000 + 3,000 + 3,000 messages whose partition-0 tasks fail mid-way: it fails and
    commits nothing. Returns topic, group, sink, the plan and its outcome."""
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 3)
    fill(kafka.bootstrap, topic, {0: 30_000, 1: 3_000, 2: 3_000})
    kafka.commit(group, {(topic, p): 0 for p in range(3)})
    sink = tmp_path / "drained"
    failing = make_plan(kafka, group, str(sink), chunk=10_000, fail_after=4_000, writer=writer)
    outcome = DRAIN.execute(failing, context(kafka, spark, []))
    assert not outcome.ok
    assert committed(kafka, group, topic, 3) == {0: 0, 1: 0, 2: 0}
    return topic, group, sink, failing, outcome


def test_a_failed_task_commits_nothing_and_a_rerun_is_still_exactly_once_with_spark_writing(
    kafka: Kafka, names: Names, spark: Any, tmp_path: Path
) -> None:
    topic, group, sink, failing, outcome = failed_drain(kafka, names, spark, tmp_path, writer="spark")

    assert "fault injection" in outcome.detail and "nothing was committed" in outcome.detail
    assert parquet_rows(sink) == []  # Spark aborted the write: not even the ranges that completed
    manifest = manifest_at(sink, group, failing)
    assert not manifest.complete and {r.status for r in manifest.ranges} == {"not_written"}
    assert manifest.error is not None and "fault injection" in manifest.error

    rerun_exactly_once(kafka, group, topic, spark, sink, failing, writer="spark")


def test_a_failed_task_commits_nothing_and_a_rerun_is_still_exactly_once_with_the_tasks_writing(
    kafka: Kafka, names: Names, spark: Any, tmp_path: Path
) -> None:
    topic, group, sink, failing, outcome = failed_drain(kafka, names, spark, tmp_path, writer="arrow")

    assert "3 of 5 ranges failed: InjectedFailure: fault injection" in outcome.detail
    assert "nothing was committed" in outcome.detail
    exactly_once(parquet_rows(sink), {1: range(3_000), 2: range(3_000)})  # the ranges that completed, only
    assert hidden_files(sink) == []  # the failed ranges' temporary files are gone
    manifest = manifest_at(sink, group, failing)
    assert not manifest.complete
    assert [(r.partition, r.start, r.status) for r in manifest.ranges] == [
        (0, 0, "failed"), (0, 10_000, "failed"), (0, 20_000, "failed"), (1, 0, "written"), (2, 0, "written"),
    ]  # fmt: skip
    assert [r.count for r in manifest.ranges if r.status == "written"] == [3_000, 3_000]
    assert all(r.count < 4_000 for r in manifest.ranges if r.status == "failed")  # what was read before failing

    rerun_exactly_once(kafka, group, topic, spark, sink, failing, writer="arrow")


def rerun_exactly_once(kafka: Kafka, group: str, topic: str, spark: Any, sink: Path, failed: Plan, writer: str) -> None:
    """The same plan without the fault: every offset once, offsets advanced; run again: replaced, nothing new."""
    rerun = make_plan(kafka, group, str(sink), chunk=10_000, writer=writer)
    assert rerun.after["plan_id"] == failed.after["plan_id"]  # the same ranges, the same outputs
    assert DRAIN.execute(rerun, context(kafka, spark, [])).ok
    exactly_once(parquet_rows(sink), {0: range(30_000), 1: range(3_000), 2: range(3_000)})
    assert committed(kafka, group, topic, 3) == {0: 30_000, 1: 3_000, 2: 3_000}

    again = DRAIN.execute(rerun, context(kafka, spark, []))  # a rerun after success replaces, commits nothing new
    assert again.ok and again.data["committed"] == {}
    exactly_once(parquet_rows(sink), {0: range(30_000), 1: range(3_000), 2: range(3_000)})
    assert hidden_files(sink) == []


def test_the_tasks_replace_what_spark_wrote_and_leave_a_live_attempts_file_alone(
    kafka: Kafka, names: Names, spark: Any, tmp_path: Path
) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 1)
    fill(kafka.bootstrap, topic, {0: 3_000})
    kafka.commit(group, {(topic, 0): 0})
    sink = tmp_path / "drained"
    plan = make_plan(kafka, group, str(sink), chunk=10_000)
    assert run_job(spark, replace(job_config(kafka, plan), writer="spark")).complete  # part-*.parquet, .crc files
    [directory] = [p.parent for p in sink.rglob("*.parquet")]
    assert [p.name for p in directory.glob("*.parquet")] != ["part-00000.parquet"]
    dead, live = directory / ".lagbot-1-1.parquet", directory / ".lagbot-2-2.parquet"
    dead.write_bytes(b"left by an attempt that died")
    live.write_bytes(b"being written by a running attempt")
    os.utime(dead, (time.time() - 7_200, time.time() - 7_200))

    assert run_job(spark, replace(job_config(kafka, plan), writer="arrow")).complete

    assert sorted(p.name for p in directory.iterdir()) == [live.name, "part-00000.parquet"]
    exactly_once(parquet_rows(sink), {0: range(3_000)})


def test_a_filesystem_pyarrow_cannot_open_fails_before_any_task_and_names_the_setting(
    kafka: Kafka, names: Names, spark: Any, tmp_path: Path
) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 1)
    fill(kafka.bootstrap, topic, {0: 100})
    kafka.commit(group, {(topic, 0): 0})
    plan = make_plan(kafka, group, "s3a://ops/drains", writer="arrow")
    config = replace(job_config(kafka, plan), manifest_url=str(tmp_path / "manifest.json"), writer="arrow")

    manifest = run_job(spark, config)

    assert not manifest.complete and [r.status for r in manifest.ranges] == ["not_written"]
    assert manifest.error is not None
    assert (
        "pyarrow cannot write to s3a://ops/drains" in manifest.error and "set drain.writer to spark" in manifest.error
    )
    assert committed(kafka, group, topic, 1) == {0: 0}


def test_transaction_markers_leave_gaps_that_ranges_read_past(
    kafka: Kafka, names: Names, spark: Any, tmp_path: Path
) -> None:
    """Every transaction's commit marker takes an offset no reader sees: ranges end on them, and the last
    one at the log end. Expected offsets come from the producer's delivery reports. (Aborted transactions:
    tests/remediations/test_drain_transactions.py.)"""
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 1)
    producer = Producer({"bootstrap.servers": kafka.bootstrap, "transactional.id": names("tx")})
    producer.init_transactions(30)
    reports: list[int] = []
    kept: list[int] = []
    for _ in range(4):  # 5 messages each, then a commit marker
        before = len(reports)
        producer.begin_transaction()
        for _ in range(5):
            producer.produce(topic, value=b"x" * 10, partition=0, on_delivery=lambda _e, m: reports.append(m.offset()))
        producer.flush(30)
        producer.commit_transaction(30)
        kept += reports[before:]
    end = log_end(kafka, topic)
    assert kept == [t * 6 + i for t in range(4) for i in range(5)] and end == 24  # a marker after each five
    kafka.commit(group, {(topic, 0): 0})
    sink = tmp_path / "drained"

    plan = make_plan(kafka, group, str(sink), chunk=6)  # ranges ending on markers and at the log end
    outcome = DRAIN.execute(plan, context(kafka, spark, []))

    assert outcome.ok, outcome.detail
    assert sorted(r["offset"] for r in parquet_rows(sink)) == kept
    assert committed(kafka, group, topic, 1) == {0: end}
    ranges = manifest_at(sink, group, plan).ranges
    assert [(r.start, r.end) for r in ranges] == [(s, min(s + 6, end)) for s in range(0, end, 6)]
    assert [r.count for r in ranges] == [sum(1 for o in kept if r.start <= o < r.end) for r in ranges]


def log_end(kafka: Kafka, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": "log-end"})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, 0), 10)[1])
    finally:
        consumer.close()


def test_a_replanned_drain_replaces_the_older_ranges_it_covers(
    kafka: Kafka, names: Names, spark: Any, tmp_path: Path
) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 1)
    fill(kafka.bootstrap, topic, {0: 5_000})
    kafka.commit(group, {(topic, 0): 0})
    sink = tmp_path / "drained"
    first = make_plan(kafka, group, str(sink), chunk=2_000)
    assert run_job(spark, job_config(kafka, first)).complete  # written; its offsets were never committed
    fill(kafka.bootstrap, topic, {0: 1_000})  # the log grows before the drain is planned again

    second = make_plan(kafka, group, str(sink), chunk=2_000)
    assert [r.to_list()[2:] for r in plan_ranges(second)] == [[0, 2_000], [2_000, 4_000], [4_000, 6_000]]
    assert DRAIN.execute(second, context(kafka, spark, [])).ok
    rows = parquet_rows(sink)
    exactly_once(rows, {0: range(6_000)})  # the first plan's [4000, 5000) is gone, covered by [4000, 6000)
    assert sorted({r["offset_range"] for r in rows}) == [
        f"{s:020d}-{e:020d}" for s, e in ((0, 2_000), (2_000, 4_000), (4_000, 6_000))
    ]
    assert [p.name for p in sink.rglob("*.parquet")] == [
        "part-00000.parquet"
    ] * 3  # auto, a local path: the tasks wrote

    kafka.commit(group, {(topic, 0): 1_000})  # rewound: [1000, 6000) is planned again, cut differently
    third = make_plan(kafka, group, str(sink), chunk=1_500)
    assert DRAIN.execute(third, context(kafka, spark, [])).ok
    offsets = Counter(r["offset"] for r in parquet_rows(sink))
    assert set(offsets) == set(range(6_000))  # nothing lost ...
    assert {o for o, n in offsets.items() if n > 1} == set(range(1_000, 2_000))  # ... [0, 2000) only partly covered


def job_config(kafka: Kafka, plan: Plan) -> JobConfig:
    return JobConfig(
        plan_id=plan.after["plan_id"],
        cluster=plan.cluster,
        group=plan.group,
        sink=plan.after["sink"],
        manifest_url=plan.after["manifest"],
        kafka={"bootstrap.servers": kafka.bootstrap},
        ranges=plan_ranges(plan),
    )


def read_all(bootstrap: str, topic: str, partitions: int, expected: int, timeout: float = 60) -> list[Any]:
    """Every message of `topic`, reading until `expected` arrived and 1 s more shows no extra one."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    received: list[Any] = []
    deadline, quiet_until = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        received += [m for m in consumer.consume(1000, 0.2) if m.error() is None]
        if len(received) >= expected:
            quiet_until = quiet_until or time.monotonic() + 1.0
            if time.monotonic() >= quiet_until:
                break
    consumer.close()
    return received


def test_replay_into_a_topic_with_more_partitions(kafka: Kafka, names: Names, spark: Any, tmp_path: Path) -> None:
    topic, target, group = names("topic"), names("target"), names("group")
    kafka.create_topic(topic, 3)
    kafka.create_topic(target, 6)
    fill(kafka.bootstrap, topic, {0: 3_000, 1: 500, 2: 500})
    kafka.commit(group, {(topic, 0): 0, (topic, 1): 100, (topic, 2): 500})

    plan = make_plan(kafka, group, f"kafka:{target}", chunk=1_000, manifest_dir=str(tmp_path / "manifests"))
    assert plan.after["sink_kind"] == "replay" and plan.after["tasks"] == 3 + 1
    outcome = DRAIN.execute(plan, context(kafka, spark, []))

    assert outcome.ok, outcome.detail
    replayed = read_all(kafka.bootstrap, target, 6, 3_400)
    sources = Counter(dict(m.headers())["lagbot-drain-source"].decode() for m in replayed)
    assert len(replayed) == 3_400 and set(sources.values()) == {1}
    assert set(sources) == {f"{topic}/0/{o}" for o in range(3_000)} | {f"{topic}/1/{o}" for o in range(100, 500)}
    one = next(m for m in replayed if dict(m.headers())["lagbot-drain-source"] == f"{topic}/1/200".encode())
    assert (one.key(), one.value()[:6], dict(one.headers())["n"]) == (b"k200", b"1:200:", b"200")
    assert len({m.partition() for m in replayed}) > 3  # spread over the target's partitions by key
    assert committed(kafka, group, topic, 3) == {0: 3_000, 1: 500, 2: 500}
    manifest = Manifest.from_json((tmp_path / "manifests" / f"drain-{group}-{plan.after['plan_id']}.json").read_text())
    assert manifest.complete and manifest.messages == 3_400 and manifest.sink == f"kafka:{target}"


class FleetExecutor(Executor):
    """The group's workload as real consumer processes' stand-in: real consumers, every call recorded.

    Scaling to n closes or starts real group members, so the group really empties and refills; each
    call also records the group's committed offsets at that moment (to prove the order of the steps).
    """

    name = "fleet"

    def __init__(self, kafka: Kafka, group: str, topic: str, partitions: int) -> None:
        self.kafka, self.group, self.topic, self.partitions = kafka, group, topic, partitions
        self.calls: list[tuple[Any, ...]] = []
        self.members: list[Consumer] = []

    def start_member(self) -> None:
        consumer = self.kafka.consumer(self.group)
        consumer.subscribe([self.topic])
        self.kafka.wait_assigned(consumer)
        self.members.append(consumer)

    def replicas(self, workload: Workload) -> int:
        self.calls.append(("replicas", workload.name))
        return len(self.members)

    def scale(self, workload: Workload, replicas: int) -> Outcome:
        self.calls.append(("scale", workload.name, replicas, committed(self.kafka, self.group, self.topic, 3)))
        before = len(self.members)
        while len(self.members) > replicas:
            self.members.pop().close()
        while len(self.members) < replicas:
            self.start_member()
        return Outcome(True, f"{before} -> {replicas}", {"before": before, "after": replicas})

    def restart(self, workload: Workload) -> Outcome:
        raise ExecutorError("not used by the drain")

    def restart_member(self, workload: Workload, member: Member) -> Outcome:
        raise ExecutorError("not used by the drain")

    def close(self) -> None:
        while self.members:
            self.members.pop().close()


def test_running_consumers_are_paused_drained_committed_then_restored(
    kafka: Kafka, names: Names, spark: Any, tmp_path: Path
) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 3)
    fill(kafka.bootstrap, topic, {0: 4_000, 1: 200, 2: 200})
    kafka.commit(group, {(topic, p): 0 for p in range(3)})
    fleet = FleetExecutor(kafka, group, topic, 3)
    workload = Workload(executor="local", name="user-events-consumer")
    try:
        fleet.start_member()
        plan = make_plan(kafka, group, str(tmp_path / "drained"), chunk=1_000, workload=workload)
        assert plan.before["state"] == "Stable" and plan.after["pause"]
        assert plan.steps[0].startswith("Pause consumers") and plan.steps[-1].startswith("Restore")
        lines: list[str] = []
        outcome = DRAIN.execute(plan, context(kafka, spark, lines, fleet))

        assert outcome.ok, outcome.detail
        ends = {0: 4_000, 1: 200, 2: 200}
        assert fleet.calls == [
            ("replicas", "user-events-consumer"),
            ("scale", "user-events-consumer", 0, {0: 0, 1: 0, 2: 0}),  # paused before anything moved
            ("scale", "user-events-consumer", 1, ends),  # restored only after the commit
        ]
        assert len(fleet.members) == 1
        assert lines[0] == "consumers paused: user-events-consumer scaled from 1 to 0"
        assert lines[-1] == "consumers restored: user-events-consumer back to 1 replica(s)"
        exactly_once(parquet_rows(tmp_path / "drained"), {0: range(4_000), 1: range(200), 2: range(200)})
    finally:
        fleet.close()


def test_a_failed_drain_of_a_paused_group_still_restores_the_consumers(
    kafka: Kafka, names: Names, spark: Any, tmp_path: Path
) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 3)
    fill(kafka.bootstrap, topic, {0: 3_000, 1: 10, 2: 10})
    kafka.commit(group, {(topic, p): 0 for p in range(3)})
    fleet = FleetExecutor(kafka, group, topic, 3)
    workload = Workload(executor="local", name="w")
    try:
        fleet.start_member()
        plan = make_plan(kafka, group, str(tmp_path / "d"), chunk=1_000, workload=workload, fail_after=500)
        outcome = DRAIN.execute(plan, context(kafka, spark, [], fleet))
        assert not outcome.ok and "nothing was committed" in outcome.detail
        assert [c[:3] for c in fleet.calls] == [("replicas", "w"), ("scale", "w", 0), ("scale", "w", 1)]
        assert committed(kafka, group, topic, 3) == {0: 0, 1: 0, 2: 0}
    finally:
        fleet.close()


def test_an_active_group_is_refused_when_the_plan_does_not_pause_it(
    kafka: Kafka, names: Names, spark: Any, tmp_path: Path
) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 3)
    fill(kafka.bootstrap, topic, {0: 1_000, 1: 10, 2: 10})
    kafka.commit(group, {(topic, p): 0 for p in range(3)})
    member = kafka.consumer(group)
    member.subscribe([topic])
    try:
        kafka.wait_assigned(member)
        plan = make_plan(kafka, group, str(tmp_path / "d"), pause_consumers=False)
        assert not plan.after["pause"]
        outcome = DRAIN.execute(plan, context(kafka, spark, []))
        assert not outcome.ok and "is Stable, not Empty" in outcome.detail
        assert not (tmp_path / "d").exists()

        # The broker does not refuse to alter an active group's offsets: the drain checks the state itself.
        with pytest.raises(DrainError, match="not Empty"):
            advance_offsets(kafka.admin, group, plan_partitions(plan))
        assert committed(kafka, group, topic, 3) == {0: 0, 1: 0, 2: 0}
    finally:
        member.close()


def test_offsets_moved_back_since_the_plan_are_never_skipped(
    kafka: Kafka, names: Names, spark: Any, tmp_path: Path
) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 1)
    fill(kafka.bootstrap, topic, {0: 1_000})
    kafka.commit(group, {(topic, 0): 600})
    plan = make_plan(kafka, group, str(tmp_path / "d"))
    kafka.commit(group, {(topic, 0): 100})  # rewound after the plan: [100, 600) was never read
    outcome = DRAIN.execute(plan, context(kafka, spark, []))
    assert not outcome.ok and "moved back" in outcome.detail
    assert committed(kafka, group, topic, 1) == {0: 100} and not (tmp_path / "d").exists()


def test_spark_submit_runs_the_job_file_and_reports_progress(kafka: Kafka, names: Names, tmp_path: Path) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 2)
    fill(kafka.bootstrap, topic, {0: 2_000, 1: 100})
    kafka.commit(group, {(topic, 0): 0, (topic, 1): 0})
    plan = make_plan(kafka, group, str(tmp_path / "d"), chunk=500)
    config = job_config(kafka, plan)
    seen: list[JobProgress] = []
    manifest = submit(config, DrainSettings(master="local[2]"), on_progress=seen.append, timeout=240)

    assert manifest.complete and manifest.messages == 2_100
    assert seen and seen[-1].ranges_done == seen[-1].ranges_total == 5
    exactly_once(parquet_rows(tmp_path / "d"), {0: range(2_000), 1: range(100)})
    assert committed(kafka, group, topic, 2) == {0: 0, 1: 0}  # the job writes; only the remediation commits


def lagbot(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lagbot.cli.main", *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def test_cli_dry_run_prints_the_plan_and_changes_nothing(kafka: Kafka, names: Names, tmp_path: Path) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 2)
    fill(kafka.bootstrap, topic, {0: 3_000, 1: 50})
    kafka.commit(group, {(topic, 0): 0, (topic, 1): 50})
    sink = tmp_path / "d"
    result = lagbot("drain", "-b", kafka.bootstrap, "--group", group, "--sink", str(sink), "--chunk", "1000",
                    "--dry-run")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Read 3,000 offsets in 3 ranges of at most 1,000" in result.stdout
    assert f" {topic}  0          0          0     3,000  3,000    3       0" in result.stdout
    assert "dry run: nothing was read, written or committed" in result.stdout
    assert not sink.exists() and committed(kafka, group, topic, 2) == {0: 0, 1: 50}


def test_cli_drains_with_a_progress_bar(kafka: Kafka, names: Names, tmp_path: Path) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 1)
    fill(kafka.bootstrap, topic, {0: 2_000})
    kafka.commit(group, {(topic, 0): 500})
    sink = tmp_path / "d"
    result = lagbot("drain", "-b", kafka.bootstrap, "-g", group, "--sink", str(sink), "--chunk", "500",
                    "--master", "local[2]")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "3/3 ranges" in result.stderr and "Traceback" not in result.stderr
    assert f"drained 1,500 messages of {group} in 3 ranges" in result.stdout
    exactly_once(parquet_rows(sink), {0: range(500, 2_000)})
    assert committed(kafka, group, topic, 1) == {0: 2_000}


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--group", "no-such-group", "--sink", "/tmp/x"], "--group: no consumer group 'no-such-group'"),
        (["--group", "g"], "--sink: required"),
        (["--group", "g", "--sink", "kafka:no spaces"], "--sink: 'no spaces' is not a Kafka topic name"),
        (["--group", "g", "--sink", "/tmp/x", "--master", "mesos://x"], "--master: 'mesos://x' is not a Spark master"),
        (["--group", "g", "--sink", "/tmp/x", "--chunk", "0"], "--chunk"),
        (["--group", "g", "--sink", "/tmp/x", "--cluster", "nope"], "no cluster named 'nope'"),
    ],
    ids=["unknown-group", "no-sink", "bad-topic", "bad-master", "bad-chunk", "unknown-cluster"],
)
def test_cli_bad_usage_is_named_and_exits_4(kafka: Kafka, args: list[str], named: str) -> None:
    result = lagbot("drain", "-b", kafka.bootstrap, *args)
    assert result.returncode == 4, result.stderr
    assert named in result.stderr and "Traceback" not in result.stderr
