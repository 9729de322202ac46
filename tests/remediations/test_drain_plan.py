"""The drain's pure parts: range math, ETA, the plan approvers see, params, spark-submit argv, manifest, verify.

The range rules are a numbered table, each case with why its answer is right (see drain_plan's docstring).
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from lagbot.core.config import ConfigError, load_settings
from lagbot.core.model import GroupState, GroupVerdict, Member, PartitionVerdict, Severity, Status
from lagbot.core.stored import StoredFormatError
from lagbot.remediations.base import Plan, Progress, Risk
from lagbot.remediations.drain.job import JobConfig, JobProgress, spark_submit_argv
from lagbot.remediations.drain.offsets import DrainError, commits_for, moved_back
from lagbot.remediations.drain.params import DrainParams
from lagbot.remediations.drain.plan import (
    Manifest,
    OffsetRange,
    PartitionBacklog,
    PartitionDrain,
    RangeReceipt,
    estimate_seconds,
    layout,
    partition_drain,
    plan_id,
    split,
)
from lagbot.remediations.drain.remediation import (
    DrainRemediation,
    build_plan,
    plan_partitions,
    plan_ranges,
    verify_drain,
)
from lagbot.remediations.drain.settings import DrainSettings, local_slots
from lagbot.remediations.drain.sinks import ParquetSink, ReplaySink, SinkError, manifest_url, parse_sink
from lagbot.remediations.executors.base import Workload
from tests.support.tree import package_folder

# ---------------------------------------------------------------------------------------------------
# 1. What to read from one partition
# ---------------------------------------------------------------------------------------------------

CASES = [
    # 1. the usual lag: from the committed offset to the log end, as kafka-consumer-groups.sh computes it
    ("behind", PartitionBacklog("t", 0, 100, 0, 500), "log_start", (100, 500, 0, "committed")),
    # 2. caught up: nothing to drain
    ("caught-up", PartitionBacklog("t", 0, 500, 0, 500), "log_start", None),
    # 3. committed past the log end (the log was truncated): nothing to read, and never a negative range
    ("past-end", PartitionBacklog("t", 0, 700, 0, 500), "log_start", None),
    # 4. nothing committed: from the log start, so no message the group could read is left behind
    ("uncommitted", PartitionBacklog("t", 0, None, 40, 500), "log_start", (40, 500, 0, "log_start_uncommitted")),
    # 5. nothing committed, and the approvers chose to leave such partitions alone
    ("uncommitted-skip", PartitionBacklog("t", 0, None, 40, 500), "skip", None),
    # 6. nothing committed on an empty partition: nothing to read
    ("uncommitted-empty", PartitionBacklog("t", 0, None, 500, 500), "log_start", None),
    # 7. committed below the log start: retention deleted 60 unread messages; read what is left
    ("deleted", PartitionBacklog("t", 0, 40, 100, 500), "log_start", (100, 500, 60, "log_start_deleted")),
    # 8. committed below the log start and everything deleted: nothing left to read
    ("all-deleted", PartitionBacklog("t", 0, 40, 500, 500), "log_start", None),
]


@pytest.mark.parametrize(("backlog", "uncommitted", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_partition_drain(
    backlog: PartitionBacklog, uncommitted: Any, expected: tuple[int, int, int, str] | None
) -> None:
    drain = partition_drain(backlog, uncommitted=uncommitted)
    got = None if drain is None else (drain.start, drain.end, drain.lost, drain.origin)
    assert got == expected
    if drain is not None:
        assert drain.committed == backlog.committed


# ---------------------------------------------------------------------------------------------------
# 2. Chunks, the layout, the ETA
# ---------------------------------------------------------------------------------------------------


def test_split_cuts_by_offset_with_a_shorter_last_range() -> None:
    drain = PartitionDrain("t", 1, 100, 100, 350)
    assert [(r.start, r.end) for r in split(drain, 100)] == [(100, 200), (200, 300), (300, 350)]
    assert [(r.start, r.end) for r in split(drain, 250)] == [(100, 350)]
    assert [(r.start, r.end) for r in split(drain, 1000)] == [(100, 350)]
    assert len(split(drain, 1)) == 250
    with pytest.raises(ValueError, match="at least 1"):
        split(drain, 0)


def test_a_hot_partition_is_read_by_many_tasks() -> None:
    backlogs = [
        PartitionBacklog("t", 2, 0, 0, 50_000),
        PartitionBacklog("t", 0, 0, 0, 900_000),  # 90% of the backlog
        PartitionBacklog("t", 1, 50_000, 0, 50_000),  # caught up
        PartitionBacklog("u", 0, 10, 0, 50_010),
    ]
    work = layout(backlogs, chunk=100_000)
    assert [(p.topic, p.partition) for p in work.partitions] == [("t", 0), ("t", 2), ("u", 0)]
    assert sum(1 for r in work.ranges if (r.topic, r.partition) == ("t", 0)) == 9
    assert work.offsets == 1_000_000 and work.lost == 0
    assert work.ends() == {("t", 0): 900_000, ("t", 2): 50_000, ("u", 0): 50_010}
    assert list(work.ranges) == sorted(work.ranges)  # by topic, partition, start
    # ranges of a partition tile it exactly: no gap, no overlap
    hot = [r for r in work.ranges if (r.topic, r.partition) == ("t", 0)]
    assert all(a.end == b.start for a, b in itertools.pairwise(hot)) and hot[0].start == 0


def test_an_empty_backlog_has_no_ranges() -> None:
    work = layout([PartitionBacklog("t", 0, 10, 0, 10)], chunk=5)
    assert work.ranges == () and work.partitions == () and work.offsets == 0


def r(start: int, end: int, partition: int = 0) -> OffsetRange:
    return OffsetRange("t", partition, start, end)


@pytest.mark.parametrize(
    ("ranges", "slots", "expected"),
    [
        # 1. nothing to read: the start-up alone
        ([], 4, 10.0),
        # 2. one range cannot use a second slot: its whole time
        ([r(0, 1000)], 4, 10.0 + 10.0),
        # 3. four equal ranges on two slots: two rounds
        ([r(0, 100), r(100, 200), r(200, 300), r(300, 400)], 2, 10.0 + 2.0),
        # 4. one big range dominates however many small ones run beside it (largest first)
        ([r(0, 500), r(500, 600), r(600, 700), r(700, 800)], 2, 10.0 + 5.0),
        # 5. more slots than ranges: the largest range
        ([r(0, 300), r(300, 400)], 8, 10.0 + 3.0),
    ],
    ids=["none", "one", "two-rounds", "big-one", "spare-slots"],
)
def test_estimate_seconds(ranges: list[OffsetRange], slots: int, expected: float) -> None:
    assert estimate_seconds(ranges, slots=slots, task_rate=100.0, startup=10.0) == pytest.approx(expected)


def test_plan_id_names_the_ranges_and_the_sink() -> None:
    ranges = [r(0, 10), r(10, 20)]
    assert plan_id("c", "g", "/s", ranges) == plan_id("c", "g", "/s", list(ranges))
    assert plan_id("c", "g", "/s", ranges) != plan_id("c", "g", "/other", ranges)
    assert plan_id("c", "g", "/s", ranges) != plan_id("c", "g", "/s", [r(0, 10), r(10, 21)])


def test_range_labels_sort_and_parse_back() -> None:
    assert r(5, 10).label == "00000000000000000005-00000000000000000010"
    assert OffsetRange.from_label("t", 0, r(5, 10).label) == r(5, 10)
    assert OffsetRange.from_label("t", 0, "not-a-range") is None
    assert OffsetRange.from_label("t", 0, "12") is None
    assert r(0, 10).overlaps(r(9, 20)) and not r(0, 10).overlaps(r(10, 20))
    assert not r(0, 10).overlaps(r(0, 10, partition=1))


# ---------------------------------------------------------------------------------------------------
# 3. The plan
# ---------------------------------------------------------------------------------------------------


def pv(
    partition: int, committed: int | None, log_end: int, log_start: int = 0, topic: str = "events"
) -> PartitionVerdict:
    lag = None if committed is None else max(0, log_end - committed)
    return PartitionVerdict(
        topic, partition, committed, log_end, log_start, lag, None, False, Status.STOP, "", None, None, None
    )


def verdict(*partitions: PartitionVerdict, state: GroupState = GroupState.EMPTY, **extra: Any) -> GroupVerdict:
    values: dict[str, Any] = {
        "cluster": "prod",
        "group": "user-events-consumer",
        "state": state,
        "status": Status.STOP,
        "severity": Severity.CRITICAL,
        "severity_reason": "critical",
        "partitions": partitions,
        "total_lag": sum(p.lag or 0 for p in partitions),
        "max_lag_seconds": None,
        "produce_rate": 300.0,
        "consume_rate": 0.0,
        "eta_seconds": None,
        "trend": "growing",
        **extra,
    }
    return GroupVerdict(**values)


HOT = verdict(pv(0, 0, 900_000), pv(1, 50_000, 50_000), pv(2, 40_000, 100_000))


def params(**values: Any) -> DrainParams:
    return DrainParams(**{"sink": "/data/drains", "chunk": 100_000, "slots": 2, "task_rate": 50_000.0,
                          "startup_seconds": 20.0, **values})  # fmt: skip


def test_the_plan_shows_ranges_messages_eta_sink_and_offsets() -> None:
    plan = build_plan(HOT, params(), now=1000.0)
    assert (plan.action, plan.risk, plan.group, plan.created_at) == ("drain", Risk.MEDIUM, "user-events-consumer", 1000)
    assert plan.after["offsets"] == 960_000 and plan.after["tasks"] == 9 + 1
    assert plan.after["commit"] == {"events/0": 900_000, "events/2": 100_000}
    # 10 ranges on 2 slots, largest first: 5 rounds of 100,000 at 50,000 msg/s, 2 s each, + start-up
    assert plan.after["eta_seconds"] == pytest.approx(20.0 + 10.0)
    assert plan.after["sink"] == "/data/drains" and plan.after["sink_kind"] == "parquet"
    assert plan.after["manifest"] == f"/data/drains/_lagbot/drain-user-events-consumer-{plan.after['plan_id']}.json"
    assert plan.after["pause"] is False and not any(s.startswith("Pause") for s in plan.steps)
    assert plan.summary == "Drain user-events-consumer: 960,000 msgs, 10 tasks, ~30 s"
    assert plan.before["state"] == "Empty" and plan.before["partitions"][0]["lag"] == 900_000
    assert "Read 960,000 offsets in 10 ranges of at most 100,000" in plan.steps[0]
    assert plan.steps[2].startswith("Advance the group's offsets on 2 partition(s)")
    assert plan.preflight[1] == "the group is Empty (no consumers running)"


def test_the_plan_round_trips_through_json_and_gives_back_its_ranges() -> None:
    plan = build_plan(HOT, params(), now=1.0)
    again = Plan.from_json(plan.to_json())
    assert again == plan
    assert plan_ranges(again)[0] == OffsetRange("events", 0, 0, 100_000)
    assert plan_partitions(again)[1] == PartitionDrain("events", 2, 40_000, 40_000, 100_000)
    assert DrainParams.model_validate(again.params) == params()


def test_running_consumers_are_paused_and_restored_in_the_plan() -> None:
    active = verdict(pv(0, 0, 1_000), state=GroupState.STABLE, members=(Member("m-1", "c-1", "/10.0.0.1"),))
    plan = build_plan(active, params(workload=Workload(executor="kubernetes", name="ue")), now=0)
    assert plan.after["pause"] is True
    assert plan.steps[0] == ("Pause consumers: scale `ue` to 0 through the executor, wait until the group is Empty")
    assert plan.steps[-1] == "Restore `ue` to the replica count it had before the pause (also on failure)"
    assert "the group is Empty once its consumers are scaled to 0" in plan.preflight
    not_paused = build_plan(active, params(pause_consumers=False), now=0)
    assert not not_paused.after["pause"] and not_paused.preflight[1] == "the group is Empty (no consumers running)"


def test_the_plan_notes_uncommitted_and_deleted_partitions() -> None:
    odd = verdict(pv(0, None, 500, log_start=20), pv(1, 10, 500, log_start=100))
    plan = build_plan(odd, params(), now=0)
    notes = [s for s in plan.steps if s.startswith("Note")]
    assert notes == [
        "Note: events/0 has no committed offset: drained from the log start (20)",
        "Note: events/1: 90 messages were deleted by retention before the group read them; drained from the log "
        "start (100)",
    ]
    assert plan.after["lost"] == 90
    skipped = build_plan(odd, params(uncommitted="skip"), now=0)
    assert [p["partition"] for p in skipped.after["partitions"]] == [1]


def test_replay_plans_warn_that_chunks_of_a_partition_lose_their_order() -> None:
    plan = build_plan(HOT, params(sink="kafka:events-wide", manifest_dir="/var/lagbot"), now=0)
    assert plan.after["sink_kind"] == "replay"
    assert plan.after["manifest"].startswith("/var/lagbot/drain-user-events-consumer-")
    assert any("does not keep their order" in s for s in plan.steps)
    assert not any("order" in s for s in build_plan(HOT, params(sink="kafka:x", chunk=10_000_000), now=0).steps)


def test_topics_filter_and_refusals() -> None:
    two = verdict(pv(0, 0, 100), pv(0, 0, 50, topic="audit"))
    assert build_plan(two, params(topics=("audit",)), now=0).after["offsets"] == 50
    with pytest.raises(DrainError, match="does not consume nope"):
        build_plan(two, params(topics=("nope",)), now=0)
    broken = verdict(status=Status.ERR, error="coordinator down")
    with pytest.raises(DrainError, match="could not be read \\(coordinator down\\)"):
        build_plan(broken, params(), now=0)


def test_nothing_to_drain_is_a_plan_without_ranges() -> None:
    plan = build_plan(verdict(pv(0, 100, 100)), params(), now=0)
    assert plan.after["ranges"] == [] and plan.summary == "Drain user-events-consumer: nothing to drain"
    assert DrainRemediation().execute(plan, _no_context()).ok


def _no_context() -> Any:
    from lagbot.remediations.base import ExecutionContext

    return ExecutionContext()


def test_a_long_group_name_is_shortened_to_fit_a_button() -> None:
    long = verdict(pv(0, 0, 4_200_000), group="a-very-long-consumer-group-name-" * 4)
    assert len(build_plan(long, params(), now=0).summary) <= 75


def test_the_remediation_keeps_the_contract() -> None:
    drain = DrainRemediation()
    assert (drain.name, drain.risk, drain.Params) == ("drain", Risk.MEDIUM, DrainParams)
    assert drain.plan(HOT, params(), now=5.0) == build_plan(HOT, params(), now=5.0)


# ---------------------------------------------------------------------------------------------------
# 4. Params and settings
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "problem"),
    [
        ({"sink": ""}, "the sink is empty"),
        ({"sink": "kafka:two words"}, "is not a Kafka topic name"),
        ({"master": "mesos://m:5050"}, "is not a Spark master"),
        ({"chunk": 0}, "greater than or equal to 1"),
        ({"fail_after": 0}, "greater than or equal to 1"),
        ({"writer": "pandas"}, "Input should be 'auto', 'arrow' or 'spark'"),
        ({"surprise": 1}, "Extra inputs are not permitted"),
    ],
)
def test_bad_params_are_named(values: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        DrainParams(**{"sink": "/d", **values})


def test_params_from_settings() -> None:
    settings = DrainSettings(master="local[3]", chunk=7, sink="s3a://bucket/drains", task_rate=9.0, writer="arrow")
    p = DrainParams.from_settings(settings, sink=None)
    assert (p.sink, p.chunk, p.master, p.slots, p.task_rate) == ("s3a://bucket/drains", 7, "local[3]", 3, 9.0)
    assert p.writer == "arrow"
    p = DrainParams.from_settings(settings, sink="/x", chunk=None, master="yarn")
    assert (p.sink, p.chunk, p.master, p.slots) == ("/x", 7, "yarn", 2)
    assert DrainParams.from_settings(settings.model_copy(update={"parallelism": 64}), sink="/x").slots == 64


def test_local_slots() -> None:
    assert [local_slots(m, cpus=8) for m in ("local", "local[4]", "local[*]", "local[2,3]", "yarn")] == [
        1, 4, 8, 2, None
    ]  # fmt: skip


def test_sinks_parse() -> None:
    assert parse_sink("kafka:events-wide") == ReplaySink("events-wide")
    assert parse_sink("hdfs://nn:8020/drains/") == ParquetSink("hdfs://nn:8020/drains")
    assert parse_sink("relative/dir") == ParquetSink(str(Path.cwd() / "relative" / "dir"))
    with pytest.raises(SinkError, match="braces"):
        parse_sink("/data/{x}")
    assert manifest_url(ReplaySink("x"), manifest_dir="s3a://b/m/", group="g", plan_id="abc") == (
        "s3a://b/m/drain-g-abc.json"
    )


def test_drain_settings_are_one_field_of_the_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "lagbot.yaml"
    config.write_text(
        "clusters: [{name: prod, bootstrap_servers: 'k:9092'}]\n"
        "drain: {master: 'spark://m:7077', chunk: 20000, python_archive: venv.tar.gz, spark_conf: {a: b}}\n"
    )
    monkeypatch.setenv("LAGBOT_DRAIN__CHUNK", "30000")
    drain = load_settings(config).drain
    assert (drain.master, drain.chunk, drain.python_archive, drain.spark_conf) == (
        "spark://m:7077", 30_000, "venv.tar.gz", {"a": "b"}
    )  # fmt: skip
    config.write_text("clusters: [{name: prod, bootstrap_servers: 'k:9092'}]\ndrain: {master: 'mesos://m'}\n")
    monkeypatch.delenv("LAGBOT_DRAIN__CHUNK")
    with pytest.raises(ConfigError, match=r"lagbot.yaml: drain.master: 'mesos://m' is not a Spark master"):
        load_settings(config)


# ---------------------------------------------------------------------------------------------------
# 5. spark-submit, job config, manifest
# ---------------------------------------------------------------------------------------------------


def test_spark_submit_argv_ships_the_packed_venv_as_pyspark_documents() -> None:
    settings = DrainSettings(
        master="yarn", spark_submit="/opt/spark/bin/spark-submit", python_archive="hdfs:///envs/lagbot.tar.gz",
        spark_conf={"spark.executor.memory": "4g", "spark.yarn.queue": "ops"},
    )  # fmt: skip
    argv = spark_submit_argv(settings, config_file="/tmp/job.json", app_name="lagbot-drain-g")
    job = str(package_folder("lagbot.remediations.drain") / "job.py")
    assert argv == [
        "/opt/spark/bin/spark-submit", "--master", "yarn", "--deploy-mode", "client", "--name", "lagbot-drain-g",
        "--archives", "hdfs:///envs/lagbot.tar.gz#environment",
        "--conf", "spark.executor.memory=4g",
        "--conf", f"spark.pyspark.driver.python={sys.executable}",
        "--conf", "spark.pyspark.python=./environment/bin/python",
        "--conf", "spark.ui.showConsoleProgress=false",
        "--conf", "spark.yarn.queue=ops",
        job, "--config", "/tmp/job.json",
    ]  # fmt: skip


def test_spark_submit_argv_keeps_a_local_master_on_the_loopback() -> None:
    argv = spark_submit_argv(DrainSettings(master="local[2]"), config_file="/j.json")
    confs = {argv[i + 1] for i, a in enumerate(argv) if a == "--conf"}
    assert {"spark.driver.host=127.0.0.1", "spark.driver.bindAddress=127.0.0.1", "spark.ui.enabled=false"} <= confs
    assert "--archives" not in argv


def test_job_config_and_progress_round_trip() -> None:
    config = JobConfig("id", "c", "g", "/s", "/s/_lagbot/m.json", {"bootstrap.servers": "k:1"}, (r(0, 5),), 3.0, 2)
    assert JobConfig.from_json(config.to_json()) == config
    with pytest.raises(StoredFormatError, match="drain job config has format version 9; this lagbot reads 2"):
        JobConfig.from_json(json.dumps({"v": 9}))
    older = {**json.loads(config.to_json()), "v": 1, "ranges": [["t", 0, 0, 5]]}  # version 1: ranges as lists
    assert JobConfig.from_json(json.dumps(older)) == config
    progress = JobProgress(3, 10, 3_000, 2.0)
    assert JobProgress.from_json(progress.to_json()) == progress and progress.rate == 1_500.0
    unversioned = '{"ranges_done": 3, "ranges_total": 10, "messages": 3000, "elapsed": 2.0}'  # as printed before
    assert JobProgress.from_json(unversioned) == progress


def receipt(status: Any, count: int = 10, start: int = 0) -> RangeReceipt:
    return RangeReceipt("t", 0, start, start + 10, status, count, count * 5, start, start + count - 1)


def test_manifest_is_complete_only_when_every_range_is_written() -> None:
    written = Manifest("id", "c", "g", "/s", 1.0, 2.0, (receipt("written"), receipt("written", start=10)))
    assert written.complete and written.messages == 20 and written.total_bytes == 100
    partial = Manifest("id", "c", "g", "/s", 1.0, 2.0, (receipt("written"), receipt("failed", 3, start=10)))
    assert not partial.complete and partial.messages == 10 and len(partial.written()) == 1
    errored = Manifest("id", "c", "g", "/s", 1.0, 2.0, (receipt("written"),), error="manifest not durable")
    assert not errored.complete
    stored = json.loads(partial.to_json())
    assert (stored["v"], stored["complete"], stored["messages"]) == (1, False, 10)
    assert Manifest.from_json(partial.to_json()) == partial
    with pytest.raises(StoredFormatError, match="drain manifest has format version 2; this lagbot reads 1"):
        Manifest.from_json(json.dumps({**stored, "v": 2}))


# ---------------------------------------------------------------------------------------------------
# 6. Offsets: never backwards, never past unread data
# ---------------------------------------------------------------------------------------------------

PARTS = (PartitionDrain("t", 0, 100, 100, 500), PartitionDrain("t", 1, None, 0, 50, 0, "log_start_uncommitted"))


@pytest.mark.parametrize(
    ("current", "behind", "moves"),
    [
        # 1. unchanged since the plan: commit every end
        ({("t", 0): 100, ("t", 1): None}, [], {("t", 0): 500, ("t", 1): 50}),
        # 2. the group moved forward inside the range: still the end
        ({("t", 0): 300, ("t", 1): 10}, [], {("t", 0): 500, ("t", 1): 50}),
        # 3. the group is already past the end: leave it (never backwards)
        ({("t", 0): 700, ("t", 1): 50}, [], {}),
        # 4. moved back since the plan: [40, 100) was never read, so nothing may be committed
        ({("t", 0): 40, ("t", 1): None}, ["t/0 100 -> 40"], {("t", 0): 500, ("t", 1): 50}),
        # 5. its commit vanished (the group was deleted): the same danger
        ({("t", 1): None}, ["t/0 100 -> -"], {("t", 0): 500, ("t", 1): 50}),
    ],
    ids=["unchanged", "forward", "past-end", "moved-back", "vanished"],
)
def test_offsets_to_commit(
    current: dict[tuple[str, int], int | None], behind: list[str], moves: dict[tuple[str, int], int]
) -> None:
    assert moved_back(PARTS, current) == behind
    assert commits_for(PARTS, current) == moves


# ---------------------------------------------------------------------------------------------------
# 7. Verify
# ---------------------------------------------------------------------------------------------------


def test_verify_judges_the_checks_after_the_drain() -> None:
    plan = build_plan(HOT, params(), now=0)
    assert verify_drain(plan, []).progress is Progress.PENDING
    not_moved = verdict(pv(0, 0, 900_500), pv(1, 50_000, 50_000), pv(2, 40_000, 100_000))
    assert verify_drain(plan, [not_moved]).progress is Progress.NO_CHANGE
    improving = verdict(pv(0, 900_000, 905_000), pv(1, 50_000, 50_000), pv(2, 100_000, 100_100))
    assert verify_drain(plan, [improving]).progress is Progress.IMPROVING
    resolved = verdict(pv(0, 905_000, 905_000), pv(1, 50_000, 50_000), pv(2, 100_100, 100_100), severity=Severity.OK)
    assert verify_drain(plan, [improving, resolved]).progress is Progress.RESOLVED
    worse = verdict(pv(0, 900_000, 2_000_000), pv(1, 50_000, 50_000), pv(2, 100_000, 100_000))
    assert verify_drain(plan, [worse]).progress is Progress.WORSE
