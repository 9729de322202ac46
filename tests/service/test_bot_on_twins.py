"""A `Bot` built on memory stores (lagbot.service.stores.memory_stores) runs without Redis: its stores are given to it,
so the service is tested on the twins that keep each store's contract (tests/service/test_store_contracts.py and
test_bot_store_contracts.py).

The first test needs no service at all: the suite's guard (tests/conftest.py) fails a test that connects anywhere
unmarked. The second runs real checks of real groups on Apache Kafka and delivers to the Slack emulator, with no
Redis anywhere."""

from __future__ import annotations

import re

import pytest

from lagbot.core.config import Settings, build_settings
from lagbot.core.model import GroupSummary, Severity, Status
from lagbot.devkit.emulator import SlackEmulator
from lagbot.service.audit import AuditEntry
from lagbot.service.bot import Bot
from lagbot.service.slack_api import slack_client
from lagbot.service.stores import memory_stores
from lagbot.slack.presenter import SlackPresenter
from tests.conftest import Kafka, Names
from tests.support.engine_rig import FAST_RULES
from tests.support.verdicts import verdict
from tests.support.waiting import wait_for

T0 = 1_790_000_000.0
INTERVAL = 30.0
TOKEN = "xoxb-twins"
CHANNEL = "C0TWINS01"


def settings() -> Settings:
    cluster = {"name": "prod", "bootstrap_servers": "127.0.0.1:9", "check_interval": INTERVAL}
    return build_settings({"clusters": [cluster]}, source="test")


def test_a_follower_on_memory_stores_answers_lag_top_from_the_leader_s_summary_then_from_its_windows() -> None:
    config, now = settings(), [T0]
    stores = memory_stores(config, lambda: now[0], replica_id="follower")
    assert stores.redis is None
    bot = Bot(config, stores, slack_client("xoxb-x", "http://127.0.0.1:9/api/"), SlackPresenter(), clock=lambda: now[0])
    assert bot.replica_id == "follower" and not bot.leadership.is_leader()

    behind = verdict(lag=7_000, severity=Severity.CRITICAL, status=Status.STALL, group="orders")
    fine = verdict(lag=0, severity=Severity.OK, status=Status.OK, group="billing")
    stores.summaries.put("prod", T0 - 10, [behind, fine])  # as the leader stores it after its check
    assert bot.current_summaries("prod") == [GroupSummary.of(behind), GroupSummary.of(fine)]

    now[0] = T0 - 10 + 2 * INTERVAL + 1  # older than two check intervals: judged from the stored windows (none)
    assert bot.current_summaries("prod") == []

    entry = AuditEntry(at=T0, event="proposed", cluster="prod", group="orders", user="lagbot", action="scale")
    bot.audit.record(entry)
    assert bot.audit.latest("prod", "orders") == [entry]
    assert bot.incidents.open_incidents() == []
    with pytest.raises(RuntimeError, match="memory stores: it has no Redis client"):
        _ = bot.redis


def kafka_settings(kafka: Kafka, prefix: str) -> Settings:
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
            "incidents": {"resolve_after": 0},
            "slack": {"default_channel": CHANNEL},
        },
        source="test",
    )


@pytest.mark.integration
def test_bot_check_on_apache_kafka_with_memory_stores_posts_edits_and_resolves_one_thread(
    kafka: Kafka, names: Names, slack: SlackEmulator
) -> None:
    prefix = names("group")
    topic, caught_up, behind = names("topic"), f"{prefix}-a", f"{prefix}-b"
    kafka.create_topic(topic, 2)
    kafka.produce(topic, 0, 10)
    kafka.produce(topic, 1, 4)
    kafka.commit(caught_up, {(topic, 0): 10, (topic, 1): 4})
    kafka.commit(behind, {(topic, 0): 0, (topic, 1): 0})  # lag 14: critical

    config = kafka_settings(kafka, prefix)
    bot = Bot(config, memory_stores(config), slack_client(TOKEN, slack.api_url), SlackPresenter())
    assert bot.leadership.tick() and bot.leadership.is_leader()

    first = bot.check("prod")
    assert first is not None and not first.report.cluster_errors and first.opened == 1
    assert {v.group: v.total_lag for v in first.report.verdicts} == {caught_up: 0, behind: 14}
    assert (first.delivery.sent, first.delivery.dead, first.delivery.pending) == (2, 0, 0)
    [root] = slack.channel(CHANNEL)
    [table] = slack.thread(CHANNEL, root.ts)
    assert [(c.method, c.args["channel"], c.args.get("thread_ts")) for c in slack.calls] == [
        ("chat.postMessage", CHANNEL, None),
        ("chat.postMessage", CHANNEL, root.ts),
    ]
    assert "CRITICAL" in root.text and behind in root.text and caught_up not in root.text
    rows = [[cell["text"] for cell in row] for row in next(b for b in table.blocks if b["type"] == "table")["rows"]]
    assert sorted(row[:4] for row in rows[1:]) == [[f"{topic}/0", "0", "10", "10"], [f"{topic}/1", "0", "4", "4"]]
    assert bot.outbox.root(bot.incidents.open_incidents()[0].id) == (CHANNEL, root.ts)

    def judged_stopped() -> bool:  # min_samples 3 over min_span 2 s (FAST_RULES): a few checks
        result = bot.check("prod")
        assert result is not None and result.opened == 0
        return next(v for v in result.report.verdicts if v.group == behind).status is Status.STOP

    wait_for("the group judged stopped", judged_stopped, timeout=60, every=0.5)
    edits = [(c.method, c.args["ts"]) for c in slack.calls[2:]]
    assert edits and edits == [("chat.update", root.ts), ("chat.update", table.ts)] * (len(edits) // 2)
    assert slack.channel(CHANNEL)[0].text == f"CRITICAL `{behind}` on `prod`: stopped, lag 14"
    again = bot.check("prod")  # nothing new to say: the root is not edited (what it showed is in the twin)
    assert again is not None and len(slack.calls) == 2 + len(edits), slack.calls[2 + len(edits) :]
    before_resolution = len(slack.calls)

    kafka.commit(behind, {(topic, 0): 10, (topic, 1): 4})  # caught up
    resolved = bot.check("prod")
    assert resolved is not None
    assert {v.group: v.total_lag for v in resolved.report.verdicts} == {caught_up: 0, behind: 0}
    assert [(c.method, c.args.get("ts"), c.args.get("thread_ts")) for c in slack.calls[before_resolution:]] == [
        ("chat.update", root.ts, None),
        ("chat.update", table.ts, None),
        ("chat.postMessage", None, root.ts),
    ], slack.calls[before_resolution:]
    assert "RESOLVED" in slack.channel(CHANNEL)[0].text
    assert "Resolved after" in slack.thread(CHANNEL, root.ts)[1].text
    assert bot.incidents.open_incidents() == [] and bot.outbox.pending() == 0 and bot.outbox.dead_letters() == []
    assert [c.status for c in slack.calls] == [200] * (before_resolution + 3)
