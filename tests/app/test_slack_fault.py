"""Faults on Slack's side, with two `lagbot run` replicas: an outage (every chat.postMessage answers 500) and a
burst of 429s during a remediation. Nothing is lost or duplicated, order is kept per thread, the action runs
once and its run ends with an outcome. The recovery time measured is printed (`-s`) for docs/faults.md."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
import redis

from lagbot.devkit.apache_kafka import ApacheKafka
from lagbot.devkit.embedded import EmbeddedRedis
from lagbot.devkit.emulator import SlackEmulator
from tests.conftest import Kafka, Names
from tests.support.bot_process import CHANNEL, SIGNING_SECRET, BotProcess, wait_for
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
OUTAGE = 60.0


def test_a_slack_outage_then_a_429_burst_lose_and_duplicate_nothing(
    kafka: Kafka,
    names: Names,
    broker: ApacheKafka,
    redis_server: EmbeddedRedis,
    redis_client: redis.Redis,
    slack: SlackEmulator,
    tmp_path: Path,
    gated: Path,
) -> None:
    group = lagging_group(kafka, names)
    cfg = config(broker, redis_server, slack, group, tmp_path)
    slack.fail("chat.postMessage", status=500, times=10**6)  # Slack is down
    down_at = time.monotonic()
    bots = [BotProcess(tmp_path, cfg, token=TOKEN, name=f"replica-{i}") for i in range(2)]
    try:
        for bot in bots:
            bot.wait_ready()
        wait_for("the outage to be hit", lambda: len(slack.calls_to("chat.postMessage")) >= 6, timeout=60)
        # The outage: Slack down for 60 s, checks and deliveries going on all the while.
        wait_for(f"{OUTAGE:g} s of outage", lambda: time.monotonic() - down_at >= OUTAGE, timeout=OUTAGE + 5)
        assert all(b.running for b in bots)
        assert slack.messages == []
        pending = wait_for(
            "queued messages", lambda: max((b.health() or {}).get("outbox", {}).get("pending", 0) for b in bots), 30
        )
        assert pending >= 1

        slack.fail("chat.postMessage", status=500, times=0)  # Slack is back
        back_at = time.monotonic()
        root, reply = approve_reply(slack)
        recovered = time.monotonic() - back_at
        print(f"\nfault slack outage {OUTAGE:g} s: everything queued delivered {recovered:.1f} s after Slack came back")
        assert [m.ts for m in slack.channel(CHANNEL)] == [root.ts]  # one root, posted once

        # A 429 burst while a remediation speaks in the thread: it runs once and its messages keep their order.
        (tmp_path / "gate").write_text("open")  # the scale finishes at once
        slack.fail("chat.postMessage", status=429, retry_after=1, times=4)
        status, _, _ = slack.click_button(
            bots[0].events_url, SIGNING_SECRET, user=APPROVER, message=reply, action_prefix="approve:"
        )
        assert status == 200

        def result() -> list[str] | None:
            texts = [m.text for m in slack.thread(CHANNEL, root.ts)]
            return (
                texts if any(t.startswith(":white_check_mark: *Scale orders 1 -&gt; 3* done") for t in texts) else None
            )

        texts = wait_for("the result in the thread", result, timeout=60)
        running = next(i for i, t in enumerate(texts) if "running" in t and "Scale orders" in t)
        done = next(i for i, t in enumerate(texts) if t.startswith(":white_check_mark: *Scale orders"))
        assert running < done
        assert (tmp_path / "runs.jsonl").read_text().count("\n") == 1  # the action ran once
        assert [c.status for c in slack.calls_to("chat.postMessage")].count(429) == 4
        assert_no_message_lost_or_duplicated(slack)
        wait_for("the outbox emptied", lambda: redis_client.zcard("lagbot:outbox:pending") == 0, timeout=30)
        assert all("Traceback" not in b.log() for b in bots)
        print(f"fault slack outage: replica RSS {', '.join(f'{rss_mb(b):.0f} MB' for b in bots)}")
        assert all(rss_mb(b) < RSS_LIMIT_MB for b in bots)
    finally:
        for bot in bots:
            bot.stop(signal.SIGKILL)
