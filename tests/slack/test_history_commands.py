"""`/lag report`, `/lag history <group>` and `/lag thresholds <group>`: parsed exactly, refused with their usage,
and answered by a real `Bot` on a history stored in a real redis-server, behind the real guard (thresholds are for
approvers)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from lagbot.core.config import Settings
from lagbot.devkit.emulator import SlackEmulator
from lagbot.policies.approvers import ApproverDirectory, MemoryUsergroupCache
from lagbot.policies.model import Policy
from lagbot.service.bot import Bot
from lagbot.service.silences import RedisSilenceStore
from lagbot.service.slack_api import slack_client
from lagbot.slack.command_parse import CommandError, History, Report, Thresholds
from lagbot.slack.guard import CommandGuard
from lagbot.slack.presenter import SlackPresenter
from lagbot.slack.subcommands import parse
from lagbot.slack.wiring import BotCommands
from tests.support.lag_histories import DAY, NIGHTS, START, STEP, store_nights

HELP = "(`/lag help` lists every command)"
GROUP = "orders<&>"
END = START + NIGHTS * DAY - STEP
TOKEN = "xoxb-history-commands"
APPROVER, STRANGER, CHANNEL = "U0ONCALL1", "U0SOMEONE", "C0ALERTS"


@pytest.mark.parametrize(
    ("text", "command"),
    [
        ("report", Report()),
        ("report 30 --here", Report(30, public=True)),
        ("history billing", History("billing")),
        ("history `billing` 14 --cluster prod --here", History("billing", 14, "prod", public=True)),
        ("thresholds billing", Thresholds("billing")),
        ("thresholds billing 60 --cluster=prod", Thresholds("billing", 60, "prod")),
    ],
)
def test_the_commands_parse_exactly(text: str, command: object) -> None:
    assert parse(text) == command


REPORT = "/lag report [days] [--here]"
HISTORY = "/lag history <group> [days] [--cluster NAME] [--here]"
THRESHOLDS = "/lag thresholds <group> [days] [--cluster NAME]"


@pytest.mark.parametrize(
    ("text", "problem", "usage"),
    [
        ("report 0", "`0` is not a number of days from 1 to 90", REPORT),
        ("report 91", "`91` is not a number of days from 1 to 90", REPORT),
        ("history", "missing <group>", HISTORY),
        ("thresholds billing 7 --here", "unknown option '--here'; options here: --cluster", THRESHOLDS),
    ],
)
def test_bad_input_is_named_with_the_usage(text: str, problem: str, usage: str) -> None:
    with pytest.raises(CommandError) as refused:
        parse(text)

    assert refused.value.message == f"{problem}\nUsage: `{usage}` {HELP}"


@pytest.fixture
def commands(redis_client: redis.Redis) -> Iterator[BotCommands]:
    settings = Settings.model_validate(
        {"clusters": [{"name": "prod", "bootstrap_servers": "127.0.0.1:9"}],
         "thresholds": {"warn": {"messages": 1_000}}, "slack": {"default_channel": CHANNEL}}
    )  # fmt: skip
    store_nights(redis_client, settings, GROUP)
    policy = Policy.model_validate({"default": {"approvers": {"users": [APPROVER]}}})
    with SlackEmulator(token=TOKEN).start() as slack:
        bot = Bot.on_redis(settings, redis_client, slack_client(TOKEN, slack.api_url), SlackPresenter(), policy=policy,
                  clock=lambda: END)  # fmt: skip
        guard = CommandGuard(
            client=redis_client,
            policy=policy,
            directory=ApproverDirectory(bot.slack, cache=MemoryUsergroupCache()),
            audit=bot.audit,
            limits=settings.slack.command_limits,
            digest_channels={CHANNEL},
        )
        deps = BotCommands(bot, RedisSilenceStore(redis_client), guard=guard)
        deps.known_groups = lambda: {"prod": [GROUP]}  # type: ignore[method-assign]  # the windows are not filled here
        yield deps


def test_history_answers_the_days_and_the_pattern_with_the_name_escaped(commands: BotCommands) -> None:
    reply = commands.run(f"history {GROUP} 2", STRANGER, CHANNEL)

    assert reply.public is False
    assert reply.blocks[0]["text"]["text"] == "*History of `orders&lt;&amp;&gt;` (prod), last 2 d: 193 stored point(s)*"
    table = reply.blocks[1]["text"]["text"].splitlines()
    assert table[0] == "```"
    assert table[3].split() == ["2023-11-25", "3,000", "-", "30", "min", "-", "-", "1"]
    assert reply.blocks[2]["text"]["text"] == (
        "Recurring patterns: most nights from 02:00, peak ~3k, drains in ~30 min; 7 of the last 7 nights "
        "(named only: nothing is silenced)"
    )


def test_report_lists_the_group_with_its_figures(commands: BotCommands) -> None:
    reply = commands.run("report --here", STRANGER, CHANNEL)

    assert reply.public is True
    assert (
        reply.blocks[0]["text"]["text"]
        == "*Lag report of the last 7 d: 1 group(s) with something to say, of 1, worst first*"
    )
    # seven nights of 2 checks at WARN (15 min each), each incident resolved after 45 min
    assert reply.blocks[1]["text"]["text"] == (
        "• `orders&lt;&amp;&gt;` (prod): 7 incident(s), 3 h 30 min at WARN, 0 s CRITICAL+, resolved in 45 min on "
        "average; causes: slow_consumer x7"
    )


def test_thresholds_are_for_approvers_and_change_nothing(commands: BotCommands, redis_client: redis.Redis) -> None:
    refused = commands.run(f"thresholds {GROUP}", STRANGER, CHANNEL)
    answered = commands.run(f"thresholds {GROUP}", APPROVER, CHANNEL)

    assert "thresholds" in refused.text and "not" in refused.text.lower()
    assert refused.blocks[0]["text"]["text"] == refused.text
    assert answered.public is False
    texts = [b["text"]["text"] for b in answered.blocks if b["type"] == "section"]
    assert texts[1].startswith("Proposed from 672 healthy point(s)")
    rows = texts[2].splitlines()[1:-1]
    assert rows[1].split("  ")[0] == "WARN level"
    assert [c.strip() for c in rows[2].split("  ") if c.strip()] == ["incidents it would open", "7", "0"]
    assert "messages: 5000" in texts[3]
    assert 'group: "orders&lt;\\\\&amp;&gt;"' in texts[3]  # re.escape of the name, JSON-quoted, Slack-escaped
    events = [(e.event, e.user, e.action) for e in commands.bot.audit.latest("prod", GROUP, 5)]
    assert events == [("refused", STRANGER, "thresholds")]
    assert commands.bot.thresholds_for("prod", GROUP).warn.messages == 1_000


def test_a_report_digest_posts_the_report_and_the_month_chart(redis_client: redis.Redis) -> None:
    from lagbot.core.digest_config import DigestConfig
    from lagbot.slack.history_replies import compose_report

    settings = Settings.model_validate(
        {"clusters": [{"name": "prod", "bootstrap_servers": "127.0.0.1:9"}], "slack": {"default_channel": CHANNEL},
         "digest": {"channels": [{"channel": CHANNEL, "cron": "0 9 * * mon", "period": "7d", "report": True}]}}
    )  # fmt: skip
    store_nights(redis_client, settings, GROUP)
    with SlackEmulator(token=TOKEN).start() as slack:
        bot = Bot.on_redis(
            settings,
            redis_client,
            slack_client(TOKEN, slack.api_url),
            SlackPresenter(),
            clock=lambda: END,
            report_composer=lambda bot, config, now: compose_report(bot, config, now=now),
        )
        config: DigestConfig = settings.digest.channels[0]

        posted = bot.digest(config)

        (message,) = [m for m in slack.history(CHANNEL) if m.thread_ts is None]
        assert message.text.startswith("*Lag report of the last 7 d: 1 group(s) with something to say, of 1")
        assert "• `orders&lt;&amp;&gt;` (prod): 7 incident(s), 3 h 30 min at WARN" in message.text
        assert posted.file_id is not None and posted.upload_error is None
        (upload,) = slack.files.values()
        assert upload["name"] == "lag-month.png"
        assert slack.uploads[upload["id"]][:8] == b"\x89PNG\r\n\x1a\n"


def test_a_weekly_period_needs_report_true_or_a_week_of_minute_points() -> None:
    from pydantic import ValidationError

    from lagbot.core.digest_config import DigestSettings

    weekly = {"channel": CHANNEL, "period": "7d"}
    assert DigestSettings.model_validate({"channels": [{**weekly, "report": True}]}).channels[0].report
    with pytest.raises(ValidationError, match="period"):
        DigestSettings.model_validate({"channels": [weekly]})
    with pytest.raises(ValidationError, match="period"):
        DigestSettings.model_validate({"history": {"rollup_retention": 0}, "channels": [{**weekly, "report": True}]})
