"""The pod follower (tests/support/pod_follower.py) on the real control plane and Apache Kafka: one real consumer per
running pod of a Deployment, started and stopped as the controllers make and remove pods."""

from __future__ import annotations

from pathlib import Path

import pytest

from lagbot.devkit.apache_kafka import ApacheKafka
from lagbot.devkit.fleet import FleetSpec
from tests.conftest import Kafka, Names
from tests.support.group_commits import committed
from tests.support.k8s_fixtures import Cluster
from tests.support.pod_follower import POD_NETWORK, PodFollower
from tests.support.remediation_rig import log_end
from tests.support.waiting import wait_for

pytestmark = pytest.mark.integration

APP = "workers"


def members(kafka: Kafka, group: str) -> list[str]:
    """The client ids of the group's members, as the broker describes the group."""
    [future] = kafka.admin.describe_consumer_groups([group]).values()
    return sorted(m.client_id for m in future.result(15).members)


def pod_names(k8s: Cluster) -> list[str]:
    return [str(p.metadata.name) for p in k8s.pods_of(APP)]


def test_a_consumer_per_running_pod_follows_scale_up_scale_down_and_a_deleted_pod(
    k8s: Cluster, kafka: Kafka, broker: ApacheKafka, names: Names, tmp_path: Path
) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 2)
    kafka.produce(topic, 0, 30)
    kafka.produce(topic, 1, 20)
    k8s.deployment(APP, 2)
    spec = FleetSpec(name=APP, bootstrap=broker.bootstrap, group=group, topics=[topic], commit_interval_ms=200)
    with PodFollower(k8s, spec, tmp_path / "pods") as follower:
        wait_for("two consumers settled on the 2 partitions", lambda: follower.settled(2, 2), timeout=60)
        two = pod_names(k8s)
        assert sorted(follower.consumers()) == two
        # What a kubelet writes: Running, and an address of its own for each pod.
        listed = {p.metadata.name: p.status for p in k8s.pods_of(APP)}
        assert {s.phase for s in listed.values()} == {"Running"}
        ips = sorted(str(s.pod_ip) for s in listed.values())
        assert len(set(ips)) == 2 and all(ip.startswith(POD_NETWORK) for ip in ips)
        wait_for("the pods as the group's members", lambda: members(kafka, group) == two, timeout=30)
        wait_for("the backlog consumed", lambda: committed(kafka, group, topic, 2) == {0: 30, 1: 20}, timeout=60)

        k8s.apps.patch_namespaced_deployment_scale(APP, k8s.namespace, {"spec": {"replicas": 1}})
        [kept] = k8s.wait_pods(APP, 1)
        [removed] = [p for p in two if p != kept.metadata.name]
        wait_for("the removed pod's consumer stopped", lambda: removed not in follower.consumers(), timeout=30)
        stop = wait_for("its exit", lambda: next((e for e in follower.events() if e.what == "stopped"), None), 30)
        assert (stop.pod, stop.code) == (removed, 0)  # SIGTERM: it committed, left the group and exited 0
        wait_for("one member left", lambda: members(kafka, group) == [kept.metadata.name], timeout=30)
        wait_for("one consumer on both partitions", lambda: follower.settled(1, 2), timeout=60)

        k8s.core.delete_namespaced_pod(kept.metadata.name, k8s.namespace)
        [replacement] = wait_for(
            "the ReplicaSet's new pod",
            lambda: [n for n in pod_names(k8s) if n not in two] or None,
            timeout=30,
        )
        wait_for("the new pod's consumer settled", lambda: list(follower.consumers()) == [replacement], timeout=60)
        wait_for("the new pod as the only member", lambda: members(kafka, group) == [replacement], timeout=60)
        kafka.produce(topic, 1, 10)
        ends = dict(enumerate(log_end(kafka, topic, 2)))
        assert ends == {0: 30, 1: 30}
        wait_for("the new messages consumed", lambda: committed(kafka, group, topic, 2) == ends, timeout=60)

        by_pod = {p: [e.what for e in follower.events() if e.pod == p] for p in [*two, replacement]}
        assert by_pod == {
            removed: ["running", "started", "stopped"],
            kept.metadata.name: ["running", "started", "stopped"],
            replacement: ["running", "started"],
        }
        assert all(e.code == 0 for e in follower.events() if e.what == "stopped")
    assert not [e for e in follower.events() if e.what in ("killed", "restarted")]
