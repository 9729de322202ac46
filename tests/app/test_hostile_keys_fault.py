"""Names the cluster sends make no key collide, one bad key never stops the other groups, and a check that fails
shows in /healthz and in /metrics.

Real Apache Kafka groups (each made by one offset commit, as any client can), a real redis-server, a leader's check.
The report this answers: a group named `<watched group>:seq` made its window list the watched group's sequence key,
and every check of the whole cluster then failed with WRONGTYPE while /healthz said ok.
"""

from __future__ import annotations

import logging
import re

import pytest
import redis

from lagbot.app.assembly import health
from lagbot.core import keys
from lagbot.core.config import Settings, build_settings
from lagbot.core.messages import slack_escape
from lagbot.devkit.emulator import SlackEmulator
from lagbot.service.bot import Bot
from lagbot.service.slack_api import slack_client
from lagbot.slack.presenter import SlackPresenter
from tests.conftest import Kafka, Names
from tests.support.engine_rig import FAST_RULES
from tests.support.waiting import wait_for

pytestmark = pytest.mark.integration

TOKEN = "xoxb-hostile-keys"
SUFFIXES = ["", ":seq", "%3Aseq", ":seq:seq", "*", "{tag}", "\nline", ":approvals:order"]
"""Group names made of the watched group's name and what turns it into another key of the old layouts."""


def settings(kafka: Kafka, prefix: str) -> Settings:
    return build_settings(
        {
            "clusters": [
                {
                    "name": "prod",
                    "bootstrap_servers": kafka.bootstrap,
                    "groups": {"include": [f"{re.escape(prefix)}.*"]},
                    "request_timeout": 5,
                }
            ],
            "slack": {"default_channel": "C0ALERTS"},
            "evaluation": FAST_RULES,
            "thresholds": {"warn": {"messages": 5, "growing": False, "sustained_for": 0}},
        },
        source="test",
    )


def hostile_groups(kafka: Kafka, names: Names) -> tuple[str, list[str]]:
    """The topic and one group per suffix, group i with lag i on partition 0 (10 messages)."""
    topic, base = names("topic"), names("billing")
    kafka.create_topic(topic, 1)
    kafka.produce(topic, 0, 10)
    groups = [base + suffix for suffix in SUFFIXES]
    for lag, group in enumerate(groups):
        kafka.commit(group, {(topic, 0): 10 - lag})
    return topic, groups


def leader(kafka: Kafka, prefix: str, redis_client: redis.Redis, slack: SlackEmulator) -> Bot:
    bot = Bot.on_redis(settings(kafka, prefix), redis_client, slack_client(TOKEN, slack.api_url), SlackPresenter())
    assert bot.leadership.tick()
    return bot


def gauge(bot: Bot, name: str) -> float | None:
    return bot.metrics.registry.get_sample_value(name, {"cluster_name": "prod"})


def test_fault_groups_named_like_another_groups_keys_each_keep_their_own_window(
    kafka: Kafka, names: Names, redis_client: redis.Redis, slack: SlackEmulator
) -> None:
    _, groups = hostile_groups(kafka, names)
    bot = leader(kafka, groups[0], redis_client, slack)
    for _ in range(3):
        result = bot.check("prod", deliver=False)
        assert result is not None
        assert not result.report.cluster_errors
        assert {v.group: v.total_lag for v in result.report.verdicts} == {g: lag for lag, g in enumerate(groups)}
    for group in groups:
        assert redis_client.type(keys.window("prod", group)) == b"list", group
        assert redis_client.llen(keys.window("prod", group)) == 3, group
        assert redis_client.get(keys.window_seq("prod", group)) == b"3", group
    window_keys = {keys.window("prod", g) for g in groups} | {keys.window_seq("prod", g) for g in groups}
    assert len(window_keys) == 2 * len(groups)
    stored = {k.decode() for k in redis_client.keys("lagbot:window:prod:*")}
    assert stored == window_keys
    # every group past its threshold has an incident of its own, under its own key
    lagging = {v.group for v in result.report.verdicts if v.severity.label != "ok"}
    assert lagging == set(groups[6:])
    for group in groups:
        incident = bot.incidents.get("prod", group)
        assert (incident is not None and incident.group == group) == (group in lagging), group
    assert bot.failing == {}
    assert gauge(bot, "lagbot_check_failing") == 0


