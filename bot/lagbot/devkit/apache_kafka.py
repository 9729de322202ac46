"""Apache Kafka itself for the tests, `make kafka-up` and `make demo`: fetched with Maven, run on 127.0.0.1.

The version is pinned in `tools/kafka/pom.xml` and nowhere else. `fetch()` asks Maven to copy the broker
(`kafka_2.13`), its tools (`kafka-tools`: ConsumerGroupCommand) and their dependencies into
`.kafka/<version>/libs` (git-ignored, reused by every later run). `ApacheKafka` starts a single-node KRaft
broker from those jars: storage formatted once per start, replication factors 1, no initial rebalance delay,
no JMX port, a PLAINTEXT listener and a SASL/PLAIN one, each on a free loopback port.

Like `lagbot.devkit.embedded`, this is a development runtime, never used by the product's checks. Command line:
`python -m lagbot.devkit.apache_kafka fetch | up | down | groups ARGS...` (the Makefile's kafka-* targets).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any, Self

from lagbot.devkit.embedded import EmbeddedBroker, EmbeddedError, _Service, _wait_for_port, free_port

PROJECT_ROOT = Path(__file__).resolve().parents[3]  # bot/lagbot/devkit/ -> the checkout
POM = PROJECT_ROOT / "tools" / "kafka" / "pom.xml"
CACHE = Path(os.environ.get("LAGBOT_KAFKA_CACHE", PROJECT_ROOT / ".kafka"))
RUN_DIR = Path(os.environ.get("LAGBOT_KAFKA_RUN", CACHE / "run"))  # where `make kafka-up` keeps its broker
GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
SASL_USER = "lagbot"
MIN_JAVA = 17
OFFSETS_PARTITIONS = 4
JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
"""How every JVM started here runs (the broker, its storage tool, ConsumerGroupCommand): the C1 compiler only and
the serial collector. A development broker on the loopback lives minutes and carries test traffic, where C2's
compilations and G1's threads were most of its CPU: measured on 2 cores, a broker used 5.6 CPU-seconds to start
instead of 9 and a ConsumerGroupCommand 1.8 instead of 2.8 (docs/development.md). The test suite's Spark processes
run the same way (tests/conftest.py). The benches keep Apache Kafka's own defaults where they time its tools."""


class KafkaSetupError(EmbeddedError):
    """Apache Kafka cannot be fetched or started here; the message says what to install or fix."""


def pinned_version(pom: Path = POM) -> str:
    """The Apache Kafka version pinned in the pom (`<kafka.version>`)."""
    if not pom.is_file():
        raise KafkaSetupError(f"no {pom.relative_to(PROJECT_ROOT)}: Apache Kafka is fetched from a lagbot checkout")
    namespace = {"m": "http://maven.apache.org/POM/4.0.0"}
    found = ElementTree.parse(pom).getroot().find("m:properties/m:kafka.version", namespace)
    if found is None or not (found.text or "").strip():
        raise KafkaSetupError(f"{pom} pins no <kafka.version>")
    return (found.text or "").strip()


def libs_dir() -> Path:
    return CACHE / pinned_version() / "libs"


def fetched() -> bool:
    """True when the pinned version's jars are complete in the cache (a fetch cut short does not count)."""
    try:
        return (libs_dir() / ".complete").is_file()
    except KafkaSetupError:
        return False


def _java_major(java: str) -> int:
    completed = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30, check=False)
    match = re.search(r'version "(\d+)(?:\.(\d+))?', completed.stderr + completed.stdout)
    if match is None:
        return 0
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def java_binary() -> str:
    """`$JAVA_HOME/bin/java`, else `java` from PATH, checked to be Java 17 or newer."""
    home = Path(os.environ.get("JAVA_HOME") or "/nonexistent")
    java = str(home / "bin" / "java") if (home / "bin" / "java").is_file() else shutil.which("java")
    if java is None:
        raise KafkaSetupError(
            f"Apache Kafka needs Java {MIN_JAVA} or newer and there is none: install a JDK "
            "(Debian: apt install openjdk-17-jdk-headless) or set JAVA_HOME"
        )
    major = _java_major(java)
    if major < MIN_JAVA:
        raise KafkaSetupError(f"Apache Kafka needs Java {MIN_JAVA} or newer; {java} is Java {major or 'unknown'}")
    return java


