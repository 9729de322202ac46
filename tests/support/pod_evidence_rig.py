"""What the pod-evidence tests share: the target Deployment, pod status as a kubelet writes it, the counted executor.

- `orders`: Deployment orders (2 pods, limits cpu 500m, memory 256Mi) in the test's namespace, where lagbot's
  ServiceAccount may read pods (the shipped evidence Role); `unread`: one `orders` pod without that Role.
- `oom_looping`, `crashed_once`: the container status a kubelet writes, patched through the status subresource.
- `Counted`: the KubernetesExecutor as lagbot's ServiceAccount, each request it sends to the real API server noted
  on its own API client as it leaves (the server answers it): a reading kept is seen not to be read again.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from lagbot.remediations.executors.kubernetes import KubernetesExecutor
from tests.support.k8s_cluster import ControlPlane
from tests.support.k8s_fixtures import Cluster
from tests.support.k8s_rbac import apply_bot_account, apply_target, executor_as_bot, target_overlay

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
        api = self.executor.api_client
        send = api.call_api

        def counted(resource_path: str, method: str, *args: Any, **kwargs: Any) -> Any:
            self.requests.append(f"{method} {resource_path}")
            return send(resource_path, method, *args, **kwargs)

        api.call_api = counted


@pytest.fixture
def orders(k8s: Cluster, k8s_control_plane: ControlPlane, tmp_path: Path) -> Cluster:
    apply_bot_account(k8s_control_plane)
    k8s.deployment("orders", 2, limits={"cpu": "500m", "memory": "256Mi"})
    apply_target(k8s.plane, target_overlay(tmp_path / "target", k8s.namespace, keda=False, evidence=True))
    return k8s


@pytest.fixture
def unread(k8s: Cluster, k8s_control_plane: ControlPlane, tmp_path: Path) -> Cluster:
    apply_bot_account(k8s_control_plane)
    k8s.deployment("orders", 1)
    apply_target(k8s.plane, target_overlay(tmp_path / "target", k8s.namespace, keda=False))
    return k8s


def stamp(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def container(restarts: int, reason: str, exit_code: int, finished: float, **state: Any) -> dict[str, Any]:
    """A container status as a kubelet writes it: its last termination and its state now (`waiting=`, `running=`)."""
    return {
        "name": "consumer",
        "image": "example.invalid/consumer:1",
        "imageID": "",
        "restartCount": restarts,
        "ready": "running" in state,
        "started": "running" in state,
        "state": state,
        "lastState": {
            "terminated": {
                "reason": reason,
                "exitCode": exit_code,
                "startedAt": stamp(finished - 30),
                "finishedAt": stamp(finished),
            }
        },
    }


def oom_looping(k8s: Cluster, pod: str, ip: str, finished: float, restarts: int) -> None:
    """A container OOM-killed `restarts` times, the last at `finished`, now backing off."""
    backoff = {"reason": "CrashLoopBackOff", "message": "back-off 40s restarting failed container"}
    status = container(restarts, "OOMKilled", 137, finished, waiting=backoff)
    conditions = [{"type": "Ready", "status": "False"}, {"type": "ContainersReady", "status": "False"}]
    k8s.set_pod_status(pod, ip, containerStatuses=[status], conditions=conditions)


def crashed_once(k8s: Cluster, pod: str, ip: str, finished: float) -> None:
    """A container that ended once with Error (exit 1) at `finished` and is running again."""
    status = container(1, "Error", 1, finished, running={"startedAt": stamp(finished + 1)})
    k8s.set_pod_status(pod, ip, containerStatuses=[status], conditions=[{"type": "Ready", "status": "True"}])
