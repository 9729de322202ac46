"""The Kubernetes executor against a real API server, as the shipped ServiceAccount under the shipped RBAC.

The control plane (tests/support/k8s_cluster.py: etcd, kube-apiserver, kube-controller-manager) runs once per
session; each test has its own namespace, where the admin creates the workloads and applies the target RBAC with
kubectl as a user does (tests/support/k8s_rbac.py). The executor then runs with a TokenRequest token of
lagbot/lagbot, so every call is authorized by the real RBAC authorizer, and each test reads back the objects as the
API server holds them (and what the controllers made of them: ReplicaSets, pods).

No kubelet runs: a pod's Running phase and IP are written to its status subresource, as a kubelet would.
The faults a real server cannot be made to produce on demand (a 500, an answer that never comes) are in
test_executor_kubernetes_faults.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lagbot.core.model import Member
from lagbot.remediations.executors.base import ExecutorError, Workload
from lagbot.remediations.executors.config import ExecutorsConfig, KubernetesConfig, build_executor
from lagbot.remediations.executors.kubernetes import KEDA_PAUSED, RESTARTED_AT, KubernetesExecutor
from tests.support.k8s_cluster import ControlPlane
from tests.support.k8s_fixtures import Cluster, new_namespace_name
from tests.support.k8s_rbac import apply_bot_account, apply_target, executor_as_bot, target_overlay
from tests.support.waiting import wait_for

pytestmark = pytest.mark.integration

NOW = 1_763_976_600.0  # 2025-11-24T09:30:00Z
BOT = "system:serviceaccount:lagbot:lagbot"


@pytest.fixture(scope="module")
def bot_account(k8s_control_plane: ControlPlane) -> ControlPlane:
    apply_bot_account(k8s_control_plane)
    return k8s_control_plane


@pytest.fixture
def shop(k8s: Cluster, bot_account: ControlPlane, tmp_path: Path) -> Cluster:
    """The test's namespace with a Deployment orders (2), a StatefulSet ledger (3), a Deployment billing (1) and
    the ScaledObject orders-so; lagbot's Role there names orders, ledger and orders-so (not billing)."""
    k8s.deployment("orders", 2)
    k8s.statefulset("ledger", 3)
    k8s.deployment("billing", 1)
    k8s.scaled_object("orders-so", "orders", annotations={"team": "shop"})
    overlay = target_overlay(
        tmp_path / "target", k8s.namespace, workloads=["orders", "ledger"], scaled_objects=["orders-so"]
    )
    apply_target(k8s.plane, overlay)
    return k8s


@pytest.fixture
def executor(shop: Cluster) -> KubernetesExecutor:
    return executor_as_bot(shop, now=NOW)


def workload(k8s: Cluster, **changes: object) -> Workload:
    return Workload.model_validate({"executor": "kubernetes", "name": "orders", "namespace": k8s.namespace, **changes})


def replicas_held(k8s: Cluster, kind: str, name: str) -> int:
    read = k8s.apps.read_namespaced_deployment if kind == "deployment" else k8s.apps.read_namespaced_stateful_set
    return int(read(name, k8s.namespace).spec.replicas)


def template_annotations(k8s: Cluster, kind: str, name: str) -> dict[str, str]:
    read = k8s.apps.read_namespaced_deployment if kind == "deployment" else k8s.apps.read_namespaced_stateful_set
    return dict(read(name, k8s.namespace).spec.template.metadata.annotations or {})


# --- scale -----------------------------------------------------------------------------------------------


def test_scale_a_deployment_through_the_scale_subresource(shop: Cluster, executor: KubernetesExecutor) -> None:
    assert executor.replicas(workload(shop)) == 2
    outcome = executor.scale(workload(shop), 4)
    assert outcome.ok, outcome.detail
    assert outcome.data == {"before": 2, "after": 4}
    assert outcome.detail == f"scaled deployment {shop.namespace}/orders from 2 to 4 replicas"
    assert replicas_held(shop, "deployment", "orders") == 4
    assert len(shop.wait_pods("orders", 4)) == 4  # the controllers act on it as on any scale


def test_scale_a_statefulset(shop: Cluster, executor: KubernetesExecutor) -> None:
    ledger = workload(shop, name="ledger", kind="statefulset")
    outcome = executor.scale(ledger, 1)
    assert outcome.ok, outcome.detail
    assert outcome.data == {"before": 3, "after": 1}
    assert replicas_held(shop, "statefulset", "ledger") == 1
    assert replicas_held(shop, "deployment", "orders") == 2


