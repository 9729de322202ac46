"""The executor image's entrypoint (deploy/spark/executor-entrypoint.sh) runs a drain's tasks for a Connect server.

On Kubernetes the Spark Connect server's driver starts each executor pod with the argument `executor` and its
settings in the environment (the names Spark's Kubernetes backend sets). Here the same script is started by hand
with that environment, against a real Spark Connect server whose standalone master has no worker: the script's
executor is the only one, so every task of the drain ran in it. Checked: every offset exactly once in the sink
(read with pyarrow), the group's offsets advanced (read back from the broker), the executor's own log.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lagbot.remediations.base import ExecutionContext
from lagbot.remediations.drain.params import DrainParams
from lagbot.remediations.drain.remediation import DrainRemediation
from tests.conftest import Kafka, Names
from tests.support.bot_process import wait_for
from tests.support.drain_rig import exactly_once, fill, parquet_rows, verdict_of
from tests.support.group_commits import committed
from tests.support.spark_cluster import StandaloneCluster, free_ports, loopback_env
from tests.support.spark_connect import ConnectServer

pytestmark = pytest.mark.integration

ENTRYPOINT = Path(__file__).resolve().parents[2] / "deploy" / "spark" / "executor-entrypoint.sh"


@pytest.fixture(scope="module")
def driver_port() -> int:
    [port] = free_ports(1)
    return port


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, driver_port: int) -> Iterator[tuple[ConnectServer, str]]:
    """A Connect server on a standalone master without workers, and its application's id."""
    work = tmp_path_factory.mktemp("spark-entrypoint")
    with (
        StandaloneCluster(work / "cluster", workers=0) as cluster,
        ConnectServer(work / "connect", cluster.url, conf={"spark.driver.port": str(driver_port)}) as running,
    ):
        apps = wait_for(
            "the Connect server's application to register", lambda: (cluster.state() or {}).get("activeapps"), 60
        )
        yield running, apps[0]["id"]


def pod_environment(driver_port: int, application: str) -> dict[str, str]:
    """What Spark's Kubernetes backend puts in an executor pod's environment (one executor, 2 cores)."""
    return {
        **loopback_env(),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}/usr/bin{os.pathsep}/bin",  # spark-class, as in the image
        "SPARK_DRIVER_URL": f"spark://CoarseGrainedScheduler@127.0.0.1:{driver_port}",
        "SPARK_EXECUTOR_ID": "1",
        "SPARK_EXECUTOR_CORES": "2",
        "SPARK_EXECUTOR_MEMORY": "512m",
        "SPARK_APPLICATION_ID": application,
        "SPARK_EXECUTOR_POD_IP": "127.0.0.1",
        "SPARK_EXECUTOR_POD_NAME": "lagbot-drain-exec-1",
        "SPARK_RESOURCE_PROFILE_ID": "0",
        "SPARK_JAVA_OPT_0": f"-Dspark.driver.port={driver_port}",
        "PYSPARK_PYTHON": sys.executable,
    }


@pytest.fixture
def executor(server: tuple[ConnectServer, str], driver_port: int, tmp_path: Path) -> Iterator[Path]:
    """The entrypoint started as a pod would be; its log file. Stopped (its process group) at teardown."""
    log = tmp_path / "executor.log"
    with log.open("wb") as out:
        process = subprocess.Popen(  # our own fixed argv, no shell
            ["sh", str(ENTRYPOINT), "executor"], stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=pod_environment(driver_port, server[1]), start_new_session=True,
        )  # fmt: skip
    try:
        yield log
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def test_other_arguments_run_as_given(tmp_path: Path) -> None:
    done = subprocess.run(["sh", str(ENTRYPOINT), "echo", "a shell"], capture_output=True, text=True, timeout=30)
    assert (done.returncode, done.stdout) == (0, "a shell\n")


def test_the_entrypoints_executor_runs_every_task_of_a_drain_through_connect(
    kafka: Kafka, names: Names, server: tuple[ConnectServer, str], executor: Path, tmp_path: Path, driver_port: int
) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 2)
    fill(kafka.bootstrap, topic, {0: 5_000, 1: 1_000})
    kafka.commit(group, {(topic, 0): 500, (topic, 1): 0})
    sink = tmp_path / "drained"
    params = DrainParams(sink=str(sink), master=server[0].url, chunk=1_500)
    plan = DrainRemediation().plan(verdict_of(kafka, group), params, now=time.time())
    context = ExecutionContext(admin=kafka.admin, progress=[].append,
                               kafka_config={"bootstrap.servers": kafka.bootstrap})  # fmt: skip

    outcome = DrainRemediation().execute(plan, context)

    assert outcome.ok, outcome.detail
    exactly_once(parquet_rows(sink), {0: range(500, 5_000), 1: range(1_000)})
    assert committed(kafka, group, topic, 2) == {0: 5_000, 1: 1_000}
    text = executor.read_text()
    assert f"Picked up JAVA_TOOL_OPTIONS: -Dspark.driver.port={driver_port}" in text  # SPARK_JAVA_OPT_0 reached it
    # 3 ranges of partition 0 ([500, 5000) by 1,500) and 1 of partition 1, then one task clearing older cuts and
    # one writing the manifest: every task of the drain ran in the entrypoint's executor.
    assert "KubernetesExecutorBackend" in text.split("Got assigned task")[0]  # the backend Kubernetes pods run
    assert text.count("Got assigned task") == 6
    assert text.count("Executor: Finished task") == 6
