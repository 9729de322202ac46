"""Names any Kafka client can create, through every surface lagbot shows them on, as an attacker would send them.

Hostile names (mention and link syntax, mrkdwn, HTML, backticks, control, bidi and invisible characters, the key
separators `:`, `*`, `{`, newlines, a 249-character name) are made real consumer groups on Apache Kafka (one offset
commit each, as any client can), mixed at random from hostile fragments (the seed is in the test's id). A leader checks
the cluster and posts its incidents to the Slack emulator; `/lag top` answers; `lagbot check` prints its table and its
JSON; `/metrics` is rendered; the logs are formatted as the bot writes them. Asserted on each surface: no two names
share a Redis key, no live mention or link, no raw control, escape or bidi character, every name read back exactly
where the surface carries it whole (JSON, metrics labels), and every step ends (no hang: bounded waits only).
"""

from __future__ import annotations

import json
import logging
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families

from lagbot.cli.main import main
from lagbot.core import keys
from lagbot.core.config import Settings, build_settings
from lagbot.core.logs import JsonFormatter
from lagbot.core.messages import slack_escape
from lagbot.devkit.emulator import SlackEmulator
from lagbot.service.bot import Bot
from lagbot.service.silences import MemorySilenceStore
from lagbot.service.slack_api import slack_client
from lagbot.slack.presenter import SlackPresenter
from lagbot.slack.wiring import BotCommands
from tests.conftest import Kafka, Names
from tests.support.engine_rig import FAST_RULES

pytestmark = pytest.mark.integration

TOKEN = "xoxb-hostile-names"
CHANNEL = "C0ALERTS"
SEED = 24
FRAGMENTS = [
    "<!channel>", "<!here>", "<@U0ADMIN>", "<#C0OTHER>", "<https://evil.example/x|click here>", "http://evil.example",
    "*bold*", "_it_", "~s~", "`", "```", "> quote", "<script>alert(1)</script>", "&amp;", "&lt;", "\u202e", "\u2066",
    "\u200b", "\ufeff", "\x1b[31m", "\x1b]8;;http://evil.example\x07", "\x07", "\x08", "\r", "\n", "\t", "\x7f",
    "\x9b", ":", ":seq", "*", "?", "[x]", "{tag}", "%3A", "%", " ", "\\", '"', "'", "=", "é", "中", "🚀",
]  # fmt: skip
FIXED = ["evil-<!channel>", "<https://evil.example|click>", "`close` the span", "\u202egnp.exe", "a\nb", "x:seq"]
LIVE_TOKEN = re.compile(r"<[^>]*>")
BOT_TOKEN = re.compile(r"<!date\^\d+\^[^|>]*\|[^>]*>|<@U0[A-Z0-9]+>")
RAW = re.compile("[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f\\u061c\\u200b-\\u200f\\u2028-\\u202e\\u2060-\\u206f\\ufeff]")
"""What no surface may carry raw: control characters (a newline and a tab excepted), bidi and invisible ones."""


