"""A Redis that came back empty, with two replicas on it (real redis-server, Apache Kafka, the Slack emulator): the
channel is told once that the state was lost, by whichever replica leads after it, and the incident reopens once.
The leader before the loss need not be the leader after it (the replica that lost the race for the new lease
knew the channels; the one that won it had never checked)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from lagbot.core.config import build_settings
from lagbot.devkit.apache_kafka import ApacheKafka
from lagbot.devkit.emulator import SlackEmulator
from lagbot.service.bot import Bot
from lagbot.service.slack_api import slack_client
from lagbot.slack.presenter import SlackPresenter
from lagbot.slack.wording import incidents as slack_wording
from tests.conftest import Kafka, Names
from tests.support.bot_process import wait_for
from tests.support.faults import lagging_group

pytestmark = pytest.mark.integration

TOKEN = "xoxb-state-lost"
CHANNEL = "C1"
CLUSTER = "prod"


@pytest.fixture
def slack() -> Iterator[SlackEmulator]:
    with SlackEmulator(token=TOKEN).start() as running:
        yield running


def replica(redis_client: redis.Redis, slack: SlackEmulator, broker: ApacheKafka, group: str, name: str) -> Bot:
    settings = build_settings(
        {
            "clusters": [
                {"name": CLUSTER, "bootstrap_servers": broker.bootstrap, "groups": {"include": [group]},
                 "check_interval": "1s", "request_timeout": "5s"}
            ],
            "thresholds": {"warn": {"messages": 100}, "critical": {"messages": 10**8}, "page": {"messages": 10**9}},
            "evaluation": {"min_samples": 2, "min_span": "0s", "diagnose_min_lag": 50},
            "slack": {"default_channel": CHANNEL},
            "leader": {"lease_ttl": "1s"},
        },
        source="test",
    )  # fmt: skip
    return Bot.on_redis(settings, redis_client, slack_client(TOKEN, slack.api_url), SlackPresenter(), replica_id=name)


def open_incident(leader: Bot, follower: Bot) -> None:
    """Checks by both (the follower only looks) until the leader opens the incident; then its messages are sent."""
    assert leader.leadership.tick() and not follower.leadership.tick()

    def opened() -> bool:
        assert follower.check(CLUSTER) is None
        result = leader.check(CLUSTER)
        assert result is not None
        return result.opened == 1

    wait_for("the incident to open", opened, timeout=30, every=0.2)


def roots(slack: SlackEmulator) -> list[str]:
    """The channel's root messages, an incident's as "incident" (its text changes as the group does)."""
    return ["incident" if m.text.startswith("WARN `") else m.text for m in slack.channel(CHANNEL)]


def replicas_with_an_incident(
    kafka: Kafka, names: Names, broker: ApacheKafka, redis_client: redis.Redis, slack: SlackEmulator
) -> tuple[Bot, Bot]:
    """Replicas a (leading) and b on a lagging group, its incident open and posted."""
    group = lagging_group(kafka, names)
    a, b = (replica(redis_client, slack, broker, group, name) for name in "ab")
    open_incident(a, b)
    assert roots(slack) == ["incident"]
    return a, b


def test_the_replica_that_leads_after_the_loss_tells_it_once_though_it_never_checked_before(
    kafka: Kafka, names: Names, broker: ApacheKafka, redis_client: redis.Redis, slack: SlackEmulator
) -> None:
    a, b = replicas_with_an_incident(kafka, names, broker, redis_client, slack)

    redis_client.flushdb()  # Redis restarted empty: the lease, the incident and the windows are gone
    assert b.leadership.tick() and not a.leadership.tick()  # the follower won the new lease
    open_incident(b, a)
    notice = slack_wording.state_lost()
    assert roots(slack) == ["incident", notice, "incident"]  # told once, then the incident again

    # The old leader leads again (the new one stopped): it knew of the loss, and says nothing more of it.
    b.leadership.resign()
    assert a.leadership.tick()
    before = [m.ts for m in slack.channel(CHANNEL)]
    result = a.check(CLUSTER)
    assert result is not None and result.opened == 0
    assert [m.ts for m in slack.channel(CHANNEL)] == before and roots(slack) == ["incident", notice, "incident"]


def test_the_leader_that_stays_leader_tells_the_loss_once(
    kafka: Kafka, names: Names, broker: ApacheKafka, redis_client: redis.Redis, slack: SlackEmulator
) -> None:
    a, b = replicas_with_an_incident(kafka, names, broker, redis_client, slack)

    redis_client.flushdb()
    assert a.leadership.tick() and not b.leadership.tick()
    open_incident(a, b)
    for _ in range(3):  # more checks of both: nothing more is said
        assert b.check(CLUSTER) is None
        result = a.check(CLUSTER)
        assert result is not None and result.opened == 0
    assert roots(slack) == ["incident", slack_wording.state_lost(), "incident"]
