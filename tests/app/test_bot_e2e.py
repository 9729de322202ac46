"""End to end: `lagbot run` on Apache Kafka, a real redis-server and the Slack emulator.

Induce lag -> a scheduled check opens one incident (root message + a thread reply with the table and
the cause) -> lag grows -> the root is edited, no new reply -> lag is cleared -> resolved. Then: two
replicas share the work through the lease, and signed requests are the only ones the app accepts.
"""

from __future__ import annotations

import signal
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml

from lagbot.devkit.apache_kafka import ApacheKafka
from lagbot.devkit.embedded import EmbeddedRedis
from lagbot.devkit.emulator import Message, SlackEmulator
from lagbot.devkit.signed import post_signed
from tests.conftest import Kafka, Names
from tests.support.bot_process import CHANNEL, SIGNING_SECRET, BotProcess, bot_config, wait_checks, wait_for

pytestmark = pytest.mark.integration

TOKEN = "xoxb-e2e"


def roots(slack: SlackEmulator) -> list[Message]:
    return slack.channel(CHANNEL)


def block_text(message: Message) -> str:
    return str(message.blocks)


def table_rows(message: Message) -> list[list[str]]:
    [table] = [b for b in message.blocks if b["type"] == "table"]
    return [[cell["text"] for cell in row] for row in table["rows"]]


def test_one_thread_per_incident_from_lag_to_resolution(
    kafka: Kafka,
    names: Names,
    broker: ApacheKafka,
    redis_server: EmbeddedRedis,
    redis_client: redis.Redis,
    slack: SlackEmulator,
    tmp_path: Path,
) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 3)
    for partition in range(3):
        kafka.produce(topic, partition, 20)
    kafka.commit(group, {(topic, p): 20 for p in range(3)})
    bot = BotProcess(tmp_path, bot_config(broker, redis_server, slack, group), token=TOKEN)
    try:
        wait_for("the bot to lead and check", lambda: (h := bot.wait_ready()) and h["leader"] and h["checks"])
        wait_checks(bot, 3)  # a few more caught-up checks: a healthy group never posts
        assert roots(slack) == []

        kafka.produce(topic, 1, 300)
        [root] = wait_for("the incident's root message", lambda: roots(slack))
        [first] = wait_for("the first thread reply", lambda: slack.thread(CHANNEL, root.ts))
        assert "WARN" in root.text and group in root.text
        rows = table_rows(first)
        assert rows[0] == ["partition", "committed", "log-end", "lag", "lag s", "owner", "status"]
        assert rows[1][:4] == [f"{topic}/1", "20", "320", "300"]
        assert sorted(r[:4] for r in rows[2:]) == [[f"{topic}/0", "20", "20", "0"], [f"{topic}/2", "20", "20", "0"]]
        assert "no_active_members" in block_text(first) and "hot_partition" in block_text(first)

        edits_before = root.edits
        kafka.produce(topic, 1, 200)
        wait_for("the root to show the grown lag", lambda: "lag *500*" in roots(slack)[0].text + block_text(root))
        assert roots(slack)[0].edits > edits_before
        assert len(roots(slack)) == 1 and len(slack.thread(CHANNEL, root.ts)) == 1

        kafka.commit(group, {(topic, 0): 20, (topic, 1): 520, (topic, 2): 20})
        wait_for("the root turned green", lambda: "RESOLVED" in roots(slack)[0].text, timeout=60)
        replies = wait_for("the resolution reply", lambda: (r := slack.thread(CHANNEL, root.ts))[1:] and r)
        assert len(replies) == 2 and "Resolved after" in replies[1].text and "peak 500" in replies[1].text
        assert len(roots(slack)) == 1
        assert [c.method for c in slack.calls if c.status != 200] == []
        incident = redis_client.get(f"lagbot:incident:embedded:{group}")
        assert incident is not None and b'"resolved_at":null' not in incident
        assert bot.stop() == 0
        assert "Traceback" not in bot.log()
    finally:
        bot.stop(signal.SIGKILL)