def fetch(quiet: bool = False) -> Path:
    """Copy the pinned Apache Kafka and its dependencies into the cache with Maven, once; returns the libs folder."""
    libs = libs_dir()
    if fetched():
        return libs
    java_binary()
    mvn = shutil.which("mvn")
    if mvn is None:
        raise KafkaSetupError("fetching Apache Kafka needs Maven and there is none: install it (apt install maven)")
    staging = libs.with_name("libs.partial")
    shutil.rmtree(staging, ignore_errors=True)
    argv = [
        mvn,
        "-q",
        "-B",
        "-f",
        str(POM),
        "dependency:copy-dependencies",
        f"-DoutputDirectory={staging}",
        f"-Dmaven.repo.local={CACHE / 'm2'}",
    ]
    if not quiet:
        print(f"fetching Apache Kafka {pinned_version()} with Maven into {libs} ...", file=sys.stderr)
    completed = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False)
    if completed.returncode != 0:
        tail = "\n".join((completed.stdout + completed.stderr).strip().splitlines()[-15:])
        version = pinned_version()
        raise KafkaSetupError(f"Maven could not fetch Apache Kafka {version} (exit {completed.returncode}):\n{tail}")
    shutil.rmtree(libs, ignore_errors=True)
    staging.rename(libs)
    (libs / ".complete").write_text(pinned_version() + "\n")
    return libs


def require_fetched() -> Path:
    if not fetched():
        raise KafkaSetupError("Apache Kafka is not fetched yet: run `make kafka-fetch` (Maven, once)")
    return libs_dir()


def _cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding (as `StorageTool random-uuid`).

    Never one that starts with '-' (1 in 64 do): the storage tool would read it as an option and fail, as
    Kafka's own Uuid.randomUuid avoids it.
    """
    while True:
        found = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not found.startswith("-"):
            return found


def _distinct_ports(count: int) -> list[int]:
    ports: list[int] = []
    while len(ports) < count:
        port = free_port()
        if port not in ports:
            ports.append(port)
    return ports


def server_properties(data_dir: Path, port: int, sasl_port: int, controller_port: int, password: str) -> str:
    """The single-node KRaft configuration: every listener on 127.0.0.1, everything replicated once."""
    jaas = f'org.apache.kafka.common.security.plain.PlainLoginModule required user_{SASL_USER}="{password}";'
    lines = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@127.0.0.1:{controller_port}",
        "listeners": (
            f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl_port},CONTROLLER://127.0.0.1:{controller_port}"
        ),
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas,
        "log.dirs": str(data_dir / "log"),
        "num.partitions": "1",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS),
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "4",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        "group.consumer.min.session.timeout.ms": "6000",
        "group.consumer.session.timeout.ms": "6000",
        "group.consumer.heartbeat.interval.ms": "1000",
        "group.consumer.min.heartbeat.interval.ms": "1000",
        "auto.create.topics.enable": "false",
        "log.segment.bytes": str(1 << 20),
        "log.retention.check.interval.ms": "1000",
        # How long a deleted segment's files stay on disk (its offsets are gone at once either way). The broker's
        # file-deletion task runs again after this delay even with nothing to delete: at 0 it ran back to back and
        # doubled an idle broker's CPU (6 CPU-seconds a minute instead of 3.5).
        "log.segment.delete.delay.ms": "1000",
        # The controller appends a no-op record to the metadata log this often when nothing else changes, each one
        # written and flushed: every 5 s instead of 0.5 s takes a third off an idle broker's CPU.
        "metadata.max.idle.interval.ms": "5000",
    }
    return "".join(f"{key}={value}\n" for key, value in lines.items())


def _java_string_hash(text: str) -> int:
    """Java's String.hashCode (for BMP characters), as a signed 32-bit integer."""
    value = 0
    for char in text:
        value = (31 * value + ord(char)) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def probe_groups(partitions: int) -> list[str]:
    """One group id per __consumer_offsets partition: Kafka's abs(hashCode) % partitions places a group."""
    found: dict[int, str] = {}
    for index in range(10_000):
        group = f"lagbot-ready-{index}"
        hashed = _java_string_hash(group)
        found.setdefault((0 if hashed == -(1 << 31) else abs(hashed)) % partitions, group)
        if len(found) == partitions:
            break
    return [found[p] for p in sorted(found)]


LOG4J2 = """\
status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.stdout.ref = STDOUT
logger.server.name = kafka.server.KafkaRaftServer
logger.server.level = INFO
"""


