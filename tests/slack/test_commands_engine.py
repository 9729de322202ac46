"""`/lag` on real parts: checks of Apache Kafka, silences in a real redis-server, replies sent to the
Slack emulator's response URL (which refuses anything over Slack's limits).

Every offset asserted was produced and committed by the test through the Kafka protocol and read back by
the collector; messages are produced one per batch (tests/conftest.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest
import redis
from slack_sdk.webhook import WebhookClient

from lagbot.core.config import Settings, build_settings
from lagbot.core.model import GroupSummary, GroupVerdict
from lagbot.devkit.emulator import SlackEmulator
from lagbot.engine.check import Checker, CheckReport
from lagbot.engine.window import MemoryWindowStore
from lagbot.service.silences import RedisSilenceStore, SilenceStore
from lagbot.slack.commands import Reply
from lagbot.slack.subcommands import run_command
from tests.conftest import Kafka, Names

pytestmark = pytest.mark.integration

USER, CHANNEL = "U0ONCALL", "C0ALERTS"


def settings_for(kafka: Kafka, *groups: str) -> Settings:
    return build_settings(
        {
            "clusters": [
                {
                    "name": "embedded",
                    "bootstrap_servers": kafka.bootstrap,
                    "groups": {"include": list(groups)},
                    "request_timeout": 5,
                }
            ],
        },
        source="test",
    )


class EngineDeps:
    """The app's side of the contract, reduced to the engine: a Checker on the broker, silences in Redis."""

    def __init__(self, settings: Settings, silences: SilenceStore) -> None:
        self.checker = Checker(settings, MemoryWindowStore(samples=10))
        self.settings = settings
        self.silences = silences
        self.scheduled: CheckReport | None = None
        self.fresh_checks: list[tuple[str, str]] = []

    def scheduled_check(self) -> None:
        self.scheduled = self.checker.cycle()

    def known_groups(self) -> Mapping[str, Sequence[str]]:
        groups: dict[str, list[str]] = {c.name: [] for c in self.settings.clusters}
        for v in self.latest_summaries():
            groups[v.cluster].append(v.group)
        return groups

    def latest_summaries(self) -> Sequence[GroupSummary]:
        return [GroupSummary.of(v) for v in self.scheduled.verdicts] if self.scheduled is not None else []

    def check_group(self, cluster: str, group: str) -> GroupVerdict:
        self.fresh_checks.append((cluster, group))
        report = self.checker.cycle()
        return next(v for v in report.verdicts if (v.cluster, v.group) == (cluster, group))

    def post_digest(self, channel: str) -> None:
        raise NotImplementedError

    def audit(self, cluster: str, group: str) -> Reply:
        raise NotImplementedError

    def remediate(self, cluster: str, group: str, action: str, user: str, *, args: Sequence[str]) -> Reply:
        raise NotImplementedError


@pytest.fixture(scope="module")
def slack() -> Iterator[SlackEmulator]:
    with SlackEmulator().start() as running:
        yield running


def respond(slack: SlackEmulator, reply: Reply) -> dict[str, Any]:
    """Send the reply as bolt's `respond` does (to the command's response_url); what Slack kept."""
    key = f"R-{id(reply)}"
    response = WebhookClient(slack.response_url(key)).send_dict(reply.to_response())
    assert (response.status_code, response.body) == (200, "ok")
    [kept] = slack.responses[key]
    return kept


def cells(reply: Reply) -> list[list[str]]:
    [table] = [b for b in reply.blocks if b["type"] == "table"]
    return [[cell["text"] for cell in row] for row in table["rows"]]


def test_lag_group_replies_with_the_exact_offsets_of_a_fresh_check(
    kafka: Kafka, names: Names, slack: SlackEmulator, redis_client: redis.Redis
) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 3)
    for partition, count in ((0, 10), (1, 20), (2, 5)):
        kafka.produce(topic, partition, count)
    kafka.commit(group, {(topic, 0): 4, (topic, 1): 20, (topic, 2): 0})
    deps = EngineDeps(settings_for(kafka, group), RedisSilenceStore(redis_client))
    deps.scheduled_check()
    kafka.produce(topic, 2, 3)  # after the scheduled check: only a fresh check sees log-end 8

    reply = run_command(f"{group} embedded", deps, user=USER, channel=CHANNEL, now=1_700_000_000.0)

    assert deps.fresh_checks == [("embedded", group)]
    assert [row[:4] + row[5:6] for row in cells(reply)] == [
        ["partition", "committed", "log-end", "lag", "owner"],
        [f"{topic}/2", "0", "8", "8", "-"],
        [f"{topic}/0", "4", "10", "6", "-"],
        [f"{topic}/1", "20", "20", "0", "-"],
    ]
    assert reply.blocks[0]["text"]["text"].startswith(f":large_green_circle: *OK* `{group}` on embedded: ")
    assert "lag *14*" in reply.blocks[0]["text"]["text"]
    assert reply.public is False
    kept = respond(slack, reply)
    assert kept == {"response_type": "ephemeral", "text": reply.text, "blocks": reply.blocks}


def test_silence_top_and_unsilence_on_real_groups_and_real_redis(
    kafka: Kafka, names: Names, slack: SlackEmulator, redis_client: redis.Redis
) -> None:
    topic, busy, calm = names("topic"), names("busy"), names("calm")
    kafka.create_topic(topic, 1)
    kafka.produce(topic, 0, 12)
    kafka.commit(busy, {(topic, 0): 2})
    kafka.commit(calm, {(topic, 0): 12})
    deps = EngineDeps(settings_for(kafka, busy, calm), RedisSilenceStore(redis_client))
    deps.scheduled_check()
    now = 1_700_000_000.0

    def lag(text: str) -> Reply:
        return run_command(text, deps, user=USER, channel=CHANNEL, now=now)

    silenced = lag(f"silence {busy} 2h --cluster embedded backfill running")
    top = lag("top 2 --here")
    typo = lag(f"silence {busy}x 2h")

    assert silenced.public is True
    assert f"silenced `{busy}` on embedded for 2 h" in silenced.text and "Reason: backfill running" in silenced.text
    key = f"lagbot:silence:embedded:{busy}"
    assert 7_195_000 < int(redis_client.pttl(key)) <= 7_200_000
    assert [(s.group, s.until, s.reason, s.by) for s in deps.silences.all_active(now)] == [
        (busy, now + 7_200, "backfill running", USER)
    ]
    assert [row[:5] + row[7:] for row in cells(top)] == [
        ["group", "cluster", "severity", "status", "lag", "silenced"],
        [busy, "embedded", "OK", "OK", "10", "2 h left"],
        [calm, "embedded", "OK", "OK", "0", "-"],  # not silenced: Slack refuses a cell of no text
    ]
    assert typo.text.startswith(f"no consumer group `{busy}x` on any cluster; closest: `{busy}`")
    assert deps.fresh_checks == []  # silence and top read what exists; only `/lag <group>` checks afresh
    for reply in (silenced, top, typo):
        respond(slack, reply)

    lifted = lag(f"unsilence {busy}")

    assert lifted.text == f":bell: <@{USER}> lifted the silence of `{busy}` on embedded: incidents open again."
    assert redis_client.exists(key) == 0
    assert deps.silences.all_active(now) == []
