"""End to end with the kubernetes executor: `lagbot run`, Apache Kafka, a real redis-server, the Slack emulator and
the real control plane (etcd, kube-apiserver, kube-controller-manager), with consumers that follow the pods.

A Deployment `orders` (1 replica) in the test's namespace; lagbot's Role there is the shipped target RBAC applied
with kubectl, and the bot acts with a TokenRequest token of the ServiceAccount lagbot/lagbot, read from a file as a
pod's projected volume holds it. The pod follower (tests/support/pod_follower.py) plays the kubelet: each pod the
ReplicaSet controller makes is marked Running and gets a real consumer process whose client.id is the pod's name.

One slow consumer against a faster producer -> throughput_deficit -> a scale 1 -> N is proposed (N from the rates the
bot measured: 4 on a quiet machine, 2 or 3 on a loaded one) -> signed approval clicks (several at once) -> the
Deployment's replicas are patched once on the API server (read back: replicas N, generation 2) -> the controllers
make the new pods, the follower starts their consumers -> lag drains (committed offsets read from the broker) -> the
thread says the scale ran, the verification saw the lag drain and the incident resolved.
"""

from __future__ import annotations

import json
import re
import signal
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import redis

from lagbot.devkit.apache_kafka import ApacheKafka
from lagbot.devkit.embedded import EmbeddedRedis
from lagbot.devkit.emulator import Message, SlackEmulator
from lagbot.devkit.fleet import FleetSpec
from lagbot.service.audit import AuditLog
from tests.conftest import Kafka, Names
from tests.support.bot_process import CHANNEL, SIGNING_SECRET, BotProcess, bot_config, wait_for
from tests.support.group_commits import committed
from tests.support.k8s_fixtures import Cluster
from tests.support.k8s_rbac import BOT_ACCOUNT, BOT_NAMESPACE, apply_bot_account, apply_target, target_overlay
from tests.support.paced_writer import PacedWriter
from tests.support.pod_follower import PodFollower
from tests.support.remediation_rig import APPROVER, TOKEN, log_end, thread_with_button, write_policy

pytestmark = pytest.mark.integration

DEPLOYMENT = "orders"
PARTITIONS = 4
CLICKS = 6
LIMIT = 8_000
VERIFICATION = {"no_change_after": 20, "settle_checks": 15}
"""A scale here pauses consumption longer than a local fleet's (the demo settles in 4 checks): the controllers make
the pods, the follower marks them Running and starts their consumers (Python processes, on 2 shared cores), they
join and the group rebalances; lag climbs meanwhile. At the 1 s check interval, 15 checks cover that."""
DRAINING = re.compile(
    r"draining at [0-9.,]+ msg/s, ETA [^()]+ \(lag [0-9,]+ -> [0-9,]+\)|draining: lag [0-9,]+ -> [0-9,]+"
    r"|lag [0-9,]+ -> [0-9,]+ since the peak, but (growing|steady) at the latest check: no ETA yet"
)
VERIFIED = re.compile(r"back to normal: lag [0-9,]+, every partition OK")
RESOLVED = re.compile(r":large_green_circle: Resolved after [0-9]+ s, peak [0-9,]+; lag now [0-9,]+\.")
"""The verification seeing the lag fall (with a drain rate and ETA only when the check's own trend is draining: one
source of rates, docs/bot.md), its last word, and the incident's resolution, as the thread shows them."""


@pytest.fixture
def slack() -> Iterator[SlackEmulator]:
    with SlackEmulator(token=TOKEN).start() as running:
        yield running


@pytest.fixture
def orders(k8s: Cluster, tmp_path: Path) -> Cluster:
    """The Deployment orders (1 replica) and lagbot's Role for it, applied with kubectl as a user does."""
    apply_bot_account(k8s.plane)
    k8s.deployment(DEPLOYMENT, 1)
    apply_target(k8s.plane, target_overlay(tmp_path / "target", k8s.namespace, workloads=[DEPLOYMENT], keda=False))
    return k8s