# --- rollout restart --------------------------------------------------------------------------------------


def test_restart_sets_restarted_at_like_kubectl_and_a_new_replicaset_rolls_out(
    shop: Cluster, executor: KubernetesExecutor
) -> None:
    shop.wait_pods("orders", 2)
    outcome = executor.restart(workload(shop))
    assert outcome.ok, outcome.detail
    assert outcome.data == {"restarted_at": "2025-11-24T09:30:00Z"}
    assert outcome.detail == f"rolling restart of deployment {shop.namespace}/orders started"
    assert template_annotations(shop, "deployment", "orders") == {RESTARTED_AT: "2025-11-24T09:30:00Z"}

    def replicasets() -> list[str] | None:
        listed = shop.apps.list_namespaced_replica_set(shop.namespace, label_selector="app=orders").items
        stamped = [rs for rs in listed if (rs.spec.template.metadata.annotations or {}).get(RESTARTED_AT)]
        return [rs.metadata.name for rs in listed] if len(listed) == 2 and stamped else None

    assert len(wait_for("a second ReplicaSet of orders with restartedAt", replicasets, timeout=30)) == 2


def test_restart_a_statefulset(shop: Cluster, executor: KubernetesExecutor) -> None:
    outcome = executor.restart(workload(shop, name="ledger", kind="statefulset"))
    assert outcome.ok, outcome.detail
    assert template_annotations(shop, "statefulset", "ledger") == {RESTARTED_AT: "2025-11-24T09:30:00Z"}
    assert template_annotations(shop, "deployment", "orders") == {}


# --- one member's pod -------------------------------------------------------------------------------------


def test_restart_member_deletes_the_pod_with_the_ip_kafka_reports(shop: Cluster, executor: KubernetesExecutor) -> None:
    first, second = shop.wait_pods("orders", 2)
    shop.set_pod_status(first.metadata.name, "10.1.2.3")
    shop.set_pod_status(second.metadata.name, "10.1.2.4")
    member = Member(member_id="consumer-1-abc", client_id="consumer-1", host="/10.1.2.3")

    outcome = executor.restart_member(workload(shop), member)

    assert outcome.ok, outcome.detail
    assert outcome.data == {"pod": first.metadata.name}
    assert outcome.detail == (f"restarted consumer-1 (pod {first.metadata.name}) of deployment {shop.namespace}/orders")
    names = {p.metadata.name for p in wait_for("a new pod in place of the deleted one", lambda: _replaced(shop, first))}
    assert second.metadata.name in names and first.metadata.name not in names


def _replaced(shop: Cluster, gone: object) -> list[object] | None:
    pods = shop.pods_of("orders")
    return pods if len(pods) == 2 and gone.metadata.name not in {p.metadata.name for p in pods} else None  # type: ignore[attr-defined]


def test_restart_member_by_its_pod_name(shop: Cluster, executor: KubernetesExecutor) -> None:
    first, second = shop.wait_pods("orders", 2)
    member = Member(member_id="m-1", client_id=second.metadata.name, host="/10.9.9.9")
    outcome = executor.restart_member(workload(shop, member_pod="{client_id}"), member)
    assert outcome.ok, outcome.detail
    assert outcome.data == {"pod": second.metadata.name}
    names = {
        p.metadata.name for p in wait_for("a new pod in place of the deleted one", lambda: _replaced(shop, second))
    }
    assert first.metadata.name in names


def test_restart_member_with_no_running_pod_at_that_ip_deletes_nothing(
    shop: Cluster, executor: KubernetesExecutor
) -> None:
    first, second = shop.wait_pods("orders", 2)
    shop.set_pod_status(first.metadata.name, "10.1.2.3", phase="Pending")  # not Running: not a member's pod
    outcome = executor.restart_member(workload(shop), Member(member_id="m", client_id="c", host="/10.1.2.3"))
    assert not outcome.ok
    assert outcome.detail == (
        f"expected one running pod with IP 10.1.2.3 in namespace {shop.namespace}, found none; nothing deleted"
    )
    assert {p.metadata.name for p in shop.pods_of("orders")} == {first.metadata.name, second.metadata.name}


