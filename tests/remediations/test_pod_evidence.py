"""The owner's pod as evidence, read by the executor from a real API server under the shipped read-only Role
(deploy/kubernetes/components/evidence), with the pod status a kubelet would write (patched through the status
subresource: no kubelet runs)."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lagbot.core.model import Member
from lagbot.remediations.executors.base import ExecutorError, Workload
from lagbot.remediations.executors.pod_evidence import escalation, findings
from tests.support.k8s_cluster import ControlPlane
from tests.support.k8s_fixtures import Cluster
from tests.support.k8s_rbac import apply_bot_account, apply_target, executor_as_bot, target_overlay
from tests.support.waiting import wait_for

pytestmark = pytest.mark.integration

WINDOW = 600.0


def stamp(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture
def orders(k8s: Cluster, k8s_control_plane: ControlPlane, tmp_path: Path) -> Cluster:
    apply_bot_account(k8s_control_plane)
    k8s.deployment("orders", 2, limits={"cpu": "500m", "memory": "256Mi"})
    apply_target(k8s.plane, target_overlay(tmp_path / "target", k8s.namespace, keda=False, evidence=True))
    return k8s


def oom_looping(k8s: Cluster, pod: str, ip: str, finished: float, restarts: int) -> None:
    """What a kubelet writes for a container OOM-killed `restarts` times, now backing off."""
    container = {
        "name": "consumer",
        "image": "example.invalid/consumer:1",
        "imageID": "",
        "restartCount": restarts,
        "ready": False,
        "started": False,
        "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s restarting failed container"}},
        "lastState": {
            "terminated": {
                "reason": "OOMKilled",
                "exitCode": 137,
                "startedAt": stamp(finished - 30),
                "finishedAt": stamp(finished),
            }
        },
    }
    conditions = [{"type": "Ready", "status": "False"}, {"type": "ContainersReady", "status": "False"}]
    k8s.set_pod_status(pod, ip, containerStatuses=[container], conditions=conditions)


def test_an_oom_looping_owner_is_evidence_and_a_restart_is_not_the_remedy(orders: Cluster) -> None:
    first, second = orders.wait_pods("orders", 2)
    now = time.time()
    oom_looping(orders, first.metadata.name, "10.1.2.3", finished=now - 90, restarts=4)
    orders.set_pod_status(second.metadata.name, "10.1.2.4", conditions=[{"type": "Ready", "status": "True"}])
    executor = executor_as_bot(orders, now=now)
    workload = Workload(executor="kubernetes", name="orders", namespace=orders.namespace)

    evidence = executor.owner_pod_evidence(workload, Member("m-1", "consumer-1", "/10.1.2.3"))

    pod = first.metadata.name
    assert (evidence.pod, evidence.phase, evidence.ready, evidence.rollout_replica_sets) == (pod, "Running", False, 1)
    assert findings(evidence, now, WINDOW) == [
        f"pod {pod}: container consumer restarted 4 times, last ended OOMKilled 90 s ago",
        f"pod {pod}: container consumer is waiting in CrashLoopBackOff",
        "container consumer limits: cpu 500m, memory 256Mi",
        f"pod {pod} is running but not Ready",
    ]
    assert escalation(evidence, now, WINDOW) == (
        f"pod {pod}: container consumer was OOM-killed and restarted 4 times: a restart brings back the same limit; "
        "raise its memory limit (256Mi) or find what grew, then restart"
    )
    healthy = executor.owner_pod_evidence(workload, Member("m-2", "consumer-2", "/10.1.2.4"))
    assert (healthy.ready, findings(healthy, now, WINDOW), escalation(healthy, now, WINDOW)) == (True, [], None)
    # Long ago is not evidence of now.
    assert findings(evidence, now + 3600, WINDOW)[0] == f"pod {pod}: container consumer is waiting in CrashLoopBackOff"
    assert escalation(evidence, now + 3600, WINDOW) is None


def test_a_rollout_in_progress_is_evidence(orders: Cluster) -> None:
    [first, _] = orders.wait_pods("orders", 2)
    now = time.time()
    orders.set_pod_status(first.metadata.name, "10.1.2.3")
    executor = executor_as_bot(orders, now=now)
    workload = Workload(executor="kubernetes", name="orders", namespace=orders.namespace)
    orders.apps.patch_namespaced_deployment(
        "orders", orders.namespace, {"spec": {"template": {"metadata": {"annotations": {"rev": "2"}}}}}
    )

    def two_sets() -> int | None:
        sets = executor.owner_pod_evidence(workload, Member("m-1", "c-1", "/10.1.2.3")).rollout_replica_sets
        return sets if sets == 2 else None

    assert wait_for("the new ReplicaSet to have a pod", two_sets, timeout=30) == 2
    evidence = executor.owner_pod_evidence(workload, Member("m-1", "c-1", "/10.1.2.3"))
    assert findings(evidence, now, WINDOW)[-1] == "a rollout is in progress: 2 ReplicaSets of the workload have pods"


def test_without_the_evidence_role_reading_the_pod_is_refused_by_name(
    k8s: Cluster, k8s_control_plane: ControlPlane, tmp_path: Path
) -> None:
    apply_bot_account(k8s_control_plane)
    k8s.deployment("orders", 1)
    apply_target(k8s.plane, target_overlay(tmp_path / "target", k8s.namespace, keda=False))
    [pod] = k8s.wait_pods("orders", 1)
    executor = executor_as_bot(k8s, now=time.time())
    workload = Workload(executor="kubernetes", name="orders", namespace=k8s.namespace, member_pod="{client_id}")
    ns = k8s.namespace
    with pytest.raises(ExecutorError) as refused:
        executor.owner_pod_evidence(workload, Member("m-1", pod.metadata.name, "/10.9.9.9"))
    assert str(refused.value) == (
        f"could not read pod {ns}/{pod.metadata.name} of deployment {ns}/orders: forbidden by RBAC: "
        f"system:serviceaccount:lagbot:lagbot may not get pods (the core API group) in namespace {ns}; "
        f"grant it in the Role lagbot-evidence of namespace {ns}"
    )
