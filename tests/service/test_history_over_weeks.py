"""Eight nights of a real group on Apache Kafka and Redis, at a compressed clock: the report, the pattern said in
the eighth night's thread, and the thresholds backtest, asserted exactly.

Every night at 02:00 a batch writes 2,000 messages to the group's topic (20,000 on night 5, the night a human
approved a remediation), and at 02:30 the group commits past them. The bot checks every 30 minutes of its clock
(`now` injected; nothing waits for it), with rollups of 30 minutes and minute points kept 2 days: its real collector
reads the real broker, its history, incidents and audit live in the real redis-server, its Slack is the emulator
(what the checks queued is delivered at the end). WARN opens at 1,000 messages.
"""

from __future__ import annotations

import re
from datetime import UTC

import pytest
import redis

from lagbot.core.config import Settings
from lagbot.devkit.emulator import SlackEmulator
from lagbot.service.audit import AuditEntry
from lagbot.service.bot import Bot
from lagbot.service.history_read import read_group, suggest, suggestion_table, weekly_report
from lagbot.service.pattern_notes import PatternNotes
from lagbot.service.slack_api import slack_client
from lagbot.slack.presenter import SlackPresenter
from tests.conftest import Kafka, Names

pytestmark = pytest.mark.integration

TOKEN = "xoxb-history"
CHANNEL = "C0HISTORY"
T0 = 1_763_942_400.0  # Monday 2025-11-24 00:00 UTC
STEP = 1800.0
DAY = 86_400.0
NIGHTS = 8
ACTED_NIGHT = 5
PER_DAY = 48
AT_2AM, AT_230 = 4, 5  # check numbers of the day: 02:00 and 02:30


def night_start(night: int) -> float:
    return T0 + night * DAY + 2 * 3600