@pytest.mark.parametrize(
    ("client_id", "expected"),
    [
        ("billing-5c6d-aaaaa", "pod billing-5c6d-aaaaa does not belong to orders"),
        ("Orders_7d9f8", "'Orders_7d9f8' is not a pod name"),
        ("orders-x;rm -rf", "is not a pod name"),
    ],
)
def test_restart_member_refuses_a_pod_that_is_not_the_workloads(
    shop: Cluster, executor: KubernetesExecutor, client_id: str, expected: str
) -> None:
    [billing] = shop.wait_pods("billing", 1)
    before = {p.metadata.name for p in shop.core.list_namespaced_pod(shop.namespace).items}
    outcome = executor.restart_member(workload(shop, member_pod="{client_id}"), Member("m-1", client_id, "/10.1.2.9"))
    assert not outcome.ok
    assert expected in outcome.detail
    assert billing.metadata.name in before
    assert {p.metadata.name for p in shop.core.list_namespaced_pod(shop.namespace).items} == before


def test_restart_member_whose_pod_is_already_gone(shop: Cluster, executor: KubernetesExecutor) -> None:
    member = Member(member_id="m", client_id="orders-7d9f8-gone1", host="/10.1.2.3")
    outcome = executor.restart_member(workload(shop, member_pod="{client_id}"), member)
    assert not outcome.ok
    assert outcome.detail == (
        f"could not delete pod {shop.namespace}/orders-7d9f8-gone1 of deployment {shop.namespace}/orders: "
        '404 Not Found: pods "orders-7d9f8-gone1" not found'
    )


# --- KEDA ---------------------------------------------------------------------------------------------------


def test_scale_on_keda_pauses_the_scaled_object_and_restore_hands_it_back(
    shop: Cluster, executor: KubernetesExecutor
) -> None:
    keda = workload(shop, keda_scaled_object="orders-so")
    outcome = executor.scale(keda, 6)
    assert outcome.ok, outcome.detail
    assert outcome.data == {"before": 2, "after": 6, "keda_paused": True, "keda_previous": None}
    assert shop.scaled_object_annotations("orders-so") == {"team": "shop", KEDA_PAUSED: "6"}
    assert replicas_held(shop, "deployment", "orders") == 6

    restored = executor.restore_autoscaling(keda, previous=outcome.data["keda_previous"])
    assert restored.ok, restored.detail
    assert restored.detail == "ScaledObject orders-so unpaused: KEDA scales it again"
    assert shop.scaled_object_annotations("orders-so") == {"team": "shop"}


def test_restore_puts_back_a_pause_a_human_had_set(shop: Cluster, executor: KubernetesExecutor) -> None:
    shop.custom.patch_namespaced_custom_object(
        "keda.sh",
        "v1alpha1",
        shop.namespace,
        "scaledobjects",
        "orders-so",
        {"metadata": {"annotations": {KEDA_PAUSED: "1"}}},
    )
    keda = workload(shop, keda_scaled_object="orders-so")
    outcome = executor.scale(keda, 5)
    assert outcome.ok and outcome.data["keda_previous"] == "1"
    assert shop.scaled_object_annotations("orders-so") == {"team": "shop", KEDA_PAUSED: "5"}
    restored = executor.restore_autoscaling(keda, previous=outcome.data["keda_previous"])
    assert restored.ok and restored.detail == "ScaledObject orders-so paused-replicas set back to 1"
    assert shop.scaled_object_annotations("orders-so") == {"team": "shop", KEDA_PAUSED: "1"}


def test_set_paused_replicas_says_a_new_pause_is_a_new_pause(shop: Cluster, executor: KubernetesExecutor) -> None:
    keda = workload(shop, keda_scaled_object="orders-so")
    paused = executor.set_paused_replicas(keda, 6)
    assert paused.ok and paused.data == {"before": None, "after": 6}
    assert paused.detail == "ScaledObject orders-so paused at 6 replicas: KEDA leaves the count alone"
    changed = executor.set_paused_replicas(keda, 3)
    assert changed.detail == "ScaledObject orders-so paused-replicas changed from 6 to 3"
    assert changed.data == {"before": 6, "after": 3}
    removed = executor.set_paused_replicas(keda, None)
    assert removed.detail == "ScaledObject orders-so unpaused: KEDA scales it again"
    assert shop.scaled_object_annotations("orders-so") == {"team": "shop"}


def test_keda_scale_with_a_missing_scaled_object_changes_nothing(
    shop: Cluster, bot_account: ControlPlane, tmp_path: Path
) -> None:
    # The Role names gone-so too, so the API server's answer is the 404, not RBAC's 403.
    overlay = target_overlay(
        tmp_path / "t2", shop.namespace, workloads=["orders"], scaled_objects=["orders-so", "gone-so"]
    )
    apply_target(shop.plane, overlay)
    outcome = executor_as_bot(shop, now=NOW).scale(workload(shop, keda_scaled_object="gone-so"), 6)
    assert not outcome.ok
    assert outcome.detail == (
        f"could not read ScaledObject {shop.namespace}/gone-so: "
        '404 Not Found: scaledobjects.keda.sh "gone-so" not found'
    )
    assert replicas_held(shop, "deployment", "orders") == 2