def test_only_signed_requests_reach_the_app(
    broker: ApacheKafka,
    redis_server: EmbeddedRedis,
    redis_client: redis.Redis,
    slack: SlackEmulator,
    tmp_path: Path,
) -> None:
    bot = BotProcess(tmp_path, bot_config(broker, redis_server, slack, "none"), token=TOKEN)
    try:
        bot.wait_ready()
        body = "command=%2Flag&text=help&user_id=U1&channel_id=C1&response_url=http%3A%2F%2F127.0.0.1%3A9%2Fr"
        assert post_signed(bot.events_url, body, None)[0] == 401
        assert post_signed(bot.events_url, body, "not-the-secret")[0] == 401
        assert post_signed(bot.events_url, body, SIGNING_SECRET, timestamp=int(time.time()) - 301)[0] == 401
        status, _, key = slack.slash_command(bot.events_url, SIGNING_SECRET, text="help")
        assert status == 200
        wait_for("the reply at the response URL", lambda: slack.responses[key])
    finally:
        bot.stop(signal.SIGKILL)


def test_two_replicas_one_leader_and_the_thread_survives_its_death(
    kafka: Kafka,
    names: Names,
    broker: ApacheKafka,
    redis_server: EmbeddedRedis,
    slack: SlackEmulator,
    tmp_path: Path,
) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 2)
    kafka.produce(topic, 0, 10)
    kafka.commit(group, {(topic, 0): 10, (topic, 1): 0})
    config = bot_config(broker, redis_server, slack, group)
    replicas = [BotProcess(tmp_path, config, token=TOKEN, name=f"replica-{i}") for i in range(2)]
    try:
        for replica in replicas:
            replica.wait_ready()

        def one_leader() -> list[BotProcess] | None:
            leaders = [r for r in replicas if (r.health() or {}).get("leader")]
            return leaders if len(leaders) == 1 else None

        [leader] = wait_for("exactly one leader", one_leader, timeout=30)
        [follower] = [r for r in replicas if r is not leader]
        kafka.produce(topic, 0, 300)
        [root] = wait_for("the root message", lambda: roots(slack))
        wait_for("the first reply", lambda: slack.thread(CHANNEL, root.ts))

        leader.stop(signal.SIGKILL)
        killed_at = time.monotonic()
        wait_for("the follower to take over", lambda: (follower.health() or {}).get("leader"), timeout=15)
        took = time.monotonic() - killed_at
        assert took <= 2 * 3.0 + 1.0, f"takeover took {took:.1f} s, more than two lease periods"

        kafka.produce(topic, 0, 200)
        wait_for("the new leader to edit the same root", lambda: "lag *500*" in block_text(roots(slack)[0]))
        assert len(roots(slack)) == 1
        assert len(slack.thread(CHANNEL, root.ts)) == 1
        assert follower.stop() == 0
    finally:
        for replica in replicas:
            replica.stop(signal.SIGKILL)


