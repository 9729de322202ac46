"""Faults: kill -9 of the leading `lagbot run` in the middle of a remediation and of a delivery, with two
replicas throughout (Apache Kafka, a real redis-server, the Slack emulator, real processes).

Each asserts: the other replica takes over within two lease periods, the action ran once, the run ends
with an outcome (said in its thread and the audit), and no Slack message is lost or duplicated (order kept
per thread). The recovery times measured are printed (`-s`) for docs/faults.md.
"""

from __future__ import annotations

import json
import signal
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml
from confluent_kafka import TopicPartition

from lagbot.devkit.apache_kafka import ApacheKafka
from lagbot.devkit.embedded import EmbeddedRedis
from lagbot.devkit.emulator import Message, SlackEmulator
from lagbot.service.audit import AuditLog
from tests.conftest import Kafka, Names
from tests.integration.bot_process import SIGNING_SECRET, BotProcess, wait_for
from tests.integration.test_bot_e2e import CHANNEL, bot_config

pytestmark = pytest.mark.integration

TOKEN = "xoxb-faults"
APPROVER = "U0APPROVER"
TTL = 3.0
HEARTBEAT = 1.0
GATED_SCALE = textwrap.dedent(
    """
    import json, os, sys, time
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.argv[1] == "replicas":
        print("1")
        sys.exit(0)
    with open(os.path.join(here, "runs.jsonl"), "a") as runs:
        runs.write(json.dumps(sys.argv[1:]) + "\\n")
    deadline = time.time() + 120
    while not os.path.exists(os.path.join(here, "gate")) and time.time() < deadline:
        time.sleep(0.05)
    print("scaled")
    """
)


@pytest.fixture
def slack() -> Iterator[SlackEmulator]:
    with SlackEmulator(token=TOKEN).start() as running:
        yield running


@pytest.fixture
def gated(tmp_path: Path) -> Iterator[Path]:
    """A scale command that records each run and then waits for a gate file (opened at the end, always)."""
    script = tmp_path / "scale.py"
    script.write_text(GATED_SCALE)
    yield script
    (tmp_path / "gate").write_text("open")


def config(
    broker: ApacheKafka, redis_server: EmbeddedRedis, slack: SlackEmulator, group: str, tmp: Path
) -> dict[str, Any]:
    policy = {
        "version": 1,
        "default": {
            "name": "team-orders",
            "approvers": {"users": [APPROVER]},
            "workload": {"executor": "command", "name": "orders"},
            "remediations": {"scale": {"min_replicas": 1, "max_replicas": 3, "proposal_expiry": "10m", "cooldown": 0}},
        },
    }
    (tmp / "policy.yaml").write_text(yaml.safe_dump(policy))
    script = str(tmp / "scale.py")
    base = bot_config(broker, redis_server, slack, group)
    return {
        **base,
        "thresholds": {**base["thresholds"], "critical": {"messages": 10**8}, "page": {"messages": 10**9}},
        "policy_file": str(tmp / "policy.yaml"),
        "executors": {
            "command": {
                "scale": [sys.executable, script, "scale", "{workload}", "{replicas}"],
                "replicas": [sys.executable, script, "replicas", "{workload}"],
                "timeout": 120,
            }
        },
        "leader": {"lease_ttl": f"{TTL:g}s", "run_heartbeat": f"{HEARTBEAT:g}s"},
    }


def lagging_group(kafka: Kafka, names: Names) -> str:
    """A group with committed offsets, lag and no members: a throughput deficit whose fix is a scale."""
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 4)
    kafka.produce(topic, 0, 300)
    consumer = kafka.consumer(group)  # a member that joins, commits the start and leaves: an Empty group
    consumer.subscribe([topic])
    kafka.wait_assigned(consumer)
    consumer.commit(offsets=[TopicPartition(topic, p, 0) for p in range(4)], asynchronous=False)
    consumer.close()
    return group


def approve_reply(slack: SlackEmulator) -> tuple[Message, Message]:
    def find() -> tuple[Message, Message] | None:
        for root in slack.channel(CHANNEL):
            for reply in slack.thread(CHANNEL, root.ts):
                if "approve:" in json.dumps(reply.blocks):
                    return root, reply
        return None

    try:
        return wait_for("a proposal with an approve button", find, timeout=40)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the channel holds {[m.text[:200] for m in slack.history(CHANNEL)]}") from None


def leader_of(bots: list[BotProcess]) -> BotProcess:
    def find() -> BotProcess | None:
        return next((b for b in bots if b.running and (b.health() or {}).get("leader")), None)

    return wait_for("a leader", find, timeout=30)


def assert_no_message_lost_or_duplicated(slack: SlackEmulator) -> None:
    """Every text in each thread once, and every root once."""
    roots = slack.channel(CHANNEL)
    assert len(roots) == len({r.ts for r in roots})
    for root in roots:
        texts = [m.text for m in slack.thread(CHANNEL, root.ts)]
        repeated = [t for t, n in Counter(texts).items() if n > 1]
        assert repeated == [], f"duplicated in the thread: {repeated}"


RSS_LIMIT_MB = 400
"""A replica's resident memory after a fault (measured: about 90 MB)."""


def rss_mb(bot: BotProcess) -> float:
    """The replica's resident set size, from /proc."""
    status = Path(f"/proc/{bot.process.pid}/status").read_text()
    [kb] = [line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")]
    return int(kb) / 1024


def events(redis_client: redis.Redis, group: str) -> list[Any]:
    return list(reversed(AuditLog(redis_client).latest("embedded", group, 100)))


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
