"""A real Spark Connect server on 127.0.0.1: pyspark's own spark-submit running the class that
`sbin/start-connect-server.sh` runs, in the foreground, so it is ours to stop. Its master is a standalone
cluster of tests/support/spark_cluster.py (or local[N]); its driver runs the drain's job, its executors the tasks.
Used by the Spark Connect drain test and by bench/drain_connect.py and bench/drain_thin_client.py, with
`no_java_env`: the environment of their lagbot process, which cannot start a JVM.

It binds the loopback only (`spark.connect.grpc.binding.address`, SPARK_LOCAL_IP), on a free port; it is
ready when it says its gRPC service listens on that port (a failed bind is retried on another).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from types import TracebackType
from typing import Self

import pyspark

from tests.support.spark_cluster import free_ports, loopback_env
from tests.support.waiting import wait_for

SPARK_SUBMIT = Path(pyspark.__file__).parent / "bin" / "spark-submit"
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


def no_java_env(workdir: Path) -> dict[str, str]:
    """The environment of a process that cannot start a JVM: JAVA_HOME is an empty directory, PATH has nothing."""
    empty = workdir / "no-java"
    (empty / "bin").mkdir(parents=True, exist_ok=True)
    return {**loopback_env(), "JAVA_HOME": str(empty), "PATH": str(empty / "bin")}


class ConnectServer:
    """`with ConnectServer(workdir, master) as server:` -> server.url is sc://127.0.0.1:PORT."""

    def __init__(self, workdir: Path, master: str, *, conf: dict[str, str] | None = None) -> None:
        self.workdir = workdir
        self.master = master
        [self.port] = free_ports(1)
        self.url = f"sc://127.0.0.1:{self.port}"
        self.conf = {
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(self.port),
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.ui.enabled": "false",
            "spark.pyspark.python": sys.executable,  # the executors' Python workers import lagbot from here
            **(conf or {}),
        }
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def log(self) -> Path:
        return self.workdir / "connect-server.log"

    def argv(self) -> list[str]:
        argv = [str(SPARK_SUBMIT), "--class", SERVER_CLASS, "--name", "lagbot-spark-connect", "--master", self.master]
        for key in sorted(self.conf):
            argv += ["--conf", f"{key}={self.conf[key]}"]
        return argv

    def start(self, timeout: float = 180.0, attempts: int = 3) -> Self:
        """Start the server and wait until it says its gRPC service listens on our port.

        The port is free when chosen but the server binds it seconds later, after its Spark driver took ports of
        its own: one of those can be ours (then the gRPC bind fails and the server exits, while something else
        answers on the port). So readiness is the server's own line, and a failed bind is retried on a new port.
        """
        for _ in range(attempts):
            self.workdir.mkdir(parents=True, exist_ok=True)
            with self.log.open("wb") as log:
                self.process = subprocess.Popen(  # our own fixed argv, no shell
                    self.argv(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    env={**loopback_env(), "PYSPARK_PYTHON": sys.executable}, start_new_session=True,
                )  # fmt: skip
            if self._started(timeout):
                return self
            self.stop()
            self._new_port()
        raise RuntimeError(f"the Spark Connect server could not bind a port in {attempts} attempts (log: {self.log})")

    def _started(self, timeout: float) -> bool:
        """True once the server says it listens on our port; False when its bind failed; raises on anything else."""
        assert self.process is not None
        process, ready = self.process, f"Spark Connect server started at: 127.0.0.1:{self.port}"

        def outcome() -> str | None:
            text = self.log.read_text(errors="replace")
            if ready in text and process.poll() is None:
                return "listening"
            if "BindException" in text or "Failed to bind" in text:
                return "bind failed"
            if process.poll() is not None:
                raise RuntimeError(f"the Spark Connect server exited with {process.returncode} (log: {self.log})")
            return None

        what = f"the Spark Connect server to listen (log: {self.log})"
        return wait_for(what, outcome, timeout, every=0.5, error=TimeoutError) == "listening"

    def _new_port(self) -> None:
        [self.port] = free_ports(1)
        self.url = f"sc://127.0.0.1:{self.port}"
        self.conf["spark.connect.grpc.binding.port"] = str(self.port)

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)

    def __enter__(self) -> Self:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