def test_keda_scale_refused_by_admission_puts_the_pause_back(shop: Cluster, executor: KubernetesExecutor) -> None:
    """A real refusal after the pause: a ValidatingAdmissionPolicy allows at most 5 replicas in this namespace."""
    with shop.at_most_replicas(5):
        outcome = executor.scale(workload(shop, keda_scaled_object="orders-so"), 6)
    assert not outcome.ok
    assert outcome.detail.startswith(
        f"could not scale deployment {shop.namespace}/orders to 6: 422 Unprocessable Entity: "
    )
    assert "at most 5 replicas here" in outcome.detail
    assert outcome.detail.endswith("; ScaledObject orders-so unpaused: KEDA scales it again")
    assert shop.scaled_object_annotations("orders-so") == {"team": "shop"}
    assert replicas_held(shop, "deployment", "orders") == 2


def test_the_scale_remediation_refused_after_its_pause_hands_keda_back(
    shop: Cluster, executor: KubernetesExecutor
) -> None:
    """Through the remediation: the pause it set before scaling is not left behind when the scale is refused."""
    from lagbot.remediations.base import ExecutionContext
    from lagbot.remediations.scale.remediation import Scale
    from tests.support.remediation_rig import scale_plan

    plan = scale_plan(workload(shop, keda_scaled_object="orders-so"), current=2)
    with shop.at_most_replicas(3):
        outcome = Scale().execute(plan, ExecutionContext(executor=executor))
    assert not outcome.ok
    assert outcome.detail.startswith(f"could not scale deployment {shop.namespace}/orders to 4: 422 Unprocessable")
    assert "at most 3 replicas here" in outcome.detail
    assert outcome.detail.endswith("; ScaledObject orders-so unpaused: KEDA scales it again")
    assert replicas_held(shop, "deployment", "orders") == 2
    assert shop.scaled_object_annotations("orders-so") == {"team": "shop"}


def test_the_scale_remediation_pauses_keda_through_this_executor_and_restores_it_later(
    shop: Cluster, executor: KubernetesExecutor
) -> None:
    """The remediation (not only the executor) on a KEDA workload, read back from the API server."""
    from lagbot.remediations.base import ExecutionContext
    from lagbot.remediations.scale.remediation import Scale
    from tests.support.remediation_rig import scale_plan

    plan = scale_plan(workload(shop, keda_scaled_object="orders-so"), current=2)
    context = ExecutionContext(executor=executor)
    outcome = Scale().execute(plan, context)
    assert outcome.ok, outcome.detail
    assert outcome.data["keda_previous"] is None and outcome.data["after"] == 4
    assert shop.scaled_object_annotations("orders-so") == {"team": "shop", KEDA_PAUSED: "4"}
    assert replicas_held(shop, "deployment", "orders") == 4

    restored = Scale().restore(plan, context, previous=outcome.data["keda_previous"])
    assert restored.ok, restored.detail
    assert shop.scaled_object_annotations("orders-so") == {"team": "shop"}


# --- what RBAC refuses ------------------------------------------------------------------------------------


def refused(doing: str, verb: str, resource: str, group: str, namespace: str) -> str:
    api = f"API group {group}" if group else "the core API group"
    return (
        f"could not {doing}: forbidden by RBAC: {BOT} may not {verb} {resource} ({api}) in namespace {namespace}; "
        f"grant it in the Role lagbot-remediations of namespace {namespace}"
    )


def test_a_namespace_without_lagbots_role_is_refused_and_nothing_changes(
    shop: Cluster, executor: KubernetesExecutor
) -> None:
    other = new_namespace_name("other")
    shop.create_namespace(other)
    try:
        shop.deployment("orders", 2, namespace=other)
        elsewhere = Workload(executor="kubernetes", name="orders", namespace=other)
        outcome = executor.scale(elsewhere, 5)
        assert not outcome.ok
        assert outcome.detail == refused(
            f"read the replicas of deployment {other}/orders", "get", "deployments/scale", "apps", other
        )
        restart = executor.restart(elsewhere)
        assert restart.detail == refused(f"restart deployment {other}/orders", "patch", "deployments", "apps", other)
        assert int(shop.apps.read_namespaced_deployment("orders", other).spec.replicas) == 2
        assert shop.apps.read_namespaced_deployment("orders", other).spec.template.metadata.annotations is None
    finally:
        shop.delete_namespace(other)


