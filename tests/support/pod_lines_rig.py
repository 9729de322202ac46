"""What `/lag <group>` and `lagbot check` share to show the owners' pods: a stalled group on Apache Kafka whose members
are named as the pods of the Deployment `orders` (tests/support/pod_evidence_rig.py) that run them.

`stalled_on_pods`: two real members, their client ids the names of the two `orders` pods (the policy's workload
finds a member's pod by `{client_id}`); the member that owns partition 0 commits 10 of 30 (20 wait), the other is
caught up. The policy's rule that names that workload is `policy`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from tests.support.apache_groups import LiveGroup, live_group
from tests.support.k8s_fixtures import Cluster

HOST = "/127.0.0.1"
"""Every member's host as the broker sees it: the pods are found by name, not by IP."""


@dataclass(frozen=True)
class Stalled:
    topic: str
    group: str
    stuck: str
    """The stuck member's client id: the name of its pod."""
    caught_up: str
    live: LiveGroup


def policy(cluster: Cluster) -> dict[str, Any]:
    """A policy whose default rule names the namespace's Deployment orders, its members' pods found by client id."""
    workload = {"executor": "kubernetes", "name": "orders", "namespace": cluster.namespace, "member_pod": "{client_id}"}
    return {
        "version": 1,
        "default": {"approvers": {"users": ["U0ONCALL1"]}, "workload": workload, "remediations": {"restart": {}}},
    }


@contextmanager
def stalled_on_pods(bootstrap: str, topic: str, group: str, pods: list[str]) -> Iterator[Stalled]:
    """The group on `topic` (2 partitions, 30 messages each, already produced), its members named `pods`."""
    with live_group(bootstrap, group, [topic]) as live:
        for pod in pods:
            live.join(pod)
        owned = live.wait_spread(2, owning=2)
        [stuck] = [client for client, tps in owned.items() if tps == [(topic, 0)]]
        [caught_up] = [client for client, tps in owned.items() if tps == [(topic, 1)]]
        live.commit(stuck, {(topic, 0): 10})
        live.commit(caught_up, {(topic, 1): 30})
        yield Stalled(topic, group, stuck, caught_up, live)
