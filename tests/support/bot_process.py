"""`lagbot run` as a real process for end-to-end tests (lagbot.devkit.embedded.BotProcess), with the tests' secret.

The bot talks to Apache Kafka, a real redis-server and the Slack emulator, exactly as it would
talk to production services; tests observe it only from outside (the emulator, Redis, the broker,
its HTTP port).
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Any

from confluent_kafka import TopicPartition

from lagbot.devkit import embedded
from lagbot.devkit.apache_kafka import ApacheKafka
from lagbot.devkit.embedded import EmbeddedRedis
from lagbot.devkit.emulator import SlackEmulator
from tests.conftest import Kafka
from tests.support.waiting import wait_for as wait_for  # the tests import it from here too

SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"


def wait_checks(bot: embedded.BotProcess, count: int, timeout: float = 60.0) -> None:
    """Wait until the bot finished `count` more checks: each a new `taken_at` in its /healthz `checks`."""
    seen: list[tuple[tuple[str, Any], ...]] = []

    def more() -> bool | None:
        health = bot.health()
        stamp = tuple(sorted(health["checks"].items())) if health else ()
        if stamp and (not seen or seen[-1] != stamp):
            seen.append(stamp)
        return len(seen) > count or None

    wait_for(f"{count} more checks", more, timeout, every=0.1)


class BotProcess(embedded.BotProcess):
    """One `lagbot run` replica signed with SIGNING_SECRET; a failing test shows the end of its log."""

    def __init__(
        self, tmp: Path, config: dict[str, Any], *, token: str, name: str = "bot", app_token: str | None = None
    ) -> None:
        super().__init__(tmp, config, token=token, signing_secret=SIGNING_SECRET, name=name, app_token=app_token)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        if sys.exc_info()[0] is not None and not self._log.closed:  # a failing test: show what the bot said
            print(f"--- the last lines of {self.log_path.name} ---\n" + self.log_tail(40))
        return super().stop(sig, timeout)


CHANNEL = "C0ALERTS"


def bot_config(broker: ApacheKafka, redis_server: EmbeddedRedis, slack: SlackEmulator, group: str) -> dict[str, Any]:
    return {
        "clusters": [
            {
                "name": "embedded",
                "bootstrap_servers": broker.bootstrap,
                "groups": {"include": [group]},
                "check_interval": "1s",
                "request_timeout": "5s",
            }
        ],
        "window": {"samples": 30},
        "thresholds": {
            "warn": {"messages": 100},
            "critical": {"messages": 100_000},
            "page": {"messages": 1_000_000},
        },
        "evaluation": {"min_samples": 2, "min_span": "1s", "diagnose_min_lag": 50},
        "redis_url": redis_server.url,
        "slack": {"api_url": slack.api_url, "default_channel": CHANNEL},
        "incidents": {"resolve_after": "3s", "reopen_within": "1h"},
        "leader": {"lease_ttl": "3s"},
    }


def empty_group(kafka: Kafka, group: str, topic: str, committed: int) -> None:
    """A group that has had a member (then none) and committed `committed` on partition 0 of `topic`: the
    broker lists it (a group made only by AlterConsumerGroupOffsets is not listed by Apache Kafka 4.1 here)."""
    consumer = kafka.consumer(group)
    consumer.subscribe([topic])
    kafka.wait_assigned(consumer)
    consumer.commit(offsets=[TopicPartition(topic, 0, committed)], asynchronous=False)
    consumer.close()