def test_a_workload_the_role_does_not_name_is_refused_and_nothing_changes(
    shop: Cluster, executor: KubernetesExecutor
) -> None:
    billing = workload(shop, name="billing")
    outcome = executor.scale(billing, 3)
    ns = shop.namespace
    assert outcome.detail == refused(
        f"read the replicas of deployment {ns}/billing", "get", "deployments/scale", "apps", ns
    )
    restart = executor.restart(billing)
    assert restart.detail == refused(f"restart deployment {ns}/billing", "patch", "deployments", "apps", ns)
    assert replicas_held(shop, "deployment", "billing") == 1
    assert template_annotations(shop, "deployment", "billing") == {}


def test_a_verb_the_role_lacks_is_refused_and_nothing_changes(
    k8s: Cluster, bot_account: ControlPlane, tmp_path: Path
) -> None:
    """The target RBAC without the KEDA component: pausing a ScaledObject is not granted, so no scale happens."""
    k8s.deployment("orders", 2)
    k8s.scaled_object("orders-so", "orders")
    apply_target(k8s.plane, target_overlay(tmp_path / "target", k8s.namespace, keda=False))
    executor = executor_as_bot(k8s, now=NOW)
    outcome = executor.scale(workload(k8s, keda_scaled_object="orders-so"), 5)
    ns = k8s.namespace
    assert outcome.detail == refused(f"read ScaledObject {ns}/orders-so", "get", "scaledobjects", "keda.sh", ns)
    assert replicas_held(k8s, "deployment", "orders") == 2
    assert k8s.scaled_object_annotations("orders-so") == {}


# --- the client and its configuration ---------------------------------------------------------------------


def test_a_workload_of_another_executor_or_a_non_kubernetes_name_is_refused(executor: KubernetesExecutor) -> None:
    with pytest.raises(ExecutorError, match="is for the local executor, not kubernetes"):
        executor.scale(Workload(executor="local", name="orders"), 2)
    with pytest.raises(ExecutorError, match="'Orders_1' is not a Kubernetes name"):
        executor.restart(Workload(executor="kubernetes", name="Orders_1", namespace="shop"))


def test_replicas_raises_executor_error_on_failure(shop: Cluster, executor: KubernetesExecutor) -> None:
    with pytest.raises(ExecutorError, match=r"read the replicas of deployment .*/nope: forbidden by RBAC"):
        executor.replicas(workload(shop, name="nope"))


def test_build_executor_makes_no_connection_until_used() -> None:
    config = ExecutorsConfig(kubernetes=KubernetesConfig(kubeconfig="/nonexistent/kubeconfig"))
    built = build_executor("kubernetes", config)
    assert isinstance(built, KubernetesExecutor)
    with pytest.raises(ExecutorError, match="cannot build the Kubernetes client"):
        built.replicas(Workload(executor="kubernetes", name="orders", namespace="shop"))


def test_token_file_and_kubeconfig_are_read_when_the_client_is_built(shop: Cluster, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text(shop.service_account_token("lagbot", "lagbot") + "\n")
    config = KubernetesConfig(api_url=shop.url, ca_file=shop.plane.ca_file, token_file=token)
    assert KubernetesExecutor(config).replicas(workload(shop)) == 2
    from_kubeconfig = KubernetesExecutor(KubernetesConfig(kubeconfig=shop.plane.admin_kubeconfig))
    assert from_kubeconfig.replicas(workload(shop, name="billing")) == 1


def test_a_server_whose_certificate_is_not_trusted_is_refused(shop: Cluster) -> None:
    executor = KubernetesExecutor(KubernetesConfig(api_url=shop.url, token="x", timeout=5))  # no ca_file
    outcome = executor.restart(workload(shop))
    assert not outcome.ok
    assert outcome.detail.startswith(f"could not restart deployment {shop.namespace}/orders: ")
    assert "CERTIFICATE_VERIFY_FAILED" in outcome.detail
    assert template_annotations(shop, "deployment", "orders") == {}


def test_an_unreachable_api_server_is_an_outcome() -> None:
    executor = KubernetesExecutor(KubernetesConfig(api_url="https://127.0.0.1:9", timeout=2))
    outcome = executor.restart(Workload(executor="kubernetes", name="orders", namespace="shop"))
    assert not outcome.ok
    assert outcome.detail.startswith("could not restart deployment shop/orders: ")
    assert "Connection refused" in outcome.detail