class ApacheKafka(_Service):
    """A single-node KRaft Apache Kafka on 127.0.0.1: `bootstrap` (PLAINTEXT) and `sasl_bootstrap` (SASL/PLAIN)."""

    name = "kafka"
    # Measured: SIGTERM runs the controlled shutdown (about 1-3 s for a single node); SIGKILL after 5 s.
    stop_signal = signal.SIGTERM

    def __init__(self, workdir: Path | None = None, sasl_password: str = "lagbot-secret") -> None:
        super().__init__()
        self._workdir = workdir
        self._owns_workdir = workdir is None
        self.sasl_port = 0
        self.controller_port = 0
        self.sasl_user = SASL_USER
        self.sasl_password = sasl_password

    @property
    def workdir(self) -> Path:
        if self._workdir is None:
            self._workdir = Path(tempfile.mkdtemp(prefix="lagbot-kafka-"))
        return self._workdir

    def start(self, timeout: float = 120.0) -> Self:
        java, libs = java_binary(), require_fetched()
        classpath = f"{libs}/*"
        self.port, self.sasl_port, self.controller_port = _distinct_ports(3)
        properties = self.workdir / "server.properties"
        properties.write_text(
            server_properties(self.workdir, self.port, self.sasl_port, self.controller_port, self.sasl_password)
        )
        (self.workdir / "log4j2.properties").write_text(LOG4J2)
        self._format(java, classpath, properties)
        return self._launch(java, classpath, timeout)

    def halt(self) -> None:
        """Stop the broker process (controlled shutdown) but keep its ports and data for `resume()`."""
        _Service.stop(self)

    def resume(self, timeout: float = 120.0, *, wait_ready: bool = True) -> Self:
        """Start the broker again after `halt()`: the same ports, the same data directory, no re-format.

        With `wait_ready=False` it returns as soon as the listeners accept connections, before the group
        coordinators have loaded (what clients see right after a broker restart).
        """
        if self.running or not (self.workdir / "server.properties").is_file():
            raise KafkaSetupError("resume() restarts a broker stopped with halt()")
        return self._launch(java_binary(), f"{require_fetched()}/*", timeout, wait_ready=wait_ready)

    def _launch(self, java: str, classpath: str, timeout: float, *, wait_ready: bool = True) -> Self:
        properties = self.workdir / "server.properties"
        log4j = self.workdir / "log4j2.properties"
        argv = [
            java,
            "-Xms256m",
            "-Xmx768m",
            *JVM_OPTIONS,
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={log4j}",
            "-cp",
            classpath,
            "kafka.Kafka",
            str(properties),
        ]
        started = time.monotonic()
        self._spawn(argv, timeout)
        if self._process is not None:
            _wait_for_port(self.sasl_port, self._process, self.name, max(1.0, timeout - (time.monotonic() - started)))
        if not wait_ready:
            return self
        self._wait_metadata(timeout - (time.monotonic() - started))
        self._wait_group_coordinators(timeout - (time.monotonic() - started))
        return self

    def _format(self, java: str, classpath: str, properties: Path) -> None:
        argv = [java, *JVM_OPTIONS, "-cp", classpath, "kafka.tools.StorageTool", "format", "-t", _cluster_id()]
        argv += ["-c", str(properties)]
        completed = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
        if completed.returncode != 0:
            output = (completed.stdout + completed.stderr).strip()
            raise KafkaSetupError(f"formatting the Kafka storage failed: {output}")

    def _wait_metadata(self, timeout: float) -> None:
        """Wait until the broker answers Metadata with itself in it (the controller has unfenced it)."""
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        deadline = time.monotonic() + max(timeout, 1.0)
        while time.monotonic() < deadline:
            try:
                if admin.list_topics(timeout=2).brokers:
                    return
            except Exception:  # a broker still starting answers with errors; retried until the deadline
                time.sleep(0.2)
        tail = self.log_tail()
        raise KafkaSetupError(f"Apache Kafka on {self.bootstrap} gave no metadata within the timeout:\n{tail}")

    def _wait_group_coordinators(self, timeout: float) -> None:
        """Wait until the group coordinator of every __consumer_offsets partition answers OffsetFetch.

        Measured: right after start, the first group requests get NOT_COORDINATOR (AlterConsumerGroupOffsets,
        per partition, not raised) or COORDINATOR_LOAD_IN_PROGRESS (OffsetFetch) while the offsets topic is
        created and loaded. One probe group per offsets partition (Kafka places a group by its id's hash).
        The probe is a consumer's `committed()`, never an AdminClient's ListConsumerGroupOffsets: measured
        with librdkafka 2.16.0, an admin client's OffsetFetch answered with a coordinator error crashes the
        process (SIGSEGV in rd_kafka_cgrp_op: an admin client has no consumer group handle).
        """
        from confluent_kafka import Consumer, KafkaException, TopicPartition

        waiting = list(probe_groups(OFFSETS_PARTITIONS))
        deadline = time.monotonic() + max(timeout, 1.0)
        while waiting and time.monotonic() < deadline:
            group = waiting[0]
            consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": group, "enable.auto.commit": False})
            try:
                consumer.committed([TopicPartition("__consumer_offsets", 0)], timeout=5)
                waiting.pop(0)
            except KafkaException:  # loading: retried until the deadline
                time.sleep(0.2)
            finally:
                consumer.close()
        if waiting:
            raise KafkaSetupError(f"Apache Kafka on {self.bootstrap} did not load its group coordinators in time")

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def sasl_bootstrap(self) -> str:
        return f"127.0.0.1:{self.sasl_port}"

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def stop(self) -> None:
        super().stop()
        if self._owns_workdir and self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None

    def detach(self) -> None:
        """Leave the broker running when this object goes away (`make kafka-up`)."""
        self._process = None


