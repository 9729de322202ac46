"""The drain through Spark Connect: `lagbot drain --master sc://...`, lagbot a thin client, no JVM on its side.

A real Spark Connect server (pyspark's spark-submit running SparkConnectServer, 127.0.0.1) whose master is a
real standalone cluster (a master and two workers from pyspark's spark-class) runs the driver and the tasks.
The lagbot process is run with no Java at all (an empty JAVA_HOME, nothing on PATH): a JVM it tried to start
could not start, so a drain that succeeds started none; nor can it import what `pyspark-client` (the drain-connect
extra) does not ship (tests/support/thin_client.py). What is checked is read back from the broker
(committed offsets), from the Parquet files (with pyarrow) and from the workers' own directories.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml
from pyspark.sql.utils import is_remote

from lagbot.remediations.base import ExecutionContext
from lagbot.remediations.drain.context import DrainContext
from lagbot.remediations.drain.params import DrainParams
from lagbot.remediations.drain.plan import Manifest
from lagbot.remediations.drain.remediation import DrainRemediation
from tests.conftest import Kafka, Names
from tests.support.drain_rig import exactly_once, fill, parquet_rows, verdict_of
from tests.support.group_commits import committed
from tests.support.spark_cluster import StandaloneCluster
from tests.support.spark_connect import ConnectServer, no_java_env
from tests.support.thin_client import thin_argv

pytestmark = pytest.mark.integration

EXECUTORS = {"spark.executor.memory": "512m", "spark.cores.max": "2"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    with StandaloneCluster(tmp_path_factory.mktemp("spark-standalone"), workers=2, cores=1, memory="1g") as running:
        yield running


@pytest.fixture(scope="module")
def server(cluster: StandaloneCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectServer]:
    with ConnectServer(tmp_path_factory.mktemp("spark-connect"), cluster.url, conf=EXECUTORS) as running:
        yield running


def test_a_process_with_that_environment_cannot_start_a_jvm(tmp_path: Path) -> None:
    """The premise of the next test: PySpark's classic session (the gateway JVM) fails to start there."""
    start = "from pyspark.sql import SparkSession; SparkSession.builder.master('local[1]').getOrCreate()"
    result = subprocess.run([sys.executable, "-c", start], capture_output=True, text=True, timeout=120, check=False,
                            env=no_java_env(tmp_path))  # fmt: skip
    assert result.returncode == 1
    assert "[JAVA_GATEWAY_EXITED]" in result.stderr


@pytest.mark.timeout(480)  # the drain's own process may take its 420 s (a fresh clone at load 10-14 took over 300)
def test_the_drain_runs_through_spark_connect_exactly_once_without_a_jvm_in_lagbot(
    kafka: Kafka, names: Names, server: ConnectServer, cluster: StandaloneCluster, tmp_path: Path
) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 2)
    fill(kafka.bootstrap, topic, {0: 16_000, 1: 4_000})
    kafka.commit(group, {(topic, 0): 1_000, (topic, 1): 0})
    sink = tmp_path / "drained"
    config = tmp_path / "lagbot.yaml"
    config.write_text(yaml.safe_dump({
        "clusters": [{"name": "local", "bootstrap_servers": kafka.bootstrap}],
        "drain": {"master": server.url, "parallelism": 2},
    }))  # fmt: skip

    # No Java, and none of PySpark's JVM side (py4j, pyspark.core: what pyspark-client does not ship).
    result = subprocess.run(
        thin_argv("from lagbot.cli.main import main; main()", "drain", "-c", str(config), "-g", group, "--sink",
                  str(sink), "--chunk", "2500"),
        capture_output=True, text=True, timeout=420, check=False, env=no_java_env(tmp_path),
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert f"drained 19,000 messages of {group} in 8 ranges" in result.stdout
    exactly_once(parquet_rows(sink), {0: range(1_000, 16_000), 1: range(4_000)})
    assert committed(kafka, group, topic, 2) == {0: 16_000, 1: 4_000}
    [manifest_file] = (sink / "_lagbot").glob(f"drain-{group}-*.json")
    manifest = Manifest.from_json(manifest_file.read_text())
    assert manifest.complete and manifest.messages == 19_000 and len(manifest.ranges) == 8
    # The tasks ran on the cluster, under the Connect server's one application: an executor on each worker.
    for index in range(2):
        [application] = list(cluster.worker_dir(index).glob("app-*"))
        assert [p.name for p in application.iterdir() if p.is_dir()], f"worker {index} started no executor"
    state = cluster.state()
    assert state is not None
    assert [app["name"] for app in state["activeapps"]] == ["lagbot-spark-connect"]


def test_a_failed_range_commits_nothing_and_a_replanned_rerun_is_exactly_once(
    kafka: Kafka, names: Names, server: ConnectServer, tmp_path: Path
) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 1)
    fill(kafka.bootstrap, topic, {0: 6_000})
    kafka.commit(group, {(topic, 0): 0})
    sink = tmp_path / "drained"
    lines: list[str] = []
    progress: list[Any] = []
    context = DrainContext(
        admin=kafka.admin, progress=lines.append,
        kafka_config={"bootstrap.servers": kafka.bootstrap}, on_progress=progress.append,
    )  # fmt: skip
    drain = DrainRemediation()

    # chunk 4,000: [0, 4000) fails after 3,000 messages (fault injection), [4000, 6000) completes.
    failing = DrainParams(sink=str(sink), master=server.url, chunk=4_000, fail_after=3_000)
    first = drain.plan(verdict_of(kafka, group), failing, now=time.time())
    outcome = drain.execute(first, context)

    assert not outcome.ok and "1 of 2 ranges failed: InjectedFailure" in outcome.detail
    assert committed(kafka, group, topic, 1) == {0: 0}
    stored = Manifest.from_json(Path(first.after["manifest"]).read_text())
    assert [(r.start, r.end, r.status) for r in stored.ranges] == [(0, 4_000, "failed"), (4_000, 6_000, "written")]
    exactly_once(parquet_rows(sink), {0: range(4_000, 6_000)})
    assert progress[-1].ranges_done == 2 and progress[-1].ranges_total == 2

    # Re-planned with another cut: [0, 3000) and [3000, 6000) replace [4000, 6000) instead of duplicating it.
    rerun = drain.plan(verdict_of(kafka, group), DrainParams(sink=str(sink), master=server.url, chunk=3_000),
                       now=time.time())  # fmt: skip
    outcome = drain.execute(rerun, context)

    assert outcome.ok, outcome.detail
    exactly_once(parquet_rows(sink), {0: range(6_000)})
    assert sorted(p.name for p in (sink / f"topic={topic}" / "partition=0").iterdir()) == [
        f"offset_range={0:020d}-{3_000:020d}",
        f"offset_range={3_000:020d}-{6_000:020d}",
    ]
    assert committed(kafka, group, topic, 1) == {0: 6_000}
    assert json.loads(Path(rerun.after["manifest"]).read_text())["messages"] == 6_000
    # PySpark marks a process that made a Connect session as Connect-only; the drain puts that back, so a
    # local[N] drain of the same process still gets a classic session.
    assert not is_remote()


