"""The owners' pods of one check cycle are read within one bound, all groups together (lagbot.service.pod_causes).

A cycle of the incident loop (Bot.apply, the outbox, the Slack emulator, real Redis) with N open incidents whose
workloads sit on an API server that accepts and never answers (tests/support/k8s_faults.py: the one fault the real
server cannot be made to produce): the cycle ends within CYCLE_READS, sends only the requests that time allows, and
the incidents' messages go out without the pods. On the real control plane: a pod not found is one owner's fact, and
the other owners and groups are read in the same cycle.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
import redis

from lagbot.core.config import Settings
from lagbot.core.model import Cause, GroupVerdict, Member, Severity, Status
from lagbot.devkit.emulator import SlackEmulator
from lagbot.policies.approvers import ApproverDirectory, MemoryUsergroupCache
from lagbot.policies.model import Policy
from lagbot.remediations.base import ProposalContext
from lagbot.remediations.executors.config import KubernetesConfig
from lagbot.remediations.executors.kubernetes import KubernetesExecutor
from lagbot.remediations.executors.pod_evidence import PodReadings
from lagbot.remediations.restart.remediation import REMEDIATION as RESTART
from lagbot.remediations.restart.remediation import RestartParams
from lagbot.service.bot import Bot
from lagbot.service.pod_causes import CYCLE_READS, PodCauses, cycle_round
from lagbot.service.remediate import Remediator
from lagbot.service.slack_api import slack_client
from lagbot.slack.presenter import SlackPresenter
from tests.support.k8s_faults import FaultyApiServer
from tests.support.k8s_fixtures import Cluster
from tests.support.pod_evidence_rig import POD_GET, REPLICA_SETS, Counted, orders
from tests.support.verdicts import CLUSTER, TOPIC, partition, verdict

pytestmark = pytest.mark.integration

TOKEN = "xoxb-podcycle"
CHANNEL = "C1"
GROUPS = ["orders-a", "orders-b", "orders-c"]
MARGIN = 2.0
"""Seconds a cycle may take past what it waits on the API server: the Redis writes and the queueing of three
incidents (milliseconds), and a loaded machine's thread waking late from its socket's timeout. Today's cost, a read's
timeout twice per group, is 20 s per group here: the bound fails it by far."""

__all__ = ["orders"]  # a fixture, from tests.support.pod_evidence_rig


@pytest.fixture
def slack() -> Iterator[SlackEmulator]:
    with SlackEmulator(token=TOKEN).start() as running:
        yield running


def policy(namespace: str) -> Policy:
    """The default rule names Deployment orders in `namespace`, a member's pod named by its client id; restart allowed
    (its proposal, made on the check's thread, reads the same owners' pods)."""
    workload = {"executor": "kubernetes", "name": "orders", "namespace": namespace, "member_pod": "{client_id}"}
    rule = {"approvers": {"users": ["U0ONCALL1"]}, "workload": workload, "remediations": {"restart": {}}}
    return Policy.model_validate({"version": 1, "default": rule})


def leader(redis_client: redis.Redis, slack: SlackEmulator, executor: KubernetesExecutor, namespace: str) -> Bot:
    """One replica of lagbot leading the checks, its remediation side acting through `executor`."""
    settings = Settings(
        clusters=[{"name": CLUSTER, "bootstrap_servers": "127.0.0.1:9"}],  # type: ignore[list-item]
        slack={"default_channel": CHANNEL},  # type: ignore[arg-type]
    )

    def remediator_of(bot: Bot) -> Remediator:
        directory = ApproverDirectory(bot.slack, cache=MemoryUsergroupCache())
        return Remediator(bot, directory=directory, executor_for=lambda _workload: executor)

    bot = Bot.on_redis(
        settings,
        redis_client,
        slack_client(TOKEN, slack.api_url),
        SlackPresenter(),
        policy=policy(namespace),
        clock=time.time,
        remediations=remediator_of,
    )
    bot.leadership.tick()
    return bot


def stuck(group: str, *pods: str) -> GroupVerdict:
    """`group` with one STALLed partition per pod, each owned by a member whose client id is that pod's name: the
    likely cause is stuck_consumer, blaming them in that order."""
    owners = [Member(f"m-{i}", pod, f"/10.1.2.{i + 10}", ((TOPIC, i),)) for i, pod in enumerate(pods)]
    parts = [partition(i, committed=0, log_end=500, status=Status.STALL, owner=o) for i, o in enumerate(owners)]
    stalled = list(range(len(pods)))
    cause = Cause("stuck_consumer", "partitions are stuck", 0.9, rank=1, evidence={"partitions": stalled})
    return replace(verdict(parts, members=owners, group=group), causes=(cause,))


def cycle(bot: Bot, verdicts: list[GroupVerdict]) -> float:
    """One check's incident step as the leader runs it (apply, then deliver); the seconds the apply took."""
    now = time.time()
    bot.clock = lambda: now
    started = time.monotonic()
    bot.apply(verdicts, now=now)
    took = time.monotonic() - started
    bot.deliver()
    return took


def roots(slack: SlackEmulator) -> dict[str, Any]:
    """Group -> the root message of its incident, as posted."""
    found = {}
    for message in slack.channel(CHANNEL):
        [group] = [g for g in GROUPS if f"`{g}`" in message.text]
        found[group] = message
    return found


def shown_pods(slack: SlackEmulator) -> list[str]:
    """Every message of the channel and its threads that mentions owner pods."""
    messages = [m for root in slack.channel(CHANNEL) for m in [root, *slack.thread(CHANNEL, root.ts)]]
    return [str(m.blocks) for m in messages if "owner pods" in str(m.blocks) or "owner pods" in m.text]


