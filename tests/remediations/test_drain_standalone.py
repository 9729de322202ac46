"""The distributed path of the drain: `lagbot drain --master spark://...` on a real Spark standalone cluster.

A master and two workers (pyspark's own spark-class, on 127.0.0.1) run the job's tasks in their executors;
lagbot only submits it (spark-submit, client mode) and commits. What is checked is read back from the broker
(committed offsets) and from the Parquet files (with pyarrow), and from the workers' own directories: both ran
an executor of the drain.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.conftest import Kafka, Names
from tests.support.drain_rig import exactly_once, fill, parquet_rows
from tests.support.group_commits import committed
from tests.support.spark_cluster import StandaloneCluster, loopback_env

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    with StandaloneCluster(tmp_path_factory.mktemp("spark-standalone"), workers=2, cores=1, memory="1g") as running:
        yield running


def write_config(path: Path, bootstrap: str, master: str) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "clusters": [{"name": "local", "bootstrap_servers": bootstrap}],
                "drain": {
                    "master": master,
                    "parallelism": 2,
                    "spark_conf": {"spark.ui.enabled": "false", "spark.executor.memory": "512m",
                                   "spark.cores.max": "2"},
                },
            }
        )
    )  # fmt: skip
    return path


def test_the_drain_runs_on_a_standalone_cluster_exactly_once_and_advances_the_group(
    kafka: Kafka, names: Names, cluster: StandaloneCluster, tmp_path: Path
) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 2)
    fill(kafka.bootstrap, topic, {0: 16_000, 1: 4_000})
    kafka.commit(group, {(topic, 0): 1_000, (topic, 1): 0})
    sink = tmp_path / "drained"
    config = write_config(tmp_path / "lagbot.yaml", kafka.bootstrap, cluster.url)

    result = subprocess.run(
        [sys.executable, "-m", "lagbot.cli.main", "drain", "-c", str(config), "-g", group, "--sink", str(sink),
         "--chunk", "2500"],
        capture_output=True, text=True, timeout=420, check=False, env=loopback_env(),
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert f"drained 19,000 messages of {group} in 8 ranges" in result.stdout
    exactly_once(parquet_rows(sink), {0: range(1_000, 16_000), 1: range(4_000)})
    assert committed(kafka, group, topic, 2) == {0: 16_000, 1: 4_000}
    # The tasks ran on the cluster: each worker started an executor for the application.
    for index in range(2):
        applications = list(cluster.worker_dir(index).glob("app-*"))
        assert len(applications) == 1, f"worker {index} ran {len(applications)} applications"
        assert [p.name for p in applications[0].iterdir() if p.is_dir()], f"worker {index} started no executor"
    state = cluster.state()
    assert state is not None
    assert [app["name"] for app in state["completedapps"]] == [f"lagbot-drain-{group}"]
