"""Five clusters on one leader, each on its own schedule: a cluster whose broker does not answer holds back
only its own check, never the others' (each check job runs on its own worker thread)."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

import pytest
import redis

from lagbot.core.config import Settings
from lagbot.devkit.emulator import SlackEmulator
from lagbot.service.bot import Bot
from lagbot.service.scheduler import build_scheduler
from lagbot.service.slack_api import slack_client
from lagbot.slack.presenter import SlackPresenter
from tests.conftest import Kafka, Names
from tests.support.bot_process import wait_for

pytestmark = pytest.mark.integration

TOKEN = "xoxb-clusters"
HEALTHY = ["east", "west", "north", "south"]
SLOW_TIMEOUT = 20.0  # the slow cluster's request timeout: its check hangs this long, then reports the timeout


@contextlib.contextmanager
def silent_broker() -> Iterator[int]:
    """A TCP port that accepts connections and reads what is sent, and never answers (a hung broker)."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()
    held: list[socket.socket] = []

    def serve() -> None:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                connection, _ = listener.accept()
                connection.setblocking(False)
                held.append(connection)
            for connection in held:
                with contextlib.suppress(BlockingIOError, OSError):
                    connection.recv(1 << 16)

    thread = threading.Thread(target=serve, name="silent-broker", daemon=True)
    thread.start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        stop.set()
        thread.join(timeout=5)
        for connection in held:
            connection.close()
        listener.close()


def cycles(bot: Bot, cluster: str) -> int:
    """Checks of `cluster` completed so far (the count of its check-duration histogram)."""
    value = bot.metrics.registry.get_sample_value("lagbot_check_duration_seconds_count", {"cluster_name": cluster})
    return int(value or 0)


def test_a_hung_cluster_does_not_delay_the_other_clusters_checks(
    broker: object, kafka: Kafka, names: Names, redis_client: redis.Redis
) -> None:
    topic = names("topic")
    kafka.create_topic(topic, 2)
    kafka.produce(topic, 0, 7)
    kafka.produce(topic, 1, 4)
    groups = {cluster: names(f"group-{cluster}") for cluster in HEALTHY}
    for i, group in enumerate(groups.values()):
        kafka.commit(group, {(topic, 0): i, (topic, 1): 1})
    bootstrap = kafka.bootstrap
    with silent_broker() as port, SlackEmulator(token=TOKEN).start() as slack:
        clusters = [
            {"name": c, "bootstrap_servers": bootstrap, "groups": {"include": [groups[c]]}, "check_interval": "1s"}
            for c in HEALTHY
        ]
        hung = {"name": "hung", "bootstrap_servers": f"127.0.0.1:{port}", "check_interval": "1s"}
        clusters.append({**hung, "request_timeout": f"{SLOW_TIMEOUT:g}s"})
        settings = Settings(clusters=clusters, leader={"lease_ttl": "30s"})  # type: ignore[arg-type]
        bot = Bot.on_redis(settings, redis_client, slack_client(TOKEN, slack.api_url), SlackPresenter())
        scheduler = build_scheduler(bot)
        scheduler.start()
        try:
            # While the hung cluster's first check waits on its broker, every other cluster is checked again and again.
            wait_for("five checks of every healthy cluster", lambda: all(cycles(bot, c) >= 5 for c in HEALTHY))
            assert cycles(bot, "hung") == 0
            assert "hung" not in bot.latest
            during = {c: cycles(bot, c) for c in HEALTHY}
            # Then it times out: its check reports the cluster unreadable, and the others never stopped.
            # (its duration is counted just before its report is kept: both, then)
            wait_for("the hung cluster's check", lambda: cycles(bot, "hung") >= 1 and "hung" in bot.latest,
                     timeout=SLOW_TIMEOUT + 60)  # fmt: skip
            assert "hung" in bot.latest["hung"].cluster_errors
            assert all(cycles(bot, c) > during[c] for c in HEALTHY)
        finally:
            scheduler.shutdown(wait=True)
    for i, cluster in enumerate(HEALTHY):
        [verdict] = bot.latest[cluster].verdicts
        assert verdict.group == groups[cluster]
        assert {p.partition: p.lag for p in verdict.partitions} == {0: 7 - i, 1: 3}
