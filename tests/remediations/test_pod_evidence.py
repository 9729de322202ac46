"""The owner's pod as evidence, read by the executor from a real API server under the shipped read-only Role
(deploy/kubernetes/components/evidence), with the pod status a kubelet would write (patched through the status
subresource: no kubelet runs)."""

from __future__ import annotations

import time

import pytest

from lagbot.core.model import GroupVerdict, Member, Status
from lagbot.remediations.base import EvidenceRefusal, ProposalContext
from lagbot.remediations.executors.base import ExecutorError, Workload
from lagbot.remediations.executors.kubernetes import KubernetesExecutor
from lagbot.remediations.executors.pod_evidence import PodReadings, escalation, findings
from lagbot.remediations.restart.remediation import REMEDIATION, RestartParams
from tests.support.k8s_fixtures import Cluster
from tests.support.k8s_rbac import executor_as_bot
from tests.support.pod_evidence_rig import ONE_READING, POD_GET, Counted, orders, owner, unread, workload_of
from tests.support.pod_status import crashed_findings, crashed_once, oom_findings, oom_looping, oom_refusal, ready
from tests.support.verdicts import TOPIC, partition, verdict
from tests.support.waiting import wait_for

pytestmark = pytest.mark.integration

__all__ = ["orders", "unread"]  # fixtures, from tests.support.pod_evidence_rig

WINDOW = 600.0


def test_an_oom_looping_owner_is_evidence_and_a_restart_is_not_the_remedy(orders: Cluster) -> None:
    first, second = orders.wait_pods("orders", 2)
    now = time.time()
    oom_looping(orders, first.metadata.name, "10.1.2.3", finished=now - 90, restarts=4)
    ready(orders, second.metadata.name, "10.1.2.4")
    executor = executor_as_bot(orders, now=now)
    workload = workload_of(orders)

    evidence = executor.owner_pod_evidence(workload, Member("m-1", "consumer-1", "/10.1.2.3"))

    pod = first.metadata.name
    assert (evidence.pod, evidence.phase, evidence.ready, evidence.rollout_replica_sets) == (pod, "Running", False, 1)
    assert findings(evidence, now, WINDOW) == oom_findings(pod, "90 s ago")
    assert escalation(evidence, now, WINDOW) == oom_refusal(pod)
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
    workload = workload_of(orders)
    orders.apps.patch_namespaced_deployment(
        "orders", orders.namespace, {"spec": {"template": {"metadata": {"annotations": {"rev": "2"}}}}}
    )

    def two_sets() -> int | None:
        sets = executor.owner_pod_evidence(workload, Member("m-1", "c-1", "/10.1.2.3")).rollout_replica_sets
        return sets if sets == 2 else None

    assert wait_for("the new ReplicaSet to have a pod", two_sets, timeout=30) == 2
    evidence = executor.owner_pod_evidence(workload, Member("m-1", "c-1", "/10.1.2.3"))
    assert findings(evidence, now, WINDOW)[-1] == "a rollout is in progress: 2 ReplicaSets of the workload have pods"


def test_without_the_evidence_role_reading_the_pod_is_refused_by_name(unread: Cluster) -> None:
    k8s = unread
    [pod] = k8s.wait_pods("orders", 1)
    executor = executor_as_bot(k8s, now=time.time())
    workload = workload_of(k8s, by_client_id=True)
    ns = k8s.namespace
    with pytest.raises(ExecutorError) as refused:
        executor.owner_pod_evidence(workload, Member("m-1", pod.metadata.name, "/10.9.9.9"))
    assert str(refused.value) == (
        f"could not read pod {ns}/{pod.metadata.name} of deployment {ns}/orders: forbidden by RBAC: "
        f"system:serviceaccount:lagbot:lagbot may not get pods (the core API group) in namespace {ns}; "
        f"grant it in the Role lagbot-evidence of namespace {ns}"
    )


def stuck_on(*hosts: str) -> GroupVerdict:
    """A group whose partition i is STALL, owned by a member on hosts[i]."""
    owners = [owner(i, host) for i, host in enumerate(hosts)]
    parts = [partition(i, committed=0, log_end=500, status=Status.STALL, owner=m) for i, m in enumerate(owners)]
    return verdict(parts, members=owners)


def restart_params(executor: KubernetesExecutor, workload: Workload, of: GroupVerdict, now: float) -> RestartParams:
    """What the restart's `prepare` makes of the stuck owners, as the service proposes it (ProposalContext)."""
    context = ProposalContext(executor=lambda: executor, workload=workload, now=now)
    raw = {"workload": workload.model_dump(mode="json"), "scope": "auto"}
    params = REMEDIATION.prepare(raw, of, context)
    assert isinstance(params, RestartParams)
    return params


