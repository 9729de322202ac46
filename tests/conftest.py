"""The test rig: one Apache Kafka broker and one real redis-server per session, shared by every test.

Nothing is mocked. Tests that need the broker or Redis take the `broker` / `redis_client` fixtures;
each test gets fresh names (topics, groups) from `names`, and Redis is flushed between tests.
`broker` is Apache Kafka itself (fetched by `make kafka-fetch`, started here on free loopback ports);
the embedded broker (Tansu) is used only where a test says so (tests/devkit/test_embedded_broker.py).
"""

from __future__ import annotations

import gc
import itertools
import os
import socket
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from confluent_kafka import Consumer, Message, Producer
from confluent_kafka.admin import NewTopic

from lagbot.devkit.apache_kafka import JVM_OPTIONS, ApacheKafka
from lagbot.devkit.embedded import EmbeddedRedis, produce
from lagbot.engine.collector import ClusterAdmin
from tests.support.group_commits import commit_to_empty_group
from tests.support.k8s_build import control_plane_last

pytest_plugins = [
    "tests.support.k8s_fixtures",  # the Kubernetes control plane (session) and a namespace per test
    "tests.support.slack_fixture",  # `slack`: the Slack Web API emulator, answering to the module's TOKEN
]


TERMINAL_SIZE = ("COLUMNS", "LINES")
SPARK_JVM_OPTIONS = ("SPARK_SUBMIT_OPTS", "SPARK_DAEMON_JAVA_OPTS")
"""Where Spark's launcher reads JVM options: a driver (spark-submit, pyspark's local sessions, the Connect server),
the standalone master and workers. A standalone executor takes its options from the application's configuration:
`spark.executor.extraJavaOptions`, in the spark-defaults.conf of SPARK_CONF_DIR."""
SPARK_CONF_DIR = Path(tempfile.gettempdir()) / f"lagbot-tests-spark-conf-{os.getuid()}"


def pytest_configure(config: pytest.Config) -> None:
    """Children of the suite see no terminal size: pytest imports readline at start (its capture workaround), and
    readline writes COLUMNS=80 and LINES=24 into the process's C environment. Every child started without `env=`
    inherits them, and so do pytest-xdist's workers, in their `os.environ` too; `lagbot check` to a pipe would then
    fit its tables to 80 columns and cut long names. A test that wants a width sets COLUMNS itself
    (tests/cli/test_check_terminal.py). Runs in the controller before it starts the workers, and in each worker."""
    for name in TERMINAL_SIZE:
        os.environ.pop(name, None)
        os.unsetenv(name)
    lean_spark_jvms()


def lean_spark_jvms() -> None:
    """Every Spark JVM the suite starts runs as the test brokers do (`JVM_OPTIONS`: C1 only, the serial collector):
    they live a minute and carry a test's few thousand records, where C2 and G1 were a third of their CPU (the
    standalone drain test: 133 CPU-seconds, 63 with these). What lagbot does is unchanged; a value already set in the
    environment is kept. Set here, before the workers start, so every child inherits it."""
    options = " ".join(JVM_OPTIONS)
    for name in SPARK_JVM_OPTIONS:
        os.environ.setdefault(name, options)
    if "SPARK_CONF_DIR" not in os.environ:
        SPARK_CONF_DIR.mkdir(exist_ok=True)
        partial = SPARK_CONF_DIR / f"spark-defaults.conf.{os.getpid()}"
        partial.write_text(f"spark.executor.extraJavaOptions {options}\n")
        partial.replace(SPARK_CONF_DIR / "spark-defaults.conf")  # whole, for the suites and workers beside this one
        os.environ["SPARK_CONF_DIR"] = str(SPARK_CONF_DIR)


@pytest.fixture(scope="session")
def broker() -> Iterator[ApacheKafka]:
    with ApacheKafka().start() as running:
        yield running


@pytest.fixture(scope="session")
def redis_server() -> Iterator[EmbeddedRedis]:
    with EmbeddedRedis().start() as running:
        yield running