def demo_broker() -> ApacheKafka | EmbeddedBroker:
    """Apache Kafka when this checkout fetched it and Java runs (`make demo`), else the embedded broker (pip users)."""
    if fetched():
        try:
            java_binary()
        except KafkaSetupError:
            return EmbeddedBroker()
        return ApacheKafka()
    return EmbeddedBroker()


def broker_version(broker: ApacheKafka | EmbeddedBroker) -> str | None:
    """The Apache Kafka version a development broker runs, None for the embedded one."""
    return pinned_version() if isinstance(broker, ApacheKafka) else None


def tool_argv(main_class: str, *args: str) -> list[str]:
    """The command line of one of Apache Kafka's tools (`main_class`) from the fetched classpath."""
    return [java_binary(), *JVM_OPTIONS, "-cp", f"{require_fetched()}/*", main_class, *args]


def group_command(bootstrap: str, args: list[str], timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    """Apache Kafka's own ConsumerGroupCommand from the fetched classpath, against `bootstrap`."""
    argv = tool_argv(GROUP_COMMAND, "--bootstrap-server", bootstrap, *args)
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL)


# --- the command line behind `make kafka-fetch / kafka-up / kafka-down / kafka-groups` ------------------------


def _state_path() -> Path:
    return RUN_DIR / "state.json"


def _read_state() -> dict[str, Any] | None:
    path = _state_path()
    if not path.is_file():
        return None
    state = dict(json.loads(path.read_text()))
    try:
        os.kill(int(state["pid"]), 0)
    except (ProcessLookupError, KeyError, ValueError):
        return None
    return state


def _up() -> int:
    running = _read_state()
    if running is not None:
        print(f"Apache Kafka is already running (pid {running['pid']}); `make kafka-down` stops it")
        print(f"bootstrap={running['bootstrap']}")
        return 0
    fetch()
    workdir = RUN_DIR
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    kafka = ApacheKafka(workdir=workdir)
    kafka.outlives_parent = True  # detached below: it runs until `make kafka-down`
    kafka.start()
    state = {
        "pid": kafka.pid,
        "bootstrap": kafka.bootstrap,
        "sasl_bootstrap": kafka.sasl_bootstrap,
        "sasl_user": kafka.sasl_user,
        "sasl_password": kafka.sasl_password,
        "log": str(kafka._log_path),
    }
    _state_path().write_text(json.dumps(state, indent=2) + "\n")
    kafka.detach()
    print(f"Apache Kafka {pinned_version()} (KRaft, single node), data in {workdir}, log {state['log']}")
    print(f"sasl_bootstrap={kafka.sasl_bootstrap} (SASL_PLAINTEXT, PLAIN, user {SASL_USER}: see {_state_path()})")
    print(f"bootstrap={kafka.bootstrap}")
    return 0


def _down() -> int:
    state = _read_state()
    if state is None:
        print("Apache Kafka is not running (no `make kafka-up` broker found)")
        return 0
    pid = int(state["pid"])
    os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.killpg(pid, signal.SIGKILL)
    shutil.rmtree(RUN_DIR, ignore_errors=True)
    print(f"Apache Kafka on {state['bootstrap']} stopped")
    return 0


def _groups(args: list[str]) -> int:
    state = _read_state()
    if state is None:
        raise KafkaSetupError("no Apache Kafka is running: `make kafka-up` starts one")
    completed = group_command(str(state["bootstrap"]), args)
    sys.stdout.write(completed.stdout)
    sys.stderr.write(completed.stderr)
    return completed.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lagbot.devkit.apache_kafka", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["fetch", "up", "down", "groups"])
    parser.add_argument("args", nargs=argparse.REMAINDER, help="for `groups`: ConsumerGroupCommand's own arguments")
    options = parser.parse_args(argv)
    try:
        if options.command == "fetch":
            print(f"Apache Kafka {pinned_version()} in {fetch()}")
            return 0
        if options.command == "up":
            return _up()
        if options.command == "down":
            return _down()
        return _groups(list(options.args))
    except (KafkaSetupError, EmbeddedError) as exc:
        print(f"lagbot: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
