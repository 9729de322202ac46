"""Faults on Redis, with two `lagbot run` replicas: Redis unreachable and back (its data kept), and Redis
restarted empty. The replicas survive both (no crash loop), lead again, and nothing is sent twice; after an
empty restart the bot says once in the channel that it lost its state, and each open incident is reopened
once. Recovery times are printed (`-s`) for docs/faults.md."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lagbot.devkit.apache_kafka import ApacheKafka
from lagbot.devkit.embedded import EmbeddedRedis
from lagbot.devkit.emulator import Message, SlackEmulator
from lagbot.slack.wording import incidents as slack_wording
from tests.conftest import Kafka, Names
from tests.support.bot_process import CHANNEL, SIGNING_SECRET, BotProcess, wait_for
from tests.support.cut_proxy import CutProxy
from tests.support.faults import (
    APPROVER,
    RSS_LIMIT_MB,
    TOKEN,
    approve_reply,
    assert_no_message_lost_or_duplicated,
    config,
    gated,
    lagging_group,
    rss_mb,
    slack,
)

pytestmark = pytest.mark.integration
__all__ = ["gated", "slack"]  # fixtures from tests.support.faults
DOWN_FOR = 30.0  # the issue: Redis down 30 s and back


@pytest.fixture
def own_redis() -> Iterator[EmbeddedRedis]:
    """A redis-server of this test alone (the session's one is shared and must stay up)."""
    with EmbeddedRedis().start() as running:
        yield running


def leading(bots: list[BotProcess]) -> bool:
    answers = [b.health() or {} for b in bots]
    return any(a.get("leader") for a in answers) and all(a.get("ok") for a in answers)


def test_redis_unreachable_then_back_is_survived_and_nothing_is_sent_twice(
    kafka: Kafka,
    names: Names,
    broker: ApacheKafka,
    own_redis: EmbeddedRedis,
    slack: SlackEmulator,
    tmp_path: Path,
    gated: Path,
) -> None:
    group = lagging_group(kafka, names)
    with CutProxy(own_redis.port).start() as proxy:
        cfg = config(broker, own_redis, slack, group, tmp_path)
        cfg["redis_url"] = f"redis://127.0.0.1:{proxy.port}/0"
        bots = [BotProcess(tmp_path, cfg, token=TOKEN, name=f"replica-{i}") for i in range(2)]
        try:
            for bot in bots:
                bot.wait_ready()
            root, reply = approve_reply(slack)

            proxy.cut()
            cut_at = time.monotonic()
            wait_for("both replicas to report Redis down", lambda: all(b.health() is None for b in bots), 30)
            wait_for(f"{DOWN_FOR:g} s of outage", lambda: time.monotonic() - cut_at >= DOWN_FOR, DOWN_FOR + 5)
            proxy.restore()
            back_at = time.monotonic()
            wait_for("a leader and healthy replicas again", lambda: leading(bots), timeout=60)
            recovered = time.monotonic() - back_at
            print(
                f"\nfault redis down {DOWN_FOR:g} s: a leader and healthy replicas {recovered:.1f} s after it was back"
            )
            assert all(b.running for b in bots)
            assert all(rss_mb(b) < RSS_LIMIT_MB for b in bots)

            (tmp_path / "gate").write_text("open")
            status, _, _ = slack.click_button(
                bots[1].events_url, SIGNING_SECRET, user=APPROVER, message=reply, action_prefix="approve:"
            )
            assert status == 200
            done = ":white_check_mark: *Scale orders 1 -&gt; 3* done"
            wait_for("the result", lambda: any(m.text.startswith(done) for m in slack.thread(CHANNEL, root.ts)), 60)
            assert (tmp_path / "runs.jsonl").read_text().count("\n") == 1
            assert [m.ts for m in slack.channel(CHANNEL)] == [root.ts]
            assert_no_message_lost_or_duplicated(slack)
            assert all("Traceback (most recent call last)" not in line for b in bots for line in b.log().splitlines()
                       if not line.startswith("{"))  # fmt: skip
        finally:
            for bot in bots:
                bot.stop(signal.SIGKILL)


def test_redis_restarted_empty_reopens_each_incident_once_without_a_crash_loop(
    kafka: Kafka,
    names: Names,
    broker: ApacheKafka,
    own_redis: EmbeddedRedis,
    slack: SlackEmulator,
    tmp_path: Path,
    gated: Path,
) -> None:
    group = lagging_group(kafka, names)
    cfg = config(broker, own_redis, slack, group, tmp_path)
    bots = [BotProcess(tmp_path, cfg, token=TOKEN, name=f"replica-{i}") for i in range(2)]
    try:
        for bot in bots:
            bot.wait_ready()
        approve_reply(slack)
        [first] = slack.channel(CHANNEL)

        own_redis.stop()
        own_redis.start(port=own_redis.port)  # the same address, nothing in it
        back_at = time.monotonic()
        wait_for("a leader and healthy replicas again", lambda: leading(bots), timeout=60)
        recovered = time.monotonic() - back_at
        notice = slack_wording.state_lost()

        def reopened() -> list[Message] | None:
            later = [m for m in slack.channel(CHANNEL)[1:] if m.text != notice]
            return later or None

        [root] = wait_for("the incident reopened", reopened, timeout=60)
        reopened_after = time.monotonic() - back_at
        print(f"\nfault redis restarted empty: leader after {recovered:.1f} s, reopened after {reopened_after:.1f} s")
        # Several more checks: the loss said once, the incident open again once (no loop, no crash loop).
        settle = time.monotonic() + 5
        wait_for("five more seconds of checks", lambda: time.monotonic() >= settle, timeout=10)
        roots = slack.channel(CHANNEL)
        assert roots[0].ts == first.ts
        assert sorted(m.ts for m in roots[1:]) == sorted([root.ts, next(m.ts for m in roots if m.text == notice)])
        assert all(b.running for b in bots)
        assert all(rss_mb(b) < RSS_LIMIT_MB for b in bots)
        assert_no_message_lost_or_duplicated(slack)
    finally:
        for bot in bots:
            bot.stop(signal.SIGKILL)