def bot_settings(
    broker: ApacheKafka, redis_server: EmbeddedRedis, slack: SlackEmulator, group: str, cluster: Cluster, tmp: Path
) -> dict[str, Any]:
    """The bot's configuration: the kubernetes executor as the ServiceAccount, and a policy naming the Deployment."""
    token_file = tmp / "token"
    token_file.write_text(cluster.service_account_token(BOT_NAMESPACE, BOT_ACCOUNT))
    workload = {
        "executor": "kubernetes",
        "name": DEPLOYMENT,
        "namespace": cluster.namespace,
        "member_pod": "{client_id}",
    }
    remediations = {
        "scale": {"min_replicas": 1, "max_replicas": PARTITIONS, "proposal_expiry": "10m", "cooldown": "1m"}
    }
    base = bot_config(broker, redis_server, slack, group)
    return {
        **base,
        "thresholds": {**base["thresholds"], "critical": {"messages": 10**8}, "page": {"messages": 10**9}},
        "evaluation": {**base["evaluation"], "min_span": "2s"},
        "policy_file": str(
            write_policy(tmp, DEPLOYMENT, workload=workload, remediations=remediations, verification=VERIFICATION)
        ),
        "executors": {
            "kubernetes": {
                "api_url": cluster.url,
                "ca_file": str(cluster.plane.ca_file),
                "token_file": str(token_file),
                "timeout": 10,
            }
        },
    }


def proposed_replicas(proposal: Message) -> int:
    """N of the proposal's approve button, "Scale orders 1 -> N": from the rates the bot measured, which the
    machine's load moves (a loaded machine slows the producer more than the 50 ms per message of the consumer)."""
    [label] = [
        e["text"]["text"]
        for b in proposal.blocks
        if b["type"] == "actions"
        for e in b["elements"]
        if e["action_id"].startswith("approve:")
    ]
    found = re.fullmatch(r"Scale orders 1 -> ([0-9]+)", label)
    assert found is not None, label
    replicas = int(found.group(1))
    assert 2 <= replicas <= PARTITIONS, label
    return replicas


def group_members(kafka: Kafka, group: str) -> list[str]:
    """The client ids of the group's members, as the broker describes the group."""
    [future] = kafka.admin.describe_consumer_groups([group]).values()
    return sorted(m.client_id for m in future.result(15).members)


def deployment(cluster: Cluster) -> tuple[int, int]:
    """The Deployment's spec.replicas and metadata.generation, read back from the API server."""
    read = cluster.apps.read_namespaced_deployment(DEPLOYMENT, cluster.namespace)
    return int(read.spec.replicas), int(read.metadata.generation)


def channel_dump(slack: SlackEmulator) -> str:
    """Every root and reply of the channel, for a failing test's output."""
    lines = []
    for root in slack.channel(CHANNEL):
        lines.append(f"root: {root.text!r}")
        lines += [f"  reply: {m.text[:300]!r}" for m in slack.thread(CHANNEL, root.ts)]
    return "\n".join(lines) or "(the channel is empty)"


