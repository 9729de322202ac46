"""Fault: Apache Kafka down for 60 s and back, with two `lagbot run` replicas and an open incident.

The broker is the test's own (the session's one stays up), stopped and started again on the same ports with
the same data. Asserts: both replicas live throughout and exit cleanly at the end; while the broker is away the
bot says so (`/healthz` `clusters`, `lagbot_cluster_up 0` in `/metrics`, one "cluster unreachable" log line)
and posts nothing to Slack (no false "resolved", no second root); once the broker is back the checks resume
and the incident goes on in its thread (resolved there when the lag is gone), every message once and in
order; resident memory bounded. The recovery time is printed (`-s`) for docs/faults.md.
"""

from __future__ import annotations

import signal
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from lagbot.devkit.apache_kafka import ApacheKafka
from lagbot.devkit.embedded import EmbeddedRedis
from lagbot.devkit.emulator import SlackEmulator
from tests.conftest import Kafka, Names
from tests.support.bot_process import CHANNEL, BotProcess, wait_for
from tests.support.faults import (
    RSS_LIMIT_MB,
    TOKEN,
    approve_reply,
    assert_no_message_lost_or_duplicated,
    config,
    gated,
    rss_mb,
    slack,
)

pytestmark = pytest.mark.integration
__all__ = ["gated", "slack"]  # fixtures from tests.support.faults
DOWN_FOR = 60.0
CLUSTER = "embedded"  # the cluster's name in the shared fault config


@pytest.fixture
def own_broker() -> Iterator[ApacheKafka]:
    """An Apache Kafka of this test alone: stopping it leaves the session's broker to the other tests."""
    kafka = ApacheKafka().start()
    try:
        yield kafka
    finally:
        kafka.stop()


@pytest.fixture
def own_kafka(own_broker: ApacheKafka) -> Iterator[Kafka]:
    helper = Kafka(own_broker.bootstrap)
    yield helper
    helper.close()


def cluster_health(bots: list[BotProcess]) -> dict[str, object] | None:
    """The cluster's entry in the leader's /healthz (only the leader checks)."""
    for bot in bots:
        answer = bot.health() or {}
        if answer.get("leader") and CLUSTER in answer.get("clusters", {}):
            entry: dict[str, object] = answer["clusters"][CLUSTER]
            return entry
    return None


def metric(bot: BotProcess, name: str, labels: str) -> str | None:
    """The value of one series in the replica's /metrics, or None when it is not there."""
    with urllib.request.urlopen(f"{bot.url}/metrics", timeout=5) as response:
        text: str = response.read().decode()
    prefix = f"{name}{{{labels}}} "
    return next((line.removeprefix(prefix) for line in text.splitlines() if line.startswith(prefix)), None)


def leader(bots: list[BotProcess]) -> BotProcess:
    return wait_for("a leader", lambda: next((b for b in bots if (b.health() or {}).get("leader")), None), 30)