def test_fault_a_key_an_older_lagbot_left_in_a_windows_place_stops_no_group(
    kafka: Kafka, names: Names, redis_client: redis.Redis, slack: SlackEmulator, caplog: pytest.LogCaptureFixture
) -> None:
    """An older lagbot kept the window of group `X:seq` at `lagbot:window:prod:X:seq`: now X's sequence key."""
    _, groups = hostile_groups(kafka, names)
    base = groups[0]
    redis_client.rpush(f"lagbot:window:prod:{base}:seq", b"an older lagbot's window entry")
    redis_client.hset(keys.window("prod", groups[3]), "not", "a list")
    bot = leader(kafka, base, redis_client, slack)
    with caplog.at_level(logging.WARNING, logger="lagbot.engine.window"):
        result = bot.check("prod", deliver=False)
    assert result is not None
    assert {v.group: v.total_lag for v in result.report.verdicts} == {g: lag for lag, g in enumerate(groups)}
    assert all(v.error is None for v in result.report.verdicts)
    replaced = [r for r in caplog.records if r.getMessage() == "window keys of another type replaced"]
    assert [sorted(getattr(r, "groups", [])) for r in replaced] == [sorted([base, groups[3]])]
    assert redis_client.get(keys.window_seq("prod", base)) == b"1"
    assert redis_client.llen(keys.window("prod", groups[3])) == 1


def test_fault_a_failing_check_shows_in_healthz_and_metrics_until_one_succeeds(
    kafka: Kafka, names: Names, redis_client: redis.Redis, slack: SlackEmulator
) -> None:
    _, groups = hostile_groups(kafka, names)
    bot = leader(kafka, groups[0], redis_client, slack)
    redis_client.set(keys.INCIDENTS_BY_ID, b"not a hash")  # every incident write now fails with WRONGTYPE
    for attempt in (1, 2):
        with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
            bot.check("prod", deliver=False)
        healthy, details = health(bot)
        assert healthy  # the replica still serves Slack: the failing check is said, not hidden
        assert details["checks_failing"] == ["prod"]
        failing = details["clusters"]["prod"]["failing"]
        assert failing["failures"] == attempt
        assert failing["error"].startswith("ResponseError: Command # 2 (HSET lagbot:incidents:by-id ")
        assert failing["error"].endswith("WRONGTYPE Operation against a key holding the wrong kind of value")
        assert gauge(bot, "lagbot_check_failing") == 1
        assert gauge(bot, "lagbot_check_failures_total") == attempt
    redis_client.delete(keys.INCIDENTS_BY_ID)
    assert bot.check("prod", deliver=False) is not None
    healthy, details = health(bot)
    assert healthy and details["checks_failing"] == []
    assert "failing" not in details["clusters"]["prod"]
    assert gauge(bot, "lagbot_check_failing") == 0
    assert gauge(bot, "lagbot_check_failures_total") == 2


def test_fault_the_incident_of_a_deleted_group_closes_at_the_next_check(
    kafka: Kafka, names: Names, redis_client: redis.Redis, slack: SlackEmulator
) -> None:
    """Anyone can create a lagging group with one commit and delete it: its incident must not stay open forever."""
    _, groups = hostile_groups(kafka, names)
    bot = leader(kafka, groups[0], redis_client, slack)
    doomed, kept = groups[7], groups[6]  # `...:approvals:order` (lag 7) and `...\nline` (lag 6): both open
    assert bot.check("prod") is not None
    assert all(bot.incidents.get("prod", g) is not None for g in (doomed, kept))
    [future] = kafka.admin.delete_consumer_groups([doomed]).values()
    future.result(15)
    result = bot.check("prod")
    assert result is not None
    assert doomed not in {v.group for v in result.report.verdicts}
    closed, still = bot.incidents.get("prod", doomed), bot.incidents.get("prod", kept)
    assert closed is not None and closed.resolved_at == result.report.taken_at
    assert still is not None and still.is_open
    wait_for("everything delivered", lambda: bot.deliver().pending == 0, timeout=60)
    [resolved] = [m for m in slack.channel("C0ALERTS") if m.text.startswith("RESOLVED ")]
    assert resolved.text.startswith(f"RESOLVED `{slack_escape(doomed)}` on `prod`: resolved after ")
    assert slack.thread("C0ALERTS", resolved.ts)[-1].text == (
        f":wastebasket: `{slack_escape(doomed)}` is no longer on prod (deleted, its offsets expired, or no longer "
        "watched): this incident is closed."
    )
