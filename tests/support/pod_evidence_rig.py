"""What the pod-evidence tests share: the target Deployment, the policy that names it, the counted executor.

- `orders`: Deployment orders (2 pods, limits cpu 500m, memory 256Mi) in the test's namespace, where lagbot's
  ServiceAccount may read pods (the shipped evidence Role); `unread`: one `orders` pod without that Role.
- `orders_workload` / `orders_policy`: a policy's workload naming that Deployment, and the policy whose default rule
  names it (a member's pod found by its IP, or by its client id); `owner`: a member of the group on a pod's IP.
- `Counted`: the KubernetesExecutor as lagbot's ServiceAccount, each request it sends to the real API server noted
  on its API clients as it leaves (the server answers it): a reading kept is seen not to be read again;
  `remediator_of` a bot acts through it.
- The pods' status as a kubelet writes it: tests/support/pod_status.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lagbot.core.model import Member
from lagbot.policies.approvers import ApproverDirectory, MemoryUsergroupCache
from lagbot.remediations.executors.base import Workload
from lagbot.remediations.executors.kubernetes import KubernetesExecutor
from lagbot.service.bot import Bot
from lagbot.service.remediate import Remediator
from tests.support.k8s_cluster import ControlPlane
from tests.support.k8s_fixtures import Cluster
from tests.support.k8s_rbac import apply_bot_account, apply_target, executor_as_bot, target_overlay
from tests.support.verdicts import TOPIC

POD_GET = "GET /api/v1/namespaces/{namespace}/pods/{name}"
POD_BY_IP = "GET /api/v1/namespaces/{namespace}/pods"
REPLICA_SETS = "GET /apis/apps/v1/namespaces/{namespace}/replicasets"
ONE_READING = [POD_BY_IP, POD_GET, REPLICA_SETS]
"""What reading one owner's pod of a Deployment asks: the pod with the member's IP, the pod, the ReplicaSets."""


class Counted:
    """`executor`: the executor as lagbot's ServiceAccount; `requests`: 'GET <path template>' of each request sent."""

    def __init__(self, cluster: Cluster, now: float) -> None:
        self.executor: KubernetesExecutor = executor_as_bot(cluster, now=now)
        self.requests: list[str] = []
        for api in (self.executor.api_client, self.executor.single_try):  # a check cycle's reads go through the latter
            self._count(api)

    def _count(self, api: Any) -> None:
        send = api.call_api

        def counted(resource_path: str, method: str, *args: Any, **kwargs: Any) -> Any:
            self.requests.append(f"{method} {resource_path}")
            return send(resource_path, method, *args, **kwargs)

        api.call_api = counted

    def remediator_of(self, bot: Bot) -> Remediator:
        """The bot's remediation side as lagbot.app.assembly builds it, acting through this executor."""
        directory = ApproverDirectory(bot.slack, cache=MemoryUsergroupCache())
        return Remediator(bot, directory=directory, executor_for=lambda _workload: self.executor)


def _namespace_with_orders(
    k8s: Cluster, plane: ControlPlane, folder: Path, *, replicas: int, evidence: bool, limits: dict[str, str] | None
) -> Cluster:
    """lagbot's ServiceAccount, Deployment orders in the test's namespace, and the shipped target Role there (with
    the evidence Role that lets it read pods, or without)."""
    apply_bot_account(plane)
    k8s.deployment("orders", replicas, limits=limits)
    apply_target(k8s.plane, target_overlay(folder, k8s.namespace, keda=False, evidence=evidence))
    return k8s


@pytest.fixture
def orders(k8s: Cluster, k8s_control_plane: ControlPlane, tmp_path: Path) -> Cluster:
    limits = {"cpu": "500m", "memory": "256Mi"}
    return _namespace_with_orders(k8s, k8s_control_plane, tmp_path / "target", replicas=2, evidence=True, limits=limits)


@pytest.fixture
def unread(k8s: Cluster, k8s_control_plane: ControlPlane, tmp_path: Path) -> Cluster:
    return _namespace_with_orders(k8s, k8s_control_plane, tmp_path / "target", replicas=1, evidence=False, limits=None)


def orders_workload(namespace: str | None = None, *, by_client_id: bool = False) -> dict[str, str]:
    """A policy's workload: the Deployment orders in `namespace` (None: the executor's default), a member's pod found
    by its IP, or (`by_client_id`) named by its client id."""
    workload = {"executor": "kubernetes", "name": "orders"}
    if namespace is not None:
        workload["namespace"] = namespace
    if by_client_id:
        workload["member_pod"] = "{client_id}"
    return workload


def workload_of(cluster: Cluster, *, by_client_id: bool = False) -> Workload:
    """`orders_workload` in the cluster's namespace, as the executor is given it."""
    return Workload.model_validate(orders_workload(cluster.namespace, by_client_id=by_client_id))


def orders_policy(cluster: Cluster, *, by_client_id: bool) -> dict[str, Any]:
    """A policy whose default rule names the namespace's Deployment orders, approved by U0ONCALL1, allowing restart."""
    workload = orders_workload(cluster.namespace, by_client_id=by_client_id)
    return {
        "version": 1,
        "default": {"approvers": {"users": ["U0ONCALL1"]}, "workload": workload, "remediations": {"restart": {}}},
    }


def owner(i: int, host: str) -> Member:
    """Member m-i (client consumer-i) on `host`, owning partition i of TOPIC."""
    return Member(f"m-{i}", f"consumer-{i}", f"/{host}", ((TOPIC, i),))