def test_broker_down_60s_and_back_is_reported_and_the_incident_goes_on_in_its_thread(
    own_kafka: Kafka,
    names: Names,
    own_broker: ApacheKafka,
    redis_server: EmbeddedRedis,
    slack: SlackEmulator,
    tmp_path: Path,
    gated: Path,
) -> None:
    topic, group = names("topic"), names("group")  # 300 messages behind on partition 0: an incident opens
    own_kafka.create_topic(topic, 4)
    own_kafka.produce(topic, 0, 300)
    own_kafka.commit(group, {(topic, p): 0 for p in range(4)})
    cfg = config(own_broker, redis_server, slack, group, tmp_path)
    bots = [BotProcess(tmp_path, cfg, token=TOKEN, name=f"replica-{i}") for i in range(2)]
    try:
        for bot in bots:
            bot.wait_ready()
        root, _ = approve_reply(slack)
        before = [(m.ts, m.text) for m in slack.thread(CHANNEL, root.ts)]
        posts_before = len(slack.calls_to("chat.postMessage"))

        own_broker.halt()
        down_at = time.monotonic()
        away = wait_for("the cluster reported unreachable", lambda: _away(cluster_health(bots)), timeout=30)
        reported_after = time.monotonic() - down_at
        assert "unreachable" in str(away["error"])
        up, lag = f'cluster_name="{CLUSTER}"', f'cluster_name="{CLUSTER}",group="{group}"'
        assert metric(leader(bots), "lagbot_cluster_up", up) == "0.0"
        assert metric(leader(bots), "kafka_consumergroup_group_sum_lag", lag) is None  # unknown, not 0
        wait_for(f"{DOWN_FOR:g} s of outage", lambda: time.monotonic() - down_at >= DOWN_FOR, DOWN_FOR + 5, every=1)
        assert all(b.running for b in bots), "a replica died while the broker was away"
        # Nothing said in Slack while the broker was away: no resolution, no new root, no new reply.
        assert [(m.ts, m.text) for m in slack.thread(CHANNEL, root.ts)] == before
        assert [m.ts for m in slack.channel(CHANNEL)] == [root.ts]
        assert len(slack.calls_to("chat.postMessage")) == posts_before

        own_broker.resume(wait_ready=False)  # listening again; the bot copes with the coordinators loading
        back_at = time.monotonic()
        wait_for(
            "the group's exact lag read again",
            lambda: metric(leader(bots), "kafka_consumergroup_group_sum_lag", lag) == "300.0",
            timeout=90,
        )
        recovered = time.monotonic() - back_at
        assert (cluster_health(bots) or {}).get("reachable") is True
        assert metric(leader(bots), "lagbot_cluster_up", up) == "1.0"

        # The incident goes on in its thread: the lag is consumed, it resolves there, under the same root.
        # (From a new client: measured, an admin client that lived through the outage timed out its group
        # requests for minutes after the broker was back; the bot's offset reader replaces such a client.)
        fresh = Kafka(own_broker.bootstrap)
        try:
            fresh.commit(group, {(topic, 0): 300})
        finally:
            fresh.close()
        wait_for(
            "the resolution in the incident's thread",
            lambda: any("resolved" in m.text.lower() for m in slack.thread(CHANNEL, root.ts)[len(before) :]),
            timeout=60,
        )
        after = [(m.ts, m.text) for m in slack.thread(CHANNEL, root.ts)]
        assert [ts for ts, _ in after[: len(before)]] == [ts for ts, _ in before]  # order kept, nothing lost

        def said(messages: list[tuple[str, str]]) -> list[tuple[str, str]]:  # but the table, which follows the lag
            return [(ts, text) for ts, text in messages if not text.startswith("Partitions of")]

        assert said(after[: len(before)]) == said(before)
        assert [m.ts for m in slack.channel(CHANNEL)] == [root.ts]  # 0 duplicate roots
        assert_no_message_lost_or_duplicated(slack)
        logs = [b.log() for b in bots]
        assert sum(log.count('"cluster unreachable"') for log in logs) == 1
        assert sum(log.count('"cluster reachable again"') for log in logs) == 1
        assert all("Traceback" not in log for log in logs)
        memory = [rss_mb(b) for b in bots]
        print(
            f"\nfault broker down {DOWN_FOR:g} s: reported unreachable after {reported_after:.1f} s, "
            f"the group's exact lag read again {recovered:.1f} s after the broker came back; replica RSS "
            f"{', '.join(f'{m:.0f} MB' for m in memory)}"
        )
        assert all(m < RSS_LIMIT_MB for m in memory)
        assert all(b.running for b in bots)
        assert [b.stop(signal.SIGTERM) for b in bots] == [0, 0]
    finally:
        for bot in bots:
            if bot.running:
                bot.stop(signal.SIGKILL)


def _away(entry: dict[str, object] | None) -> dict[str, object] | None:
    return entry if entry is not None and entry.get("reachable") is False else None