def test_scale_approved_in_slack_patches_the_deployment_once_and_the_pods_consumers_drain_the_lag(
    kafka: Kafka,
    names: Names,
    broker: ApacheKafka,
    redis_server: EmbeddedRedis,
    redis_client: redis.Redis,
    slack: SlackEmulator,
    orders: Cluster,
    tmp_path: Path,
) -> None:
    started = time.monotonic()
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, PARTITIONS)
    # One consumer at up to ~20 msg/s (50 ms a message) against a producer at up to ~200 msg/s.
    spec = FleetSpec(
        name=DEPLOYMENT, bootstrap=broker.bootstrap, group=group, topics=[topic],
        delay_ms=50, commit_every=5, commit_interval_ms=200, max_seconds=300,
    )  # fmt: skip
    with (
        PodFollower(orders, spec, tmp_path / "pods") as follower,
        PacedWriter(broker.bootstrap, topic, PARTITIONS, limit=LIMIT) as writer,
    ):
        wait_for("the first pod's consumer in the group", lambda: follower.settled(1, PARTITIONS), timeout=60)
        [first] = [p.metadata.name for p in orders.pods_of(DEPLOYMENT)]
        assert group_members(kafka, group) == [first]  # the member Kafka reports names its pod

        bot = BotProcess(tmp_path, bot_settings(broker, redis_server, slack, group, orders, tmp_path), token=TOKEN)
        try:
            bot.wait_ready()
            writer.start()  # the backlog grows from here: the bot sees it from its first checks
            root, proposal = thread_with_button(slack, "approve:", "Scale orders 1 -> ")
            target = proposed_replicas(proposal)
            assert "throughput_deficit" in json.dumps([m.blocks for m in slack.thread(CHANNEL, root.ts)])
            assert deployment(orders) == (1, 1)  # nothing changed before the click

            def click() -> int:
                status, _, _ = slack.click_button(
                    bot.events_url, SIGNING_SECRET, user=APPROVER, message=proposal, action_prefix="approve:"
                )
                return status

            clicked = time.monotonic()
            with ThreadPoolExecutor(CLICKS) as pool:  # the same approval sent several times at once
                assert list(pool.map(lambda _: click(), range(CLICKS))) == [200] * CLICKS

            wait_for(f"the Deployment scaled to {target}", lambda: deployment(orders)[0] == target, timeout=60)
            pods = [p.metadata.name for p in orders.wait_pods(DEPLOYMENT, target)]
            wait_for(
                "a consumer per pod, settled on the 4 partitions",
                lambda: follower.settled(target, PARTITIONS),
                timeout=60,
            )
            settled_in = time.monotonic() - clicked
            assert sorted(follower.consumers()) == pods
            wait_for("the pods as the group's members", lambda: group_members(kafka, group) == pods, timeout=30)
            # Each pod was marked Running once and its consumer started once; none had to be started again.
            events = follower.events()
            assert {p: [e.what for e in events if e.pod == p] for p in pods} == {
                p: ["running", "started"] for p in pods
            }
            assert len(events) == 2 * target

            writer.stop()
            ends = dict(enumerate(log_end(kafka, topic, PARTITIONS)))
            wait_for("the lag to drain", lambda: committed(kafka, group, topic, PARTITIONS) == ends, timeout=120)

            def thread() -> list[str]:
                return [m.text for m in slack.thread(CHANNEL, root.ts)]

            wait_for("the resolution in the thread", lambda: any(RESOLVED.fullmatch(t) for t in thread()), timeout=60)
            texts = thread()
            approved = f":gear: Approved by <@{APPROVER}>: running *Scale orders 1 -&gt; {target}*"
            running = f"scaling orders to {target} replicas ..."
            done = (
                f":white_check_mark: *Scale orders 1 -&gt; {target}* done: "
                f"scaled deployment {orders.namespace}/orders from 1 to {target} replicas"
            )
            [verified] = [t for t in texts if VERIFIED.fullmatch(t)]
            [resolved] = [t for t in texts if RESOLVED.fullmatch(t)]
            assert all(texts.count(t) == 1 for t in (approved, running, done))
            draining = [i for i, t in enumerate(texts) if DRAINING.fullmatch(t)]
            assert draining, texts  # the verification saw the lag drain before it was back to normal
            order = [texts.index(t) for t in (approved, running, done)] + [*draining]
            order += [texts.index(verified), texts.index(resolved)]
            assert order == sorted(order), texts
            assert not [t for t in texts if "getting worse" in t or t.startswith(":x:")], texts
            resolved_root = re.compile(rf"RESOLVED `{re.escape(group)}` on `embedded`: resolved after [0-9]+ s, .*")
            wait_for(
                "the root edited",
                lambda: [bool(resolved_root.fullmatch(m.text)) for m in slack.channel(CHANNEL)] == [True],
            )

            # The spec changed once since it was created (generation 2): one PATCH of the scale subresource.
            assert deployment(orders) == (target, 2)
            entries = list(reversed(AuditLog(redis_client).latest("embedded", group, 100)))
            assert [(e.event, e.user) for e in entries if e.event in ("approved", "succeeded", "failed")] == [
                ("approved", APPROVER),
                ("succeeded", "lagbot"),
            ]
            progress = [e.detail["progress"] for e in entries if e.event == "verified"]
            assert set(progress[:-1]) == {"improving"} and progress[-1] == "resolved", progress
            assert "Traceback" not in bot.log()
            print(f"\nkubernetes scale 1 -> {target}: consumers settled {settled_in:.1f} s after the clicks")
        except BaseException:
            print(channel_dump(slack) + "\n" + follower.log_tails())
            raise
        finally:
            bot.stop(signal.SIGKILL)
    print(f"whole test: {time.monotonic() - started:.0f} s")