def hostile_names(prefix: str, rng: random.Random, count: int) -> list[str]:
    made = [prefix + name for name in FIXED]
    while len(made) < count:
        made.append(prefix + "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 5))))
    made.append((prefix + "<!channel>" + "y" * 249)[:249])
    return list(dict.fromkeys(made))


def settings(kafka: Kafka, prefix: str) -> dict[str, Any]:
    return {
        "clusters": [
            {
                "name": "prod",
                "bootstrap_servers": kafka.bootstrap,
                "groups": {"include": [f"{re.escape(prefix)}.*"]},
                "request_timeout": 10,
            }
        ],
        "slack": {"default_channel": CHANNEL},
        "evaluation": FAST_RULES,
        "thresholds": {"warn": {"messages": 1, "growing": False, "sustained_for": 0}},
        # every group its own thread (the surface under test), not one storm summary: tests/app/test_incident_storm_*
        "incidents": {"storm": {"threshold": 1_000}},
    }


def strings(value: object, *, parsed: bool | None = None) -> Iterator[str]:
    """Every string in a message (its text, and every text of its blocks, at any depth); `parsed`: only those Slack
    reads as mrkdwn (True), only those it shows as they are (`raw_text` and `plain_text` cells: False), or all."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        literal = value.get("type") in ("raw_text", "plain_text")
        if parsed is None or parsed != literal:
            for item in value.values():
                yield from strings(item, parsed=parsed)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item, parsed=parsed)


def assert_shown_as_is(text: str) -> None:
    assert not RAW.search(text), text


def assert_inert_in_slack(text: str) -> None:
    assert_shown_as_is(text)
    for token in LIVE_TOKEN.findall(text):
        assert BOT_TOKEN.fullmatch(token) and "U0ADMIN" not in token, (token, text)
    assert not RAW.search(text), text
    assert "<https" not in text and "<script" not in text, text
    outside_code = CODE.sub("", text)
    assert "evil.example" not in outside_code, text  # a bare URL is linked by Slack outside code only


CODE = re.compile(r"```.*?```|`[^`]*`", re.DOTALL)


def test_fuzz_hostile_group_names_on_apache_kafka_through_every_surface(
    kafka: Kafka,
    names: Names,
    redis_client: redis.Redis,
    slack: SlackEmulator,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    rng = random.Random(SEED)
    prefix = names("h") + "-"
    topic = (names("topic") + "." + "t_" * 130)[:249]  # Kafka's longest topic name
    kafka.create_topic(topic, 1)
    kafka.produce(topic, 0, 60)
    groups = hostile_names(prefix, rng, 30)
    for lag, group in enumerate(groups, start=2):  # every one past the warn threshold (1 message)
        kafka.commit(group, {(topic, 0): 60 - lag})
    expected_lag = {group: lag for lag, group in enumerate(groups, start=2)}

    config: Settings = build_settings(settings(kafka, prefix), source="test")
    bot = Bot.on_redis(config, redis_client, slack_client(TOKEN, slack.api_url), SlackPresenter())
    assert bot.leadership.tick()
    with caplog.at_level(logging.INFO):
        for _ in range(2):
            result = bot.check("prod")
            assert result is not None
            assert {v.group: v.total_lag for v in result.report.verdicts} == expected_lag
        top = BotCommands(bot, MemorySilenceStore()).run("top 50", "U0ONCALL", CHANNEL)

    # Redis: every group its own keys, every key printable ASCII without a separator from a name
    window_keys = {keys.window("prod", g) for g in groups}
    incident_keys = {keys.incident("prod", g) for g in groups}
    assert len(window_keys) == len(incident_keys) == len(groups)
    stored = {k.decode("ascii") for k in redis_client.keys("*")}
    assert window_keys <= stored and incident_keys <= stored
    assert all(k.isprintable() for k in stored)
    for group in groups:
        assert redis_client.llen(keys.window("prod", group)) == 2
        incident = bot.incidents.get("prod", group)
        assert incident is not None and incident.group == group

    # Slack: every root and reply, text and blocks, and the /lag top answer
    posted = slack.history(CHANNEL)
    roots = [m for m in posted if m.thread_ts is None]
    assert len(roots) == len(groups)
    assert len(posted) >= 2 * len(groups)  # every root and its first reply (the partition table)
    mrkdwn = [s for m in posted for s in [m.text, *strings(m.blocks, parsed=True)]]
    for text in [*mrkdwn, top.text, *strings(top.blocks, parsed=True)]:
        assert_inert_in_slack(text)
    for text in [*(s for m in posted for s in strings(m.blocks, parsed=False)), *strings(top.blocks, parsed=False)]:
        assert_shown_as_is(text)  # raw and plain text: never read as markup, still no control or bidi character
    for group in groups:
        shown = slack_escape(group)
        assert any(shown in m.text for m in roots), group  # the notification text names it, escaped
        assert any(shown in s for m in roots for s in strings(m.blocks, parsed=True)), group
    assert "`" not in "".join(slack_escape(g) for g in groups)

    # /metrics: every label read back exactly as the name
    families = text_string_to_metric_families(bot.metrics.render().decode())
    labelled = {s.labels["group"] for f in families for s in f.samples if "group" in s.labels}
    assert labelled == set(groups)

    # logs, as the bot writes them: one line each, nothing raw
    formatter = JsonFormatter()
    for record in caplog.records:
        line = formatter.format(record)
        assert "\n" not in line and not RAW.search(line), line

    # lagbot check: its table and its JSON
    path = tmp_path / "lagbot.yaml"
    path.write_text(json.dumps({"clusters": settings(kafka, prefix)["clusters"]}), encoding="utf-8")
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["check", "-n", "1", "-c", str(path)])
    table = capsys.readouterr().out
    assert not RAW.search(table), [line for line in table.splitlines() if RAW.search(line)]
    assert "\x1b" not in table and "\t" not in table
    assert table.count("\n") < 30 * len(groups)  # no name adds lines of its own
    with pytest.raises(SystemExit):
        main(["check", "-n", "1", "--json", "-c", str(path)])
    out = capsys.readouterr().out
    assert out.isascii() and not RAW.search(out)
    report = json.loads(out)
    assert {g["group"]: g["total_lag"] for g in report["groups"]} == expected_lag
