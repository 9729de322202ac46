"""The fault tests' rig: `lagbot run` replicas with a gated scale command, a lagging group, and the checks every
fault asserts (no Slack message lost or duplicated, bounded memory)."""

from __future__ import annotations

import json
import sys
import textwrap
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
from tests.support.bot_process import CHANNEL, BotProcess, bot_config, wait_for

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
