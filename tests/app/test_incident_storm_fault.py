"""A flood of lagging groups is one storm summary in Slack, not a thread each.

The report this answers (issue 24): one client created 300 lagging groups in 14 s; the bot posted 301 roots, 602
replies and 1,876 edits into one channel in 29 s, a quarter of an hour of Slack backlog (about one post a second per
channel) with real incidents queued behind it.

Real Apache Kafka (300 groups made by one offset commit each, as any client can, then deleted), a real
redis-server, the Slack emulator, the leader's check with the default storm setting (more than 10 new incidents in
5 minutes): exactly 10 threads, one summary, and edits of the summary no more often than `update_every`.
The bot's clock runs ahead of the wall clock by what the test adds (`Ahead`): windows of minutes pass at once.
"""

from __future__ import annotations

import re
import time

import pytest
import redis
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

from lagbot.core import keys
from lagbot.core.config import Settings, build_settings
from lagbot.core.messages import slack_escape
from lagbot.devkit.emulator import SlackEmulator
from lagbot.service.bot import Bot
from lagbot.service.slack_api import slack_client
from lagbot.slack.presenter import SlackPresenter
from tests.conftest import Kafka, Names
from tests.support.engine_rig import FAST_RULES
from tests.support.slack_counts import edits_of, posts

pytestmark = pytest.mark.integration

TOKEN = "xoxb-storm-flood"
FLOOD = 300
THRESHOLD = 10
STORMY, QUIET = "C0FLOOD", "C0BILLING"


class Ahead:
    """The wall clock plus what the test added."""

    def __init__(self) -> None:
        self.by = 0.0

    def __call__(self) -> float:
        return time.time() + self.by


def settings(kafka: Kafka, prefix: str, flood: str) -> Settings:
    return build_settings(
        {
            "clusters": [
                {
                    "name": "prod",
                    "bootstrap_servers": kafka.bootstrap,
                    "groups": {"include": [f"{re.escape(prefix)}.*"]},
                    "request_timeout": 10,
                }
            ],
            "slack": {"default_channel": QUIET, "routes": [{"channel": STORMY, "group": f"{re.escape(flood)}.*"}]},
            "evaluation": FAST_RULES,
            "thresholds": {"warn": {"messages": 5, "growing": False, "sustained_for": 0}},
        },
        source="test",
    )


def commit_all(kafka: Kafka, groups: dict[str, int], topic: str) -> None:
    """One offset commit per group, all sent before any answer is waited for (300 commits in about a second)."""
    first, *rest = groups
    kafka.commit(first, {(topic, 0): groups[first]})  # waits out a coordinator still loading
    futures = [
        future
        for group in rest
        for future in kafka.admin.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, groups[group])])]
        ).values()
    ]
    for future in futures:
        assert all(tp.error is None for tp in future.result(30).topic_partitions)


def test_fault_300_new_lagging_groups_are_ten_threads_and_one_storm_summary(
    kafka: Kafka, names: Names, redis_client: redis.Redis, slack: SlackEmulator
) -> None:
    prefix = names("storm")
    flood_prefix, billing = f"{prefix}-flood-", f"{prefix}-billing"
    topic = names("topic")
    kafka.create_topic(topic, 1)
    kafka.produce(topic, 0, 30)
    flood = {f"{flood_prefix}{i:03d}": 30 - (6 + i % 20) for i in range(FLOOD)}  # lag 6 .. 25 each
    commit_all(kafka, {**flood, billing: 0}, topic)
    clock = Ahead()
    bot = Bot.on_redis(settings(kafka, prefix, flood_prefix), redis_client, slack_client(TOKEN, slack.api_url),
              SlackPresenter(), clock=clock)  # fmt: skip
    assert bot.leadership.tick()

    result = bot.check("prod")
    assert result is not None and result.opened == FLOOD + 1 and result.delivery.pending == 0
    assert result.delivery.dead == 0
    # Every group's incident is tracked in Redis; the 290 past the threshold are folded into one storm.
    incidents = [bot.incidents.get("prod", g) for g in flood]
    assert all(i is not None and i.is_open for i in incidents)
    assert sum(1 for i in incidents if i is not None and i.storm is None) == THRESHOLD
    [storm_id] = bot.storms.live()
    assert redis_client.hlen(keys.storm_members(storm_id)) == FLOOD - THRESHOLD
    # In Slack: 10 threads as usual, then one summary; the real incident of the other channel as usual.
    assert posts(slack, STORMY, roots=True) == THRESHOLD + 1
    assert posts(slack, STORMY, roots=False) == THRESHOLD
    assert (posts(slack, QUIET, roots=True), posts(slack, QUIET, roots=False)) == (1, 1)
    assert slack.calls_to("chat.update") == []
    summary = slack.channel(STORMY)[-1]
    assert summary.text == "Incident storm on: 290 new incidents folded into one summary, 290 still open"
    worst = summary.blocks[1]["text"]["text"]
    assert worst.startswith("*Worst first* (10 of 290):\n")
    assert f"`{slack_escape(flood_prefix)}019` on `prod`: *WARN*, peak lag 25" in worst  # lag 25 first
    advice = summary.blocks[-1]["text"]["text"]
    assert f"e.g. `exclude: ['{slack_escape(re.escape(flood_prefix))}.*']`" in advice

    # The client deletes its groups: every incident closes; the summary says so once its next edit is due.
    for future in kafka.admin.delete_consumer_groups(list(flood)).values():
        future.result(30)
    clock.by += 30
    result = bot.check("prod")
    assert result is not None and result.delivery.pending == 0 and result.delivery.dead == 0
    assert all(i is not None and not i.is_open for i in (bot.incidents.get("prod", g) for g in flood))
    assert edits_of(slack, summary.ts) == ["Incident storm on: 290 new incidents folded into one summary, 0 still open"]
    assert posts(slack, STORMY, roots=False) == 2 * THRESHOLD  # the 10 threads say their group is gone
    # Five minutes with no new incident: the storm is over, said once; nothing is live any more.
    clock.by += 300
    result = bot.check("prod")
    assert result is not None and result.delivery.pending == 0
    assert edits_of(slack, summary.ts)[1:] == [
        "Incident storm over: 290 new incidents folded into one summary, 0 still open"
    ]
    assert bot.storms.live() == []
    # The whole flood: 11 roots, 20 replies and 2 summary edits in the stormy channel (was 301, 602 and 1,876).
    assert posts(slack, STORMY, roots=True) == THRESHOLD + 1
    assert posts(slack, STORMY, roots=False) == 2 * THRESHOLD
    assert slack.thread(STORMY, summary.ts) == []
    assert bot.outbox.dead_letters() == []
