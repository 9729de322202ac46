"""Faults: kill -9 of the leading `lagbot run` in the middle of a remediation and of a delivery, with two
replicas throughout (Apache Kafka, a real redis-server, the Slack emulator, real processes).

Each asserts: the other replica takes over within two lease periods, the action ran once, the run ends
with an outcome (said in its thread and the audit), and no Slack message is lost or duplicated (order kept
per thread). The recovery times measured are printed (`-s`) for docs/faults.md.
"""

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
    TTL,
    approve_reply,
    assert_no_message_lost_or_duplicated,
    config,
    events,
    gated,
    lagging_group,
    leader_of,
    rss_mb,
    slack,
)

pytestmark = pytest.mark.integration
__all__ = ["gated", "slack"]  # fixtures from tests.support.faults


def test_kill_9_of_the_leader_mid_remediation_is_taken_over_and_the_run_ends_interrupted_once(
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
    bots = [BotProcess(tmp_path, cfg, token=TOKEN, name=f"replica-{i}") for i in range(2)]
    try:
        for bot in bots:
            bot.wait_ready()
        root, reply = approve_reply(slack)
        leader = leader_of(bots)
        survivor = next(b for b in bots if b is not leader)
        status, _, _ = slack.click_button(
            leader.events_url, SIGNING_SECRET, user=APPROVER, message=reply, action_prefix="approve:"
        )
        assert status == 200
        runs = tmp_path / "runs.jsonl"
        wait_for("the scale to start", lambda: runs.exists() and runs.read_text().count("\n") == 1, timeout=30)

        killed_at = time.monotonic()
        leader.stop(signal.SIGKILL)
        wait_for("the survivor to lead", lambda: (survivor.health() or {}).get("leader"), timeout=2 * TTL + 5)
        takeover = time.monotonic() - killed_at
        finished = wait_for(
            "the run finished as interrupted",
            lambda: [e for e in events(redis_client, group) if e.event == "failed"],
            timeout=60,
        )
        interrupted_after = time.monotonic() - killed_at
        print(
            f"\nfault kill-9 mid-remediation: takeover {takeover:.1f} s, "
            f"run interrupted after {interrupted_after:.1f} s"
        )
        assert takeover <= 2 * TTL

        [failed] = finished
        assert failed.detail["data"] == {"interrupted": True} and "stopped reporting" in failed.detail["detail"]
        wait_for("the outcome in the thread", lambda: "interrupted: scale" in slack.thread(CHANNEL, root.ts)[-1].text)
        texts = [m.text for m in slack.thread(CHANNEL, root.ts)]
        running = next(i for i, t in enumerate(texts) if "running" in t and "Scale orders" in t)
        assert running < len(texts) - 1 and texts[-1].startswith(":x: *Scale orders 1 -&gt; 3* failed: interrupted")
        assert runs.read_text().count("\n") == 1  # the action ran once: nobody ran it again
        assert redis_client.exists(f"lagbot:busy:embedded:{group}") == 0  # new proposals may run again
        assert_no_message_lost_or_duplicated(slack)
        assert "Traceback" not in survivor.log()
        assert rss_mb(survivor) < RSS_LIMIT_MB
    finally:
        for bot in bots:
            bot.stop(signal.SIGKILL)


def test_kill_9_of_the_leader_mid_delivery_loses_and_duplicates_no_message(
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
    # Slack rate-limits the first root long enough for the leader to be killed while it delivers.
    slack.fail("chat.postMessage", status=429, retry_after=30, times=1)
    bots = [BotProcess(tmp_path, cfg, token=TOKEN, name=f"replica-{i}") for i in range(2)]
    try:
        for bot in bots:
            bot.wait_ready()
        wait_for("a delivery stuck on the rate limit", lambda: slack.calls_to("chat.postMessage"), timeout=60)
        holder = (redis_client.get("lagbot:outbox:lock") or b"").decode().split(" ")[0]
        leader = next(b for b in bots if (b.health() or {}).get("replica") == holder)
        survivor = next(b for b in bots if b is not leader)

        killed_at = time.monotonic()
        leader.stop(signal.SIGKILL)
        root, _ = approve_reply(slack)  # the survivor delivered the root and its replies
        delivered = time.monotonic() - killed_at
        print(f"\nfault kill-9 mid-delivery: delivery resumed by the other replica after {delivered:.1f} s")
        assert delivered <= 2 * TTL + 5.0  # the lock's lease, then a delivery round and its Slack calls
        assert (survivor.health() or {}).get("leader")
        [only] = slack.channel(CHANNEL)
        assert only.ts == root.ts  # one root: the 429'd attempt did not post, and it was posted once after
        statuses = [c.status for c in slack.calls_to("chat.postMessage")]
        assert statuses[0] == 429 and statuses.count(429) == 1
        assert_no_message_lost_or_duplicated(slack)
        wait_for("the outbox emptied", lambda: redis_client.zcard("lagbot:outbox:pending") == 0, timeout=30)
        assert "Traceback" not in survivor.log()
        assert rss_mb(survivor) < RSS_LIMIT_MB
    finally:
        for bot in bots:
            bot.stop(signal.SIGKILL)
