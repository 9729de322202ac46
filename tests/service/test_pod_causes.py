"""The owner's pod in the incident thread: on the cause, and as the refusal of a restart that cannot help.

Through the incident loop (Bot.apply, the outbox, the Slack emulator, real Redis) with the pods of a Deployment on
the real API server, read by the KubernetesExecutor as lagbot's ServiceAccount under the shipped evidence Role; the
pod status a kubelet would write is patched through the status subresource (no kubelet runs). The requests the
executor sends to the API server are counted (tests/support/pod_evidence_rig.py).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
import redis

from lagbot.core import keys
from lagbot.core.config import Settings
from lagbot.core.model import Cause, GroupVerdict, Status
from lagbot.devkit.emulator import SlackEmulator
from lagbot.policies.model import Policy
from lagbot.remediations.executors.kubernetes import KubernetesExecutor
from lagbot.remediations.executors.pod_evidence import READ_EVERY
from lagbot.service.bot import Bot
from lagbot.service.remediate import Remediator
from lagbot.service.slack_api import slack_client
from lagbot.slack.presenter import SlackPresenter
from tests.support.k8s_fixtures import Cluster
from tests.support.pod_evidence_rig import ONE_READING, Counted, orders, orders_policy, owner
from tests.support.pod_status import crashed_findings, crashed_once, oom_findings, oom_looping, oom_refusal, ready
from tests.support.verdicts import CLUSTER, GROUP, TOPIC, partition, verdict

pytestmark = pytest.mark.integration

TOKEN = "xoxb-podcause"
CHANNEL = "C1"

__all__ = ["orders"]  # a fixture, from tests.support.pod_evidence_rig


@pytest.fixture
def slack() -> Iterator[SlackEmulator]:
    with SlackEmulator(token=TOKEN).start() as running:
        yield running


def replica(redis_client: redis.Redis, slack: SlackEmulator, cluster: Cluster, counted: Counted, now: float) -> Bot:
    """One replica of lagbot leading the checks: a Bot and its Remediator, on the namespace's Deployment orders."""
    policy = Policy.model_validate(orders_policy(cluster, by_client_id=False))
    settings = Settings(
        clusters=[{"name": CLUSTER, "bootstrap_servers": "127.0.0.1:9"}],  # type: ignore[list-item]
        slack={"default_channel": CHANNEL},  # type: ignore[arg-type]
    )
    slack_api = slack_client(TOKEN, slack.api_url)
    bot = Bot.on_redis(
        settings,
        redis_client,
        slack_api,
        SlackPresenter(),
        policy=policy,
        clock=lambda: now,
        remediations=counted.remediator_of,
    )
    bot.leadership.tick()
    return bot


def check(bot: Bot, v: GroupVerdict, now: float) -> None:
    """One check's incident step as the leader runs it: apply, deliver, then what waits for the delivery."""
    bot.clock = lambda: now
    bot.apply([v], now=now)
    bot.deliver()
    assert bot.remediations is not None
    bot.remediations.run_auto_approved(now=now)


def stuck_on(host: str) -> GroupVerdict:
    """Partition 0 STALL, owned by a member on `host`; partition 1 fine: the likely cause is stuck_consumer."""
    stuck_owner, other = owner(0, host), owner(1, "10.1.2.99")
    parts = [
        partition(0, committed=0, log_end=500, status=Status.STALL, owner=stuck_owner),
        partition(1, committed=100, log_end=100, owner=other),
    ]
    stuck = Cause("stuck_consumer", "partition 0 is stuck", 0.9, rank=1, evidence={"partitions": [0]})
    return replace(verdict(parts, members=[stuck_owner, other]), causes=(stuck,))


def thread_of(slack: SlackEmulator) -> tuple[Any, list[Any]]:
    [root] = slack.channel(CHANNEL)
    return root, slack.thread(CHANNEL, root.ts)


def cause_block(reply: Any) -> str:
    """The text of the first cause of a table reply (the section after the divider)."""
    blocks = reply.blocks
    divider = next(i for i, b in enumerate(blocks) if b["type"] == "divider")
    return str(blocks[divider + 1]["text"]["text"])