def test_two_drains_at_once_each_have_their_own_session(kafka: Kafka, names: Names, server: ConnectServer,
                                                        tmp_path: Path) -> None:  # fmt: skip
    """The bot may drain two groups at the same time: the first to finish stops only its own session."""
    topic = names("topic")
    kafka.create_topic(topic, 2)
    fill(kafka.bootstrap, topic, {0: 3_000, 1: 9_000})
    groups = [names("group"), names("group")]
    for group in groups:
        kafka.commit(group, {(topic, 0): 0, (topic, 1): 0})
    context = ExecutionContext(admin=kafka.admin, progress=[].append,
                               kafka_config={"bootstrap.servers": kafka.bootstrap})  # fmt: skip
    plans = [
        DrainRemediation().plan(verdict_of(kafka, group), DrainParams(sink=str(tmp_path / group), master=server.url,
                                                                      chunk=3_000), now=time.time())
        for group in groups
    ]  # fmt: skip

    with ThreadPoolExecutor(max_workers=2) as pool:
        outcomes = list(pool.map(lambda plan: DrainRemediation().execute(plan, context), plans))

    assert [(o.ok, o.data["messages"]) for o in outcomes] == [(True, 12_000), (True, 12_000)], outcomes
    for group in groups:
        exactly_once(parquet_rows(tmp_path / group), {0: range(3_000), 1: range(9_000)})
        assert committed(kafka, group, topic, 2) == {0: 3_000, 1: 9_000}
    assert not is_remote()  # whichever finished last, the process is not left in Connect-only mode


def test_a_drain_past_its_job_timeout_is_interrupted_on_the_server_and_commits_nothing(
    kafka: Kafka, names: Names, server: ConnectServer, tmp_path: Path
) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 1)
    fill(kafka.bootstrap, topic, {0: 20_000})
    kafka.commit(group, {(topic, 0): 0})
    sink = tmp_path / "drained"
    params = DrainParams(sink=str(sink), master=server.url, chunk=5_000, job_timeout=0.5)
    plan = DrainRemediation().plan(verdict_of(kafka, group), params, now=time.time())
    context = ExecutionContext(admin=kafka.admin, progress=[].append,
                               kafka_config={"bootstrap.servers": kafka.bootstrap})  # fmt: skip

    started = time.monotonic()
    outcome = DrainRemediation().execute(plan, context)

    assert not outcome.ok
    assert outcome.detail.endswith("ranges written: interrupted after 0.5 s (drain.job_timeout); nothing was committed")
    assert committed(kafka, group, topic, 1) == {0: 0}
    stored = Manifest.from_json(Path(plan.after["manifest"]).read_text())
    assert stored.error == "interrupted after 0.5 s (drain.job_timeout)"
    # Interrupted before it finished: what the manifest calls written is on disk, and some range is not.
    assert "not_written" in [r.status for r in stored.ranges]
    for r in stored.written():
        assert (sink / f"topic={topic}" / "partition=0" / f"offset_range={r.range.label}").is_dir()
    assert time.monotonic() - started < 60
