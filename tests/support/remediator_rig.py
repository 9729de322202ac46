"""The remediation coordinator in one process for tests: a Bot on real Redis, the Slack emulator and the real
Kubernetes control plane (tests/support/k8s_cluster.py), where lagbot acts as its shipped ServiceAccount."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest
import redis

from lagbot.core.config import Settings
from lagbot.core.model import Cause, Severity
from lagbot.devkit.apache_kafka import ApacheKafka
from lagbot.devkit.emulator import SlackEmulator
from lagbot.policies.approvers import ApproverDirectory, MemoryUsergroupCache
from lagbot.policies.model import Policy
from lagbot.remediations.executors.config import KubernetesConfig
from lagbot.remediations.executors.kubernetes import KubernetesExecutor
from lagbot.service.bot import Bot
from lagbot.service.remediate import Remediator
from lagbot.service.slack_api import slack_client
from lagbot.slack.presenter import SlackPresenter
from tests.support.k8s_cluster import ControlPlane
from tests.support.k8s_shop import Shop
from tests.support.verdicts import CLUSTER, GROUP, member, partition, verdict

NOW = 1_790_000_000.0  # a Monday, 14:13 UTC


TOKEN = "xoxb-remediator"


@pytest.fixture
def k8s(k8s_control_plane: ControlPlane) -> Iterator[Shop]:
    """The namespace shop on the real control plane: Deployment orders at 2 replicas, ScaledObject orders-so."""
    with Shop(k8s_control_plane) as shop:
        yield shop


@pytest.fixture
def slack() -> Iterator[SlackEmulator]:
    with SlackEmulator(token=TOKEN).start() as running:
        yield running


BOOTSTRAP = {"servers": "127.0.0.1:9"}


@pytest.fixture(autouse=True)
def _broker(broker: ApacheKafka) -> None:
    BOOTSTRAP["servers"] = broker.bootstrap  # the group is described on the real broker (pre-flight)


def remediator(
    redis_client: redis.Redis,
    slack: SlackEmulator,
    k8s: Shop,
    *,
    drain: dict[str, object] | None = None,
    wired: bool = False,
    **rule: object,
) -> Remediator:
    """The coordinator on the shop's KEDA-managed workload; `drain`: lagbot's `drain:` settings; `rule`: the
    policy's default rule. `wired`: the bot is built with it as its remediation side (`Bot(remediations=...)`, as
    lagbot.app.assembly builds it), so its incident loop proposes, verifies and reaps; else the bot has none."""
    policy = Policy.model_validate(
        {
            "default": {
                "approvers": {"users": ["U0ONCALL1"]},
                "workload": {
                    "executor": "kubernetes",
                    "name": "orders",
                    "namespace": "shop",
                    "keda_scaled_object": "orders-so",
                },
                **rule,
            }
        }
    )
    settings = Settings(
        clusters=[{"name": CLUSTER, "bootstrap_servers": BOOTSTRAP["servers"]}],  # type: ignore[list-item]
        drain=drain or {},  # type: ignore[arg-type]
    )
    config = KubernetesConfig(api_url=k8s.plane.url, ca_file=k8s.plane.ca_file, token=k8s.token, timeout=5)
    executor = KubernetesExecutor(config)

    def build(bot: Bot) -> Remediator:
        directory = ApproverDirectory(bot.slack, cache=MemoryUsergroupCache())
        return Remediator(bot, directory=directory, executor_for=lambda w: executor)

    slack_api = slack_client(TOKEN, slack.api_url)
    if not wired:
        return build(
            Bot.on_redis(settings, redis_client, slack_api, SlackPresenter(), policy=policy, clock=lambda: NOW)
        )
    bot = Bot.on_redis(
        settings, redis_client, slack_api, SlackPresenter(), policy=policy, clock=lambda: NOW, remediations=build
    )
    assert isinstance(bot.remediations, Remediator)
    return bot.remediations


def deficit() -> object:
    """Two members on 6 partitions, consuming 1,000 msg/s of 1,600 produced: scaling to 4 keeps up."""
    parts = [partition(p, committed=0, log_end=10_000) for p in range(6)]
    v = verdict(parts, produce=1_600.0, consume=1_000.0, members=[member(1, 0, 1, 2), member(2, 3, 4, 5)])
    cause = Cause("throughput_deficit", "consumers are slower", 0.75, rank=1)
    return replace(v, causes=(cause,), severity=Severity.WARN)


def events(r: Remediator) -> list[tuple[str, str]]:
    return [(e.event, e.user) for e in reversed(r.bot.audit.latest(CLUSTER, GROUP, 50))]