def test_an_oom_looping_owner_refuses_the_restart_in_the_thread_once_across_replicas_reading_its_pod_once_a_while(
    redis_client: redis.Redis, slack: SlackEmulator, orders: Cluster
) -> None:
    first, _ = orders.wait_pods("orders", 2)
    pod = first.metadata.name
    now = time.time()
    oom_looping(orders, pod, "10.1.2.3", finished=now - 30, restarts=4)
    counted = Counted(orders, now)
    leader = replica(redis_client, slack, orders, counted, now)
    v = stuck_on("10.1.2.3")

    check(leader, v, now)

    root, thread = thread_of(slack)
    evidence = oom_findings(pod, "30 s ago")
    reason = oom_refusal(pod)
    refusal = f":rotating_light: `restart` is not offered: {reason} <@U0ONCALL1>"
    assert [m.text.splitlines()[0] for m in thread] == [f"Partitions of `{GROUP}`:", refusal]
    assert cause_block(thread[0]) == (
        f"*1. stuck_consumer* (90%): partition 0 is stuck; owner pods: {'; '.join(evidence)} → _restart_"
    )
    assert [c.args.get("thread_ts") for c in slack.calls_to("chat.postMessage")] == [None, root.ts, root.ts]
    assert not any("actions" in str(m.blocks) for m in thread)  # no restart button
    assert redis_client.hgetall(keys.refused(_incident_id(leader))) == {b"restart": reason.encode()}
    assert counted.requests == ONE_READING  # the cause and the restart's prepare share one reading
    escalated = [e for e in leader.audit.latest(CLUSTER, GROUP, 50) if e.event == "escalated"]
    assert [(e.user, e.action, e.proposal, e.detail) for e in escalated] == [
        ("lagbot", "restart", None, {"not_offered": reason})
    ]

    # The next check, within READ_EVERY: the refusal is not said again, and the pod is not read again. Only the
    # reading's age changed, a counter: the root and its table are not edited for it (docs/bot.md, edits).
    edits = len(slack.calls_to("chat.update"))
    check(leader, v, now + 60)
    assert len(slack.calls_to("chat.postMessage")) == 3
    assert counted.requests == ONE_READING
    assert len(slack.calls_to("chat.update")) == edits
    assert cause_block(slack.thread(CHANNEL, root.ts)[0]) == (
        f"*1. stuck_consumer* (90%): partition 0 is stuck; owner pods: {'; '.join(evidence)} → _restart_"
    )

    # Past READ_EVERY it is read again, once; the refusal stands said.
    check(leader, v, now + READ_EVERY)
    assert counted.requests == ONE_READING * 2
    assert len(slack.calls_to("chat.postMessage")) == 3

    # Another replica leads now (its own readings, empty): it reads the pod, and says nothing new either.
    leader.leadership.resign()
    other = replica(redis_client, slack, orders, counted, now + READ_EVERY + 60)
    check(other, v, now + READ_EVERY + 60)
    assert counted.requests == ONE_READING * 3
    assert len(slack.calls_to("chat.postMessage")) == 3
    assert slack.thread(CHANNEL, root.ts)[-1].text == refusal
    assert len([e for e in other.audit.latest(CLUSTER, GROUP, 50) if e.event == "escalated"]) == 1


def _incident_id(bot: Bot) -> str:
    incident = bot.incidents.get(CLUSTER, GROUP)
    assert incident is not None
    return incident.id


