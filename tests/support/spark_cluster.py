"""A real Spark standalone cluster on 127.0.0.1: one master and N workers, started from pyspark's own
`spark-class` (the classes `start-master.sh` and `start-worker.sh` run), in the foreground, so they are
ours to stop. Used by the distributed drain test and by bench/drain_standalone.py.

Every process binds the loopback (SPARK_LOCAL_IP and --host), on free ports; the master's web UI (on a free
port) is where readiness is read: /json/ lists the workers that registered.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import pyspark

from tests.support.waiting import wait_for

SPARK_CLASS = Path(pyspark.__file__).parent / "bin" / "spark-class"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


def free_ports(count: int) -> list[int]:
    """`count` distinct ports free on 127.0.0.1 now (held together while chosen, so never the same one twice)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def loopback_env() -> dict[str, str]:
    """The environment of every Spark process here: bound to the loopback, with this interpreter for Python."""
    return {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOCAL_HOSTNAME": "localhost"}


class StandaloneCluster:
    """`with StandaloneCluster(workdir, workers=2) as cluster:` -> cluster.url is spark://127.0.0.1:PORT."""

    def __init__(self, workdir: Path, *, workers: int = 2, cores: int = 1, memory: str = "1g") -> None:
        self.workdir = workdir
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.port, self.ui_port = free_ports(2)
        self.url = f"spark://127.0.0.1:{self.port}"
        self._processes: list[subprocess.Popen[bytes]] = []

    def worker_dir(self, index: int) -> Path:
        return self.workdir / f"worker-{index}"

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = (self.workdir / f"{name}.log").open("wb")
        process = subprocess.Popen(  # our own fixed argv, no shell
            [str(SPARK_CLASS), *argv], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=loopback_env(), start_new_session=True,
        )  # fmt: skip
        log.close()
        self._processes.append(process)

    def start(self, timeout: float = 180.0) -> Self:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._spawn("master", [MASTER_CLASS, "--host", "127.0.0.1", "--port", str(self.port),
                               "--webui-port", str(self.ui_port)])  # fmt: skip
        for index in range(self.workers):
            port, ui_port = free_ports(2)
            self.worker_dir(index).mkdir(exist_ok=True)
            self._spawn(f"worker-{index}", [
                WORKER_CLASS, "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui_port),
                "--cores", str(self.cores), "--memory", self.memory, "--work-dir", str(self.worker_dir(index)),
                self.url,
            ])  # fmt: skip
        self.wait_for_workers(timeout)
        return self

    def state(self) -> dict[str, Any] | None:
        """The master's /json/ view (workers, applications), or None while it does not answer."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=5) as response:
                return dict(json.loads(response.read()))
        except (urllib.error.URLError, OSError, ValueError):
            return None

    def wait_for_workers(self, timeout: float) -> None:
        def registered() -> bool:
            dead = [p.args for p in self._processes if p.poll() is not None]
            if dead:
                raise RuntimeError(f"a Spark process exited while starting: {dead[0]} (logs in {self.workdir})")
            state = self.state()
            return state is not None and state.get("aliveworkers") == self.workers

        what = f"{self.workers} Spark workers to register (logs in {self.workdir})"
        wait_for(what, registered, timeout, every=0.5, error=TimeoutError)

    def stop(self) -> None:
        for process in reversed(self._processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self._processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
        self._processes.clear()

    def __enter__(self) -> Self:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