@pytest.fixture
def redis_client(redis_server: EmbeddedRedis, request: pytest.FixtureRequest) -> Iterator[redis.Redis]:
    if request.node.get_closest_marker("integration") is None:
        pytest.fail("a test that takes a running redis-server must be marked integration", pytrace=False)
    client = redis.Redis.from_url(redis_server.url)
    client.flushdb()
    yield client
    client.flushdb()
    client.close()


class Names:
    """Unique topic and group names per test, so tests share the broker without seeing each other."""

    _counter = itertools.count()

    def __init__(self, test_name: str) -> None:
        self._stem = "".join(c if c.isalnum() else "-" for c in test_name)[:40]
        self._run = uuid.uuid4().hex[:6]

    def __call__(self, kind: str) -> str:
        return f"{kind}-{self._stem}-{self._run}-{next(self._counter)}"


@pytest.fixture
def names(request: pytest.FixtureRequest) -> Names:
    return Names(request.node.name)


class Kafka:
    """Small helpers to set the broker up as a test needs it, through the plain Kafka protocol."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.admin = ClusterAdmin({"bootstrap.servers": bootstrap})  # committed offsets through its reader
        self._producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})

    def close(self) -> None:
        """Destroy the clients now, with nothing in flight and their broker still running, rather than during
        the interpreter's finalization after the broker has stopped."""
        self._producer.flush(10)
        self.admin.offsets.close()
        del self._producer, self.admin
        gc.collect()

    def create_topic(self, topic: str, partitions: int) -> None:
        for future in self.admin.create_topics([NewTopic(topic, partitions, 1)]).values():
            future.result(15)

    def produce(self, topic: str, partition: int, count: int, value: bytes = b"m") -> None:
        """Write `count` messages to one partition (batched) and wait until all are acknowledged."""
        produce(self._producer, topic, partition, count, value)

    def commit(self, group: str, offsets: dict[tuple[str, int], int], timeout: float = 30.0) -> None:
        """Commit offsets for a group that has no live members (tests/support/group_commits.py)."""
        commit_to_empty_group(self.admin, group, offsets, timeout)

    def consumer(self, group: str, **overrides: object) -> Consumer:
        """A real consumer that joins fast (session.timeout.ms=6000) and commits only when told."""
        config: dict[str, object] = {
            "bootstrap.servers": self.bootstrap,
            "group.id": group,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 1000,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            **overrides,
        }
        return Consumer(config)

    def wait_assigned(self, consumer: Consumer, timeout: float = 30.0) -> list[Message]:
        """Poll until the consumer has an assignment; returns the messages it received meanwhile."""
        received: list[Message] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                received.append(message)
            if consumer.assignment():
                return received
        raise AssertionError("consumer got no assignment within the timeout")


@pytest.fixture(scope="session")
def kafka(broker: ApacheKafka) -> Iterator[Kafka]:
    helper = Kafka(broker.bootstrap)
    yield helper
    helper.close()


SERVICE_FIXTURES = frozenset({"broker", "kafka", "redis_server", "redis_client", "k8s_control_plane", "k8s", "slack"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark `integration` every test that takes a running service; tests that start one themselves (lagbot
    processes, Spark, a broker of their own) carry `pytestmark = pytest.mark.integration`.

    So `pytest -m "not integration"` (`make test-unit`) runs the pure suite alone; `no_network_unless_marked`
    fails an unmarked test that opens a connection, so no test can forget its mark.

    Then the files that need the Kubernetes control plane go last (`control_plane_last`): `make test` builds it
    beside pytest, and each worker reaches them when the rest is done (docs/development.md).
    """
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if fixtures & SERVICE_FIXTURES:
            item.add_marker(pytest.mark.integration)
    items[:] = control_plane_last(items)


@pytest.fixture(autouse=True)
def no_network_unless_marked(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test not marked `integration` may not connect anywhere (a pure test needs no server)."""
    if request.node.get_closest_marker("integration") is not None:
        return

    def refuse(self: socket.socket, address: object) -> None:
        raise AssertionError(f"{request.node.nodeid} connects to {address!r}: mark it integration")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