def test_slash_commands_through_the_running_bot(
    kafka: Kafka,
    names: Names,
    broker: ApacheKafka,
    redis_server: EmbeddedRedis,
    slack: SlackEmulator,
    tmp_path: Path,
) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 2)
    kafka.produce(topic, 0, 30)
    kafka.commit(group, {(topic, 0): 10, (topic, 1): 0})
    policy = tmp_path / "policy.yaml"  # the emulator's user may silence (the shipped policy lists nobody)
    policy.write_text(yaml.safe_dump({"version": 1, "default": {"silencers": {"users": ["U0ONCALL"]}}}))
    config = {**bot_config(broker, redis_server, slack, group), "policy_file": str(policy)}
    # A new deployment's empty Redis: the earlier tests' bots watched other groups on the same cluster name, and this
    # bot closes their incidents as no longer watched (lagbot.service.incidents `gone`), posting into this channel.
    redis.Redis.from_url(redis_server.url).flushdb()
    bot = BotProcess(tmp_path, config, token=TOKEN)

    def ask(text: str) -> dict[str, Any]:
        status, _, key = slack.slash_command(bot.events_url, SIGNING_SECRET, text=text)
        assert status == 200
        [reply] = wait_for(f"the reply to /lag {text}", lambda: slack.responses[key])
        return reply

    try:
        bot.wait_ready()
        wait_for("the first check", lambda: (bot.health() or {}).get("checks"))

        # A fresh check of one group: its exact offsets in the table, ephemeral.
        shown = ask(group)
        assert shown["response_type"] == "ephemeral"
        [table] = [b for b in shown["blocks"] if b["type"] == "table"]
        rows = [[c["text"] for c in row] for row in table["rows"]]
        assert rows[1][:4] == [f"{topic}/0", "10", "30", "20"]

        # A typo: the usage and the closest match, nothing else happens.
        typo = ask(group[:-1] + "x")
        assert "no consumer group" in typo["text"] and group in typo["text"]

        # Silence, then lag that would open an incident: nothing is posted while silenced.
        silenced = ask(f"silence {group} 1h deploying the fix")
        assert silenced["response_type"] == "in_channel" and "deploying the fix" in silenced["text"]
        kafka.produce(topic, 0, 300)
        wait_checks(bot, 4)  # several checks see warn-level lag (the first may have started before the produce)
        assert roots(slack) == []
        top = ask("top")
        assert group in str(top["blocks"])

        # Unsilence: the next check opens the incident.
        ask(f"unsilence {group}")
        [root] = wait_for("the incident after unsilencing", lambda: roots(slack))

        # The digest of this channel, now: one message, the chart uploaded into its thread.
        ask("digest")
        digest = wait_for("the digest", lambda: [m for m in roots(slack) if m.ts != root.ts])
        assert len(digest) == 1 and group in block_text(digest[0])
        [complete] = wait_for("the chart upload", lambda: slack.calls_to("files.completeUploadExternal"))
        assert complete.args["thread_ts"] == digest[0].ts

        # /metrics has the group's exact lag per partition, in Kafka Lag Exporter's names.
        with urllib.request.urlopen(f"{bot.url}/metrics", timeout=5) as response:
            metrics = response.read().decode()
        labels = f'cluster_name="embedded",group="{group}",partition="0",topic="{topic}"'
        assert f"kafka_consumergroup_group_lag{{{labels}}} 320.0" in metrics
        assert "Traceback" not in bot.log()
    finally:
        bot.stop(signal.SIGKILL)


def test_socket_mode_answers_slash_commands_over_the_websocket(
    kafka: Kafka,
    names: Names,
    broker: ApacheKafka,
    redis_server: EmbeddedRedis,
    slack: SlackEmulator,
    tmp_path: Path,
) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 1)
    kafka.produce(topic, 0, 5)
    kafka.commit(group, {(topic, 0): 2})
    config = bot_config(broker, redis_server, slack, group)
    bot = BotProcess(tmp_path, config, token=TOKEN, app_token=slack.app_token)
    try:
        bot.wait_ready()
        connection = slack.socket_connection()
        assert [c.token for c in slack.calls_to("apps.connections.open")] == [slack.app_token]
        # In Socket Mode the HTTP port serves /healthz and /metrics only: no signed-request endpoint.
        assert post_signed(bot.events_url, "text=help", SIGNING_SECRET)[0] == 404
        wait_for("the first check", lambda: (bot.health() or {}).get("checks"))

        envelope, key = slack.socket_slash_command(text=group)
        wait_for("the envelope's acknowledgement", lambda: envelope in connection.acks)
        [reply] = wait_for("the reply at the response URL", lambda: slack.responses[key])
        [table] = [b for b in reply["blocks"] if b["type"] == "table"]
        assert [c["text"] for c in table["rows"][1]][:4] == [f"{topic}/0", "2", "5", "3"]
        assert bot.stop() == 0
    finally:
        bot.stop(signal.SIGKILL)