def test_eight_nights_make_a_pattern_a_report_and_a_backtest(
    broker: object, kafka: Kafka, names: Names, redis_client: redis.Redis
) -> None:
    topic, group = names("batch-topic"), names("batch-group")
    kafka.create_topic(topic, 1)
    kafka.produce(topic, 0, 10)
    kafka.commit(group, {(topic, 0): 10})
    written = 10
    now = [T0]
    with SlackEmulator(token=TOKEN).start() as slack:
        settings = Settings.model_validate(
            {
                "clusters": [{"name": "prod", "bootstrap_servers": kafka.bootstrap, "check_interval": "30m",
                              "groups": {"include": [re.escape(group)]}}],
                "thresholds": {"warn": {"messages": 1_000}},
                "evaluation": {"history_horizons": []},
                "slack": {"default_channel": CHANNEL},
                "leader": {"lease_ttl": "120s"},
                "digest": {"history": {"retention": "2d", "rollup_resolution": "30m"}},
            }
        )  # fmt: skip
        bot = Bot.on_redis(
            settings, redis_client, slack_client(TOKEN, slack.api_url), SlackPresenter(), clock=lambda: now[0]
        )
        assert bot.leadership.tick()
        lags: list[tuple[int, int | None]] = []
        for check in range(NIGHTS * PER_DAY):
            night, of_day = divmod(check, PER_DAY)
            now[0] = T0 + check * STEP
            if of_day == AT_2AM:
                batch = 20_000 if night == ACTED_NIGHT else 2_000
                kafka.produce(topic, 0, batch)
                written += batch
            if of_day == AT_230:
                kafka.commit(group, {(topic, 0): written})
            if check % 16 == 0:
                assert bot.leadership.tick()
            if night == ACTED_NIGHT and of_day == AT_230:  # 02:30: an approver scaled it; it resolves
                for event, user, detail in (
                    ("approved", "U0ONCALL1", {}),
                    ("succeeded", "lagbot", {}),
                    ("verified", "lagbot", {"progress": "resolved"}),
                ):
                    bot.audit.record(AuditEntry(now[0], event, "prod", group, user, "scale", "p-night5", detail))
            result = bot.check("prod", deliver=False)
            assert result is not None
            (seen,) = result.report.verdicts
            lags.append((check, seen.total_lag))

        # The lag read back from the broker: the batch from 02:00, nothing from 02:30 (every check of every night).
        expected = [(c, (20_000 if c // PER_DAY == ACTED_NIGHT else 2_000) if c % PER_DAY == AT_2AM else 0)
                    for c in range(NIGHTS * PER_DAY)]  # fmt: skip
        wrong = [(c, lag) for (c, lag), want in zip(lags, expected, strict=True) if (c, lag) != want]
        assert wrong == []

        for _ in range(20):  # what the checks queued, delivered in order
            if bot.deliver().pending == 0:
                break
        assert bot.outbox.pending() == 0

        # The thread of the eighth night's incident says it is as usual (and that no silence was set).
        threads = [m for m in slack.history(CHANNEL) if m.text and "as on 7 of the last 7 nights" in m.text]
        assert len(threads) == 1
        assert threads[0].text == (
            "as on 7 of the last 7 nights; usually drains by 02:30 "
            "(a maintenance window for nights 02:00-02:30 may fit it)"
        )
        assert bot.incidents.get("prod", group) is not None

    end = now[0]
    incidents = sorted(bot.incidents.changed_since(T0), key=lambda i: i.opened_at)
    assert [i.opened_at for i in incidents] == [night_start(n) for n in range(NIGHTS)]
    assert [i.resolved_at for i in incidents] == [night_start(n) + 3600 for n in range(NIGHTS)]  # 02:30 + 30 min
    assert [i.peak_lag for i in incidents] == [20_000 if n == ACTED_NIGHT else 2_000 for n in range(NIGHTS)]

    # The week's report: 7 incidents (nights 1 to 7), 30 min at WARN each, resolved in an hour, the scale worked.
    week = read_group(bot.history, bot.incidents, bot.audit, "prod", group, since=end - 7 * DAY, until=end)
    (report,) = weekly_report([week])
    assert (report.incidents, report.open_now, report.acted) == (7, 0, 1)
    assert report.warn_seconds == 7 * STEP
    assert report.critical_seconds == 0
    assert report.mttr == 3600
    assert report.causes == (("no_active_members", 7),)  # the group has no member: nobody consumes
    assert [(a.action, a.runs, a.worked, a.did_not) for a in report.actions] == [("scale", 1, 1, 0)]

    # The history reaches back over the minute tier (2 d) through the rollups: 8 days of checks, one point each.
    month = read_group(bot.history, bot.incidents, bot.audit, "prod", group, since=end - 30 * DAY, until=end)
    assert len(month.series) == NIGHTS * PER_DAY
    assert len(month.rollups) >= (NIGHTS - 2) * PER_DAY
    notes = PatternNotes(bot.history, tz=UTC, width=STEP)
    assert notes.note(incidents[-1], now=end) == (
        "as on 7 of the last 7 nights; usually drains by 02:30 (a maintenance window for nights 02:00-02:30 may fit it)"
    )
    assert notes.note(incidents[ACTED_NIGHT], now=end) is None  # ten times the usual peak: a real incident

    # Thresholds: proposed from the healthy points (all but the acted night's incident), backtested on the month.
    made = suggest(month, settings.thresholds.warn, settings.incidents)
    assert made.proposal is not None
    assert made.proposal.healthy_points == NIGHTS * PER_DAY - 3  # 02:00, 02:30, 03:00 of night 5
    # The lag in seconds the bot judged: 1,800 s at 02:00 (the batch arrived within the check's 30 minutes)
    behind = [(p.at, p.max_lag_seconds) for p in month.series if p.max_lag_seconds]
    assert behind == [(night_start(n), STEP) for n in range(NIGHTS)]
    # 2,000 x 1.5 = 3,000 -> 5,000 messages; 1,800 s x 1.5 = 2,700 s -> 5,000 s
    assert (made.proposal.messages, made.proposal.seconds) == (5_000, 5_000.0)
    assert [s.start for s in made.current_result.would_open] == [night_start(n) for n in range(NIGHTS)]
    assert [delta for _, delta in made.current_result.also_opened] == [0.0] * NIGHTS
    assert made.proposed_result is not None
    assert [s.start for s in made.proposed_result.would_open] == [night_start(ACTED_NIGHT)]
    assert len(made.proposed_result.missed) == NIGHTS - 1
    assert made.proposed_result.missed_acted == ()
    table = suggestion_table(made)
    assert table[2:5] == [
        ["incidents it would open", "8", "1"],
        ["of the actual ones, opened too", "8", "1"],
        ["actual ones it misses", "0", "7"],
    ]
    assert table[5] == ["missed that a human acted on", "0", "0"]
    assert made.snippet is not None and "messages: 5000" in made.snippet
    assert settings.thresholds.warn.messages == 1_000  # nothing was changed
