"""`/lag top` on a replica that does not lead: answered from the summary the leader stored after its check.

A real check on Apache Kafka by the leader, then the summary read back from Redis as stored (every byte of the
document asserted), then `/lag top` on a second replica, which must not judge a single window while the summary is
fresh, and falls back to judging them when it is missing, older than two check intervals or in another format.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import redis

from lagbot.core.config import Settings, build_settings
from lagbot.devkit.emulator import SlackEmulator
from lagbot.service.bot import Bot
from lagbot.service.silences import MemorySilenceStore
from lagbot.service.slack_api import slack_client
from lagbot.slack.commands import Reply
from lagbot.slack.presenter import SlackPresenter
from lagbot.slack.wiring import BotCommands
from tests.conftest import Kafka, Names
from tests.support.engine_rig import FAST_RULES

pytestmark = pytest.mark.integration

TOKEN = "xoxb-summary"
INTERVAL = 30.0


def settings(kafka: Kafka, prefix: str) -> Settings:
    return build_settings(
        {
            "clusters": [
                {
                    "name": "prod",
                    "bootstrap_servers": kafka.bootstrap,
                    "groups": {"include": [f"{re.escape(prefix)}-.*"]},
                    "request_timeout": 5,
                    "check_interval": INTERVAL,
                }
            ],
            "evaluation": FAST_RULES,
            "thresholds": {
                "warn": {"messages": 5, "growing": False, "sustained_for": 0},
                "critical": {"messages": 12},
                "page": {"messages": 1_000},
            },
        },
        source="test",
    )


def table_cells(reply: Reply) -> list[list[str]]:
    [table] = [b for b in reply.blocks if b["type"] == "table"]
    return [[cell["text"] for cell in row] for row in table["rows"]]


def test_a_follower_answers_lag_top_from_the_summary_the_leader_stored(
    kafka: Kafka, names: Names, redis_client: redis.Redis, slack: SlackEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    prefix = names("group")
    topic, caught_up, behind, far_behind = names("topic"), f"{prefix}-a", f"{prefix}-b", f"{prefix}-c"
    kafka.create_topic(topic, 2)
    kafka.produce(topic, 0, 10)
    kafka.produce(topic, 1, 4)
    kafka.commit(caught_up, {(topic, 0): 10, (topic, 1): 4})
    kafka.commit(behind, {(topic, 0): 3, (topic, 1): 4})  # lag 7
    kafka.commit(far_behind, {(topic, 0): 0, (topic, 1): 0})  # lag 14

    config = settings(kafka, prefix)
    client = slack_client(TOKEN, slack.api_url)
    leader = Bot.on_redis(config, redis_client, client, SlackPresenter(), replica_id="leader")
    follower = Bot.on_redis(config, redis_client, client, SlackPresenter(), replica_id="follower")
    assert leader.leadership.tick()
    assert not follower.leadership.tick()

    result = leader.check("prod", deliver=False)
    assert result is not None
    report = result.report
    assert not report.cluster_errors
    assert sorted(v.group for v in report.verdicts) == [caught_up, behind, far_behind], report
    lag_seconds = {v.group: v.max_lag_seconds for v in report.verdicts}
    trend = {v.group: v.trend for v in report.verdicts}

    raw = redis_client.get("lagbot:summary:prod")
    assert raw is not None
    assert json.loads(raw) == {
        "v": 1,
        "cluster": "prod",
        "taken_at": report.taken_at,
        "groups": [
            [caught_up, "OK", "OK", 0, lag_seconds[caught_up], trend[caught_up]],
            [behind, "WARN", "OK", 7, lag_seconds[behind], trend[behind]],
            [far_behind, "CRITICAL", "OK", 14, lag_seconds[far_behind], trend[far_behind]],
        ],
    }
    assert 0 < redis_client.pttl("lagbot:summary:prod") <= config.window.ttl * 1000

    judged: list[str] = []

    def judge_stored(cluster: str, groups: list[str] | None = None) -> Any:
        judged.append(cluster)
        return original(cluster, groups)

    original = follower.checker.judge_stored
    monkeypatch.setattr(follower.checker, "judge_stored", judge_stored)
    on_follower = BotCommands(follower, MemorySilenceStore()).run("top 5", "U1", "C1")
    on_leader = BotCommands(leader, MemorySilenceStore()).run("top 5", "U1", "C1")

    assert judged == []  # the follower read the summary: not one window judged
    assert table_cells(on_follower) == table_cells(on_leader)
    assert [row[:5] for row in table_cells(on_follower)] == [
        ["group", "cluster", "severity", "status", "lag"],
        [far_behind, "prod", "CRITICAL", "OK", "14"],
        [behind, "prod", "WARN", "OK", "7"],
        [caught_up, "prod", "OK", "OK", "0"],
    ]
    assert on_follower.text == on_leader.text

    # Older than two check intervals: the follower judges the windows, as it does with no summary at all.
    monkeypatch.setattr(follower, "clock", lambda: report.taken_at + 2 * INTERVAL + 1)
    stale = BotCommands(follower, MemorySilenceStore()).run("top 5", "U1", "C1")
    assert judged == ["prod"]
    redis_client.delete("lagbot:summary:prod")
    monkeypatch.setattr(follower, "clock", lambda: report.taken_at)
    missing = BotCommands(follower, MemorySilenceStore()).run("top 5", "U1", "C1")
    assert judged == ["prod", "prod"]
    assert [row[:5] for row in table_cells(stale)] == [row[:5] for row in table_cells(missing)]
    assert [row[:5] for row in table_cells(missing)] == [row[:5] for row in table_cells(on_follower)]

    # A summary in a format version this lagbot does not read (a newer leader during an upgrade) is not guessed at.
    redis_client.set("lagbot:summary:prod", json.dumps({"v": 2, "cluster": "prod", "taken_at": report.taken_at}))
    newer = BotCommands(follower, MemorySilenceStore()).run("top 5", "U1", "C1")
    assert judged == ["prod", "prod", "prod"]
    assert [row[:5] for row in table_cells(newer)] == [row[:5] for row in table_cells(on_follower)]