def test_a_hanging_api_server_costs_a_cycle_its_pod_budget_once_not_a_timeout_per_group(
    redis_client: redis.Redis, slack: SlackEmulator
) -> None:
    """Its own timeout (10 s) is longer than the cycle's budget: the first read waits until the budget is spent, and
    no other read is sent; the three incidents open without their pods."""
    with FaultyApiServer(hang=True).start() as server:
        executor = KubernetesExecutor(KubernetesConfig(api_url=server.url, token="t", timeout=10))
        bot = leader(redis_client, slack, executor, "shop")
        took = cycle(bot, [stuck(g, f"{g}-1", f"{g}-2") for g in GROUPS])
        asked = list(server.requests)

    assert asked == [("GET", "/api/v1/namespaces/shop/pods/orders-a-1")]  # once: no retry, nothing after
    assert CYCLE_READS <= took <= CYCLE_READS + MARGIN
    posted = roots(slack)
    assert sorted(posted) == GROUPS  # every incident's root went out
    for group in GROUPS:
        [table] = slack.thread(CHANNEL, posted[group].ts)[:1]
        assert "partitions are stuck" in str(table.blocks)
    assert shown_pods(slack) == []  # as today when the pods cannot be read: the cause as the broker sees it


def test_a_server_that_gave_no_answer_is_not_asked_again_in_the_cycle_and_the_next_cycle_updates_at_once(
    redis_client: redis.Redis, slack: SlackEmulator
) -> None:
    """Its own timeout (1 s) is shorter than the budget: the first read times out, asked once (its retry would need
    time the cycle does not give), and no other group's owner is asked. The next cycle, within the readings' time,
    asks nothing and edits the roots of the incidents gone critical."""
    with FaultyApiServer(hang=True).start() as server:
        executor = KubernetesExecutor(KubernetesConfig(api_url=server.url, token="t", timeout=1))
        bot = leader(redis_client, slack, executor, "shop")
        took = cycle(bot, [stuck(g, f"{g}-1") for g in GROUPS])
        first = list(server.requests)
        edits = len(slack.calls_to("chat.update"))
        worse = [replace(stuck(g, f"{g}-1"), severity=Severity.CRITICAL) for g in GROUPS]
        again = cycle(bot, worse)
        second = server.requests[len(first) :]

    assert first == [("GET", "/api/v1/namespaces/shop/pods/orders-a-1")]
    assert 1 <= took <= 1 + MARGIN
    assert second == [] and again <= MARGIN
    posted = roots(slack)
    assert sorted(posted) == GROUPS
    edited = {c.args.get("ts") for c in slack.calls_to("chat.update")[edits:]}
    assert {posted[g].ts for g in GROUPS} <= edited  # the incidents' roots still update (their tables too)
    assert shown_pods(slack) == []


def test_a_restart_proposed_on_the_check_thread_reads_its_owners_pods_within_the_cycle_s_round() -> None:
    """The restart's own reading (its `prepare`, which the check's thread runs to offer it) shares the cycle's round:
    a hanging API server costs it the round's budget, asked once, not its timeout twice."""
    with FaultyApiServer(hang=True).start() as server:
        executor = KubernetesExecutor(KubernetesConfig(api_url=server.url, token="t", timeout=10))
        of = stuck("orders-a", "orders-a-1", "orders-a-2")
        workload = policy("shop").match(CLUSTER, "orders-a").workload
        assert workload is not None
        context = ProposalContext(executor=lambda: executor, workload=workload, now=time.time(),
                                  pod_readings=PodReadings(), pod_round=cycle_round())  # fmt: skip
        raw = {"workload": workload.model_dump(mode="json"), "scope": "auto"}
        started = time.monotonic()
        params = RESTART.prepare(raw, of, context)
        took = time.monotonic() - started
        asked = list(server.requests)

    assert isinstance(params, RestartParams) and params.owner_pods == {}  # proposed without the pods, as before
    assert asked == [("GET", "/api/v1/namespaces/shop/pods/orders-a-1")]
    assert CYCLE_READS <= took <= CYCLE_READS + MARGIN


def test_a_pod_not_found_does_not_stop_the_other_owners_nor_the_next_group(orders: Cluster) -> None:
    """On the real API server, in one cycle's round: the first owner's pod is gone (404), the second is read; the
    next group's owner is read too. Read again in a later round, the kept reading and refusal ask nothing."""
    first, second = (p.metadata.name for p in orders.wait_pods("orders", 2))
    now = time.time()
    counted = Counted(orders, now)
    rules = policy(orders.namespace)
    causes = PodCauses(PodReadings(), lambda c, g: rules.match(c, g).workload, lambda _w: counted.executor)
    gone = stuck("orders-a", "orders-gone", first)
    other = stuck("orders-b", second)

    round = cycle_round()
    read_a = causes.read(gone, now=now, round=round)
    read_b = causes.read(other, now=now, round=round)

    assert read_a is not None and read_b is not None
    assert [o.pod for o in read_a.owners.values()] == [first]
    assert read_a.error == (
        f"could not read pod {orders.namespace}/orders-gone of deployment {orders.namespace}/orders: "
        f'404 Not Found: pods "orders-gone" not found'
    )
    assert [o.pod for o in read_b.owners.values()] == [second] and read_b.error is None
    assert counted.requests == [POD_GET, POD_GET, REPLICA_SETS, POD_GET, REPLICA_SETS]

    again = causes.read(gone, now=now + 60, round=cycle_round())
    assert again == read_a and len(counted.requests) == 5