def test_the_cause_shows_a_crashed_owner_s_pod_and_the_restart_is_offered_with_it(
    redis_client: redis.Redis, slack: SlackEmulator, orders: Cluster
) -> None:
    first, _ = orders.wait_pods("orders", 2)
    pod = first.metadata.name
    now = time.time()
    crashed_once(orders, pod, "10.1.2.3", finished=now - 120)
    counted = Counted(orders, now)
    bot = replica(redis_client, slack, orders, counted, now)

    check(bot, stuck_on("10.1.2.3"), now)

    _, thread = thread_of(slack)
    evidence = "; ".join(crashed_findings(pod, "2 min ago"))
    assert (
        cause_block(thread[0]) == f"*1. stuck_consumer* (90%): partition 0 is stuck; owner pods: {evidence} → _restart_"
    )
    [offer] = [m for m in thread if "actions" in str(m.blocks)]  # the restart's buttons, its step with the same pod
    assert f"restart consumer-0@/10.1.2.3 (member m-0), owner of stalled {TOPIC}-0; its pod: {evidence}" in str(
        offer.blocks
    )
    assert redis_client.hgetall(keys.refused(_incident_id(bot))) == {}
    assert counted.requests == ONE_READING

    # What a click's thread shows (the verdict judged from Redis): the cause with the pod as kept, never a request.
    remediator = bot.remediations
    assert isinstance(remediator, Remediator)
    v = stuck_on("10.1.2.3")
    kept = remediator.pod_causes.explained(v, now=now + 60, read=False)
    assert kept.causes[0].evidence["pods"] == crashed_findings(pod, "3 min ago")  # worded as of its own now
    assert remediator.pod_causes.explained(v, now=now + READ_EVERY, read=False) == v  # its time is over: no pod
    assert counted.requests == ONE_READING


def test_a_healthy_owner_adds_nothing_to_the_cause(
    redis_client: redis.Redis, slack: SlackEmulator, orders: Cluster
) -> None:
    first, _ = orders.wait_pods("orders", 2)
    ready(orders, first.metadata.name, "10.1.2.3")
    now = time.time()
    bot = replica(redis_client, slack, orders, Counted(orders, now), now)

    check(bot, stuck_on("10.1.2.3"), now)

    _, thread = thread_of(slack)
    assert cause_block(thread[0]) == "*1. stuck_consumer* (90%): partition 0 is stuck → _restart_"


def test_what_the_pod_says_is_shown_inert(redis_client: redis.Redis, slack: SlackEmulator, orders: Cluster) -> None:
    """A waiting reason is free text in the pod's status: no mention, link, code span or reordering survives."""
    first, _ = orders.wait_pods("orders", 2)
    pod = first.metadata.name
    waiting = {"waiting": {"reason": "<!channel> `x` <https://e.invalid|go>\u202e"}}
    status = {"name": "consumer", "image": "example.invalid/consumer:1", "imageID": "", "restartCount": 0}
    orders.set_pod_status(pod, "10.1.2.3", containerStatuses=[{**status, "ready": False, "state": waiting}])
    now = time.time()
    bot = replica(redis_client, slack, orders, Counted(orders, now), now)

    check(bot, stuck_on("10.1.2.3"), now)

    _, thread = thread_of(slack)
    assert cause_block(thread[0]) == (
        f"*1. stuck_consumer* (90%): partition 0 is stuck; owner pods: pod {pod}: container consumer is waiting in "
        "&lt;!channel&gt; ˋxˋ &lt;https://e.invalid|go&gt;\\u202e; container consumer limits: cpu 500m, memory 256Mi; "
        f"pod {pod} is running but not Ready → _restart_"
    )


def test_an_executor_that_fails_leaves_the_cause_as_the_broker_sees_it(
    redis_client: redis.Redis, slack: SlackEmulator, orders: Cluster
) -> None:
    """Reading the pods fails in an unforeseen way: logged, and the incident's messages go out without them."""
    now = time.time()
    bot = replica(redis_client, slack, orders, Counted(orders, now), now)
    assert bot.remediations is not None

    def broken(workload: object) -> KubernetesExecutor:
        raise RuntimeError("the executor could not be made")

    bot.remediations.executor_for = broken
    bot.remediations.pod_causes.executor_for = broken

    check(bot, stuck_on("10.1.2.3"), now)

    root, thread = thread_of(slack)
    assert cause_block(thread[0]) == "*1. stuck_consumer* (90%): partition 0 is stuck → _restart_"
    assert [c.args.get("thread_ts") for c in slack.calls_to("chat.postMessage")] == [None, root.ts]