def test_a_restart_shows_each_owners_pod_and_is_refused_for_an_oom_loop(orders: Cluster) -> None:
    first, second = orders.wait_pods("orders", 2)
    now = time.time()
    crashed_once(orders, first.metadata.name, "10.1.2.3", finished=now - 120)
    ready(orders, second.metadata.name, "10.1.2.4")
    executor = executor_as_bot(orders, now=now)
    workload = workload_of(orders)

    # One owner crashed once and is back, one is healthy: both restarted, the first with its pod's evidence.
    of = stuck_on("10.1.2.3", "10.1.2.4")
    params = restart_params(executor, workload, of, now)
    pod = first.metadata.name
    crashed = crashed_findings(pod, "2 min ago")
    assert params.owner_pods == {"m-0": crashed}
    plan = REMEDIATION.plan(of, params, now=now)
    assert plan.steps == (
        f"restart consumer-0@/10.1.2.3 (member m-0), owner of stalled {TOPIC}-0; its pod: {'; '.join(crashed)}",
        f"restart consumer-1@/10.1.2.4 (member m-1), owner of stalled {TOPIC}-1",
    )

    # The first owner is now OOM-killed again and again: no restart is offered, and the refusal is the evidence.
    oom_looping(orders, pod, "10.1.2.3", finished=now - 30, restarts=4)
    with pytest.raises(EvidenceRefusal) as refused:
        restart_params(executor, workload, of, now)
    assert str(refused.value) == oom_refusal(pod)


def test_a_restart_reads_past_an_owner_whose_pod_is_gone_and_is_refused_for_the_next_one_s_oom_loop(
    orders: Cluster,
) -> None:
    first, _ = orders.wait_pods("orders", 2)
    now = time.time()
    oom_looping(orders, first.metadata.name, "10.1.2.3", finished=now - 30, restarts=4)
    executor = executor_as_bot(orders, now=now)
    # The first stuck owner's address matches no pod (its pod is gone): that is its own fact, and the second owner's
    # pod still says a restart cannot help.
    with pytest.raises(EvidenceRefusal) as refused:
        restart_params(executor, workload_of(orders), stuck_on("10.9.9.9", "10.1.2.3"), now)
    assert str(refused.value) == oom_refusal(first.metadata.name)


def test_without_the_evidence_role_a_restart_is_proposed_as_before(unread: Cluster) -> None:
    k8s = unread
    [pod] = k8s.wait_pods("orders", 1)
    now = time.time()
    oom_looping(k8s, pod.metadata.name, "10.1.2.3", finished=now - 30, restarts=4)
    executor = executor_as_bot(k8s, now=now)
    workload = workload_of(k8s)
    assert restart_params(executor, workload, stuck_on("10.1.2.3"), now).owner_pods == {}


def test_a_reading_is_kept_for_its_time_and_the_owners_kept_are_bounded(orders: Cluster) -> None:
    first, _ = orders.wait_pods("orders", 2)
    now = time.time()
    crashed_once(orders, first.metadata.name, "10.1.2.3", finished=now - 120)
    counted = Counted(orders, now)
    workload = workload_of(orders)
    readings = PodReadings(every=120.0, most=2)
    one, two, three = (Member(f"m-{i}", f"consumer-{i}", "/10.1.2.3") for i in range(3))

    read = readings.read(counted.executor, workload, one, now=now)
    assert (read.pod, read.containers[0].restarts, counted.requests) == (first.metadata.name, 1, ONE_READING)
    assert readings.read(counted.executor, workload, one, now=now + 119.9) == read  # kept: no request
    assert counted.requests == ONE_READING
    assert readings.read(counted.executor, workload, one, now=now + 120) == read  # its time is over: read again
    assert counted.requests == ONE_READING * 2

    # Two owners at most: a third pushes out the oldest, which is read again when asked.
    readings.read(counted.executor, workload, two, now=now + 121)
    readings.read(counted.executor, workload, three, now=now + 122)
    assert counted.requests == ONE_READING * 4
    readings.read(counted.executor, workload, three, now=now + 123)
    assert counted.requests == ONE_READING * 4
    readings.read(counted.executor, workload, one, now=now + 124)
    assert counted.requests == ONE_READING * 5


def test_a_refusal_to_read_is_kept_too(unread: Cluster) -> None:
    [pod] = unread.wait_pods("orders", 1)
    now = time.time()
    counted = Counted(unread, now)
    workload = workload_of(unread, by_client_id=True)
    member = Member("m-1", pod.metadata.name, "/10.9.9.9")
    readings = PodReadings()
    with pytest.raises(ExecutorError) as refused:
        readings.read(counted.executor, workload, member, now=now)
    assert counted.requests == [POD_GET]  # refused by RBAC
    with pytest.raises(ExecutorError) as again:
        readings.read(counted.executor, workload, member, now=now + 60)
    assert (str(again.value), counted.requests) == (str(refused.value), [POD_GET])  # kept: not asked again
    assert "forbidden by RBAC" in str(again.value)
