"""The Kubernetes executor, with the official client, against a local HTTP fake of the API server.

Each test asserts the exact requests the fake received (method, path, query, patch content type,
JSON body, bearer token) and the state the fake holds afterwards. No cluster can run here.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lagbot.core.model import Member
from lagbot.remediations.executors.base import ExecutorError, Workload
from lagbot.remediations.executors.config import ExecutorsConfig, KubernetesConfig, build_executor
from lagbot.remediations.executors.kubernetes import KEDA_PAUSED, RESTARTED_AT, KubernetesExecutor
from tests.support.k8s_fake import FakeKubernetes, Request

pytestmark = pytest.mark.integration

NOW = 1_763_976_600.0  # 2025-11-24T09:30:00Z
APPS = "/apis/apps/v1/namespaces/shop"
KEDA = "/apis/keda.sh/v1alpha1/namespaces/shop/scaledobjects/orders-so"
STRATEGIC = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"


@pytest.fixture
def k8s() -> Iterator[FakeKubernetes]:
    with FakeKubernetes().start() as fake:
        fake.add_workload("deployment", "shop", "orders", replicas=2)
        fake.add_workload("statefulset", "shop", "ledger", replicas=3)
        fake.add_scaled_object("shop", "orders-so")
        fake.add_pod("shop", "orders-7d9f8-x2lqp", ip="10.1.2.3")
        fake.add_pod("shop", "orders-7d9f8-k8mzn", ip="10.1.2.4")
        fake.add_pod("shop", "payments-5c6d-aaaaa", ip="10.1.2.9")
        yield fake


@pytest.fixture
def executor(k8s: FakeKubernetes) -> KubernetesExecutor:
    config = KubernetesConfig(api_url=k8s.url, token="s3cret", timeout=5)
    return KubernetesExecutor(config, clock=lambda: NOW)


def orders(**changes: object) -> Workload:
    return Workload.model_validate({"executor": "kubernetes", "name": "orders", "namespace": "shop", **changes})


def seen(requests: list[Request]) -> list[tuple[str, str, object]]:
    """(method, path, body) of each request, with the query appended to the path."""
    out = []
    for r in requests:
        query = "&".join(f"{k}={v}" for k, values in r.query.items() for v in values)
        out.append((r.method, r.path + (f"?{query}" if query else ""), r.body))
    return out


# --- replicas and scale ---------------------------------------------------------------------------


def test_replicas_reads_the_scale_subresource_with_the_token(k8s: FakeKubernetes, executor: KubernetesExecutor) -> None:
    assert executor.replicas(orders()) == 2
    assert executor.replicas(orders(name="ledger", kind="statefulset")) == 3
    assert seen(k8s.requests) == [
        ("GET", f"{APPS}/deployments/orders/scale", None),
        ("GET", f"{APPS}/statefulsets/ledger/scale", None),
    ]
    assert {r.headers["authorization"] for r in k8s.requests} == {"Bearer s3cret"}


def test_scale_patches_the_scale_subresource(k8s: FakeKubernetes, executor: KubernetesExecutor) -> None:
    outcome = executor.scale(orders(), 4)
    assert outcome.ok, outcome.detail
    assert outcome.data == {"before": 2, "after": 4}
    assert outcome.detail == "scaled deployment shop/orders from 2 to 4 replicas"
    assert seen(k8s.requests) == [
        ("GET", f"{APPS}/deployments/orders/scale", None),
        ("PATCH", f"{APPS}/deployments/orders/scale", {"spec": {"replicas": 4}}),
    ]
    assert k8s.requests[1].headers["content-type"] == STRATEGIC
    assert k8s.workloads[("deployment", "shop", "orders")].replicas == 4


def test_scale_a_statefulset(k8s: FakeKubernetes, executor: KubernetesExecutor) -> None:
    outcome = executor.scale(orders(name="ledger", kind="statefulset"), 1)
    assert outcome.ok and outcome.data == {"before": 3, "after": 1}
    assert seen(k8s.requests)[-1] == ("PATCH", f"{APPS}/statefulsets/ledger/scale", {"spec": {"replicas": 1}})
    assert k8s.workloads[("statefulset", "shop", "ledger")].replicas == 1


def test_scale_on_keda_pauses_the_scaled_object_first_and_restore_unpauses(
    k8s: FakeKubernetes, executor: KubernetesExecutor
) -> None:
    workload = orders(keda_scaled_object="orders-so")
    outcome = executor.scale(workload, 6)
    assert outcome.ok, outcome.detail
    assert outcome.data == {"before": 2, "after": 6, "keda_paused": True, "keda_previous": None}
    assert seen(k8s.requests) == [
        ("GET", KEDA, None),
        ("GET", f"{APPS}/deployments/orders/scale", None),
        ("PATCH", KEDA, {"metadata": {"annotations": {KEDA_PAUSED: "6"}}}),
        ("PATCH", f"{APPS}/deployments/orders/scale", {"spec": {"replicas": 6}}),
    ]
    assert k8s.requests[2].headers["content-type"] == MERGE
    assert k8s.scaled_objects[("shop", "orders-so")]["metadata"]["annotations"] == {KEDA_PAUSED: "6"}

    restored = executor.restore_autoscaling(workload, previous=outcome.data["keda_previous"])
    assert restored.ok, restored.detail
    assert seen(k8s.requests[4:]) == [("PATCH", KEDA, {"metadata": {"annotations": {KEDA_PAUSED: None}}})]
    assert k8s.requests[4].headers["content-type"] == MERGE
    assert k8s.scaled_objects[("shop", "orders-so")]["metadata"]["annotations"] == {}


def test_restore_puts_back_a_pause_a_human_had_set(k8s: FakeKubernetes, executor: KubernetesExecutor) -> None:
    k8s.add_scaled_object("shop", "orders-so", annotations={KEDA_PAUSED: "1", "team": "shop"})
    workload = orders(keda_scaled_object="orders-so")
    outcome = executor.scale(workload, 5)
    assert outcome.ok and outcome.data["keda_previous"] == "1"
    assert executor.restore_autoscaling(workload, previous=outcome.data["keda_previous"]).ok
    assert k8s.scaled_objects[("shop", "orders-so")]["metadata"]["annotations"] == {KEDA_PAUSED: "1", "team": "shop"}


def test_restore_without_keda_sends_nothing(k8s: FakeKubernetes, executor: KubernetesExecutor) -> None:
    assert executor.restore_autoscaling(orders()).ok
    assert k8s.requests == []


def test_keda_scale_whose_patch_fails_puts_the_annotation_back(
    k8s: FakeKubernetes, executor: KubernetesExecutor
) -> None:
    k8s.fail("PATCH", f"{APPS}/deployments/orders/scale", 409, "the object has been modified")
    outcome = executor.scale(orders(keda_scaled_object="orders-so"), 6)
    assert not outcome.ok
    assert outcome.detail.startswith(
        "could not scale deployment shop/orders to 6: 409 Conflict: the object has been modified; "
        "ScaledObject orders-so unpaused"
    )
    assert seen(k8s.requests)[-1] == ("PATCH", KEDA, {"metadata": {"annotations": {KEDA_PAUSED: None}}})
    assert k8s.scaled_objects[("shop", "orders-so")]["metadata"]["annotations"] == {}
    assert k8s.workloads[("deployment", "shop", "orders")].replicas == 2


def test_keda_scale_with_a_missing_scaled_object_changes_nothing(
    k8s: FakeKubernetes, executor: KubernetesExecutor
) -> None:
    outcome = executor.scale(orders(keda_scaled_object="gone-so"), 6)
    assert not outcome.ok
    assert outcome.detail == (
        'could not read ScaledObject shop/gone-so: 404 Not Found: scaledobjects.keda.sh "gone-so" not found'
    )
    assert [r.method for r in k8s.requests] == ["GET"]


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (404, 'could not read the replicas of deployment shop/missing: 404 Not Found: deployments.apps "missing"'),
        (500, "could not read the replicas of deployment shop/orders: 500 Internal Server Error: etcd is down"),
    ],
)
def test_a_failed_read_is_an_outcome_naming_workload_and_action(
    k8s: FakeKubernetes, executor: KubernetesExecutor, status: int, expected: str
) -> None:
    name = "missing" if status == 404 else "orders"
    k8s.fail("GET", f"{APPS}/deployments/orders/scale", 500, "etcd is down")
    outcome = executor.scale(orders(name=name), 3)
    assert not outcome.ok
    assert outcome.detail.startswith(expected)
    assert [r.method for r in k8s.requests] == ["GET"]
    assert k8s.workloads[("deployment", "shop", "orders")].replicas == 2


def test_replicas_raises_executor_error_on_failure(k8s: FakeKubernetes, executor: KubernetesExecutor) -> None:
    with pytest.raises(ExecutorError, match=r"read the replicas of deployment shop/nope: 404 Not Found"):
        executor.replicas(orders(name="nope"))


def test_a_slow_api_server_is_cut_off_by_the_timeout(k8s: FakeKubernetes) -> None:
    k8s.delay("GET", f"{APPS}/deployments/orders/scale", 3.0)
    executor = KubernetesExecutor(KubernetesConfig(api_url=k8s.url, timeout=0.5))
    outcome = executor.scale(orders(), 3)
    assert not outcome.ok
    assert "could not read the replicas of deployment shop/orders" in outcome.detail
    assert "timed out" in outcome.detail
    assert not any(r.method == "PATCH" for r in k8s.requests)


def test_an_unreachable_api_server_is_an_outcome() -> None:
    executor = KubernetesExecutor(KubernetesConfig(api_url="http://127.0.0.1:9", timeout=2))
    outcome = executor.restart(orders())
    assert not outcome.ok
    assert outcome.detail.startswith("could not restart deployment shop/orders: ")
    assert "Connection refused" in outcome.detail


# --- restart -------------------------------------------------------------------------------------


def test_restart_patches_restarted_at_like_kubectl(k8s: FakeKubernetes, executor: KubernetesExecutor) -> None:
    outcome = executor.restart(orders())
    assert outcome.ok and outcome.data == {"restarted_at": "2025-11-24T09:30:00Z"}
    body = {"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: "2025-11-24T09:30:00Z"}}}}}
    assert seen(k8s.requests) == [("PATCH", f"{APPS}/deployments/orders", body)]
    assert k8s.requests[0].headers["content-type"] == STRATEGIC
    assert k8s.workloads[("deployment", "shop", "orders")].template_annotations == {
        RESTARTED_AT: "2025-11-24T09:30:00Z"
    }


def test_restart_a_statefulset_and_a_conflict(k8s: FakeKubernetes, executor: KubernetesExecutor) -> None:
    assert executor.restart(orders(name="ledger", kind="statefulset")).ok
    assert seen(k8s.requests)[0][:2] == ("PATCH", f"{APPS}/statefulsets/ledger")
    k8s.fail("PATCH", f"{APPS}/statefulsets/ledger", 409, "Operation cannot be fulfilled")
    outcome = executor.restart(orders(name="ledger", kind="statefulset"))
    assert not outcome.ok
    assert outcome.detail == ("could not restart statefulset shop/ledger: 409 Conflict: Operation cannot be fulfilled")


# --- restart_member -----------------------------------------------------------------------------


def test_restart_member_finds_the_pod_by_the_ip_kafka_reports(
    k8s: FakeKubernetes, executor: KubernetesExecutor
) -> None:
    member = Member(member_id="consumer-1-abc", client_id="consumer-1", host="/10.1.2.3")
    outcome = executor.restart_member(orders(), member)
    assert outcome.ok, outcome.detail
    assert outcome.data == {"pod": "orders-7d9f8-x2lqp"}
    assert seen(k8s.requests) == [
        ("GET", "/api/v1/namespaces/shop/pods?fieldSelector=status.podIP=10.1.2.3,status.phase=Running", None),
        ("DELETE", "/api/v1/namespaces/shop/pods/orders-7d9f8-x2lqp", None),
    ]
    assert ("shop", "orders-7d9f8-x2lqp") not in k8s.pods
    assert ("shop", "orders-7d9f8-k8mzn") in k8s.pods


def test_restart_member_by_client_id_template(k8s: FakeKubernetes, executor: KubernetesExecutor) -> None:
    member = Member(member_id="m-1", client_id="orders-7d9f8-k8mzn", host="/10.9.9.9")
    outcome = executor.restart_member(orders(member_pod="{client_id}"), member)
    assert outcome.ok, outcome.detail
    assert seen(k8s.requests) == [("DELETE", "/api/v1/namespaces/shop/pods/orders-7d9f8-k8mzn", None)]


@pytest.mark.parametrize(
    ("client_id", "expected"),
    [
        ("payments-5c6d-aaaaa", "pod payments-5c6d-aaaaa does not belong to orders"),
        ("Orders_7d9f8", "'Orders_7d9f8' is not a pod name"),
        ("orders-x;rm -rf", "is not a pod name"),
    ],
)
def test_restart_member_refuses_a_pod_that_is_not_the_workloads(
    k8s: FakeKubernetes, executor: KubernetesExecutor, client_id: str, expected: str
) -> None:
    member = Member(member_id="m-1", client_id=client_id, host="/10.1.2.9")
    outcome = executor.restart_member(orders(member_pod="{client_id}"), member)
    assert not outcome.ok
    assert expected in outcome.detail
    assert k8s.requests == []
    assert len(k8s.pods) == 3


def test_restart_member_with_no_pod_at_that_ip(k8s: FakeKubernetes, executor: KubernetesExecutor) -> None:
    outcome = executor.restart_member(orders(), Member(member_id="m", client_id="c", host="/10.7.7.7"))
    assert not outcome.ok
    assert outcome.detail == (
        "expected one running pod with IP 10.7.7.7 in namespace shop, found none; nothing deleted"
    )
    assert [r.method for r in k8s.requests] == ["GET"]


def test_restart_member_whose_pod_is_already_gone(k8s: FakeKubernetes, executor: KubernetesExecutor) -> None:
    member = Member(member_id="m", client_id="orders-7d9f8-gone1", host="/10.1.2.3")
    outcome = executor.restart_member(orders(member_pod="{client_id}"), member)
    assert not outcome.ok
    assert outcome.detail == (
        "could not delete pod shop/orders-7d9f8-gone1 of deployment shop/orders: "
        '404 Not Found: pods "orders-7d9f8-gone1" not found'
    )


def test_bad_member_pod_template(executor: KubernetesExecutor, k8s: FakeKubernetes) -> None:
    outcome = executor.restart_member(orders(member_pod="{pod}"), Member("m", "c", "/10.1.2.3"))
    assert not outcome.ok and "member_pod '{pod}' is not a valid template" in outcome.detail
    assert k8s.requests == []


# --- misuse and config ----------------------------------------------------------------------------


def test_a_workload_of_another_executor_or_a_non_kubernetes_name_is_refused(
    k8s: FakeKubernetes, executor: KubernetesExecutor
) -> None:
    with pytest.raises(ExecutorError, match="is for the local executor, not kubernetes"):
        executor.scale(Workload(executor="local", name="orders"), 2)
    with pytest.raises(ExecutorError, match="'Orders_1' is not a Kubernetes name"):
        executor.restart(orders(name="Orders_1"))
    assert k8s.requests == []


def test_build_executor_makes_no_connection_until_used() -> None:
    config = ExecutorsConfig(kubernetes=KubernetesConfig(kubeconfig="/nonexistent/kubeconfig"))
    executor = build_executor("kubernetes", config)
    assert isinstance(executor, KubernetesExecutor)
    with pytest.raises(ExecutorError, match="cannot build the Kubernetes client"):
        executor.replicas(orders())


def test_token_file_is_read_when_the_client_is_built(k8s: FakeKubernetes, tmp_path: object) -> None:
    from pathlib import Path

    token = Path(str(tmp_path)) / "token"
    token.write_text("from-file\n")
    executor = KubernetesExecutor(KubernetesConfig(api_url=k8s.url, token_file=token))
    assert executor.replicas(orders()) == 2
    assert k8s.requests[0].headers["authorization"] == "Bearer from-file"


def test_the_scale_remediation_pauses_keda_through_this_executor_and_restores_it_later(
    k8s: FakeKubernetes, executor: KubernetesExecutor
) -> None:
    """The remediation (not only the executor) on a KEDA workload: exact requests, then the restore."""
    from lagbot.remediations.base import ExecutionContext
    from lagbot.remediations.scale.remediation import Scale
    from tests.support.remediation_rig import scale_plan

    k8s.add_scaled_object("shop", "orders-so", annotations={"team": "shop"})
    plan = scale_plan(orders(keda_scaled_object="orders-so"), current=2)
    context = ExecutionContext(executor=executor)
    outcome = Scale().execute(plan, context)
    assert outcome.ok, outcome.detail
    assert outcome.data["keda_previous"] is None and outcome.data["after"] == 4
    assert k8s.scaled_objects[("shop", "orders-so")]["metadata"]["annotations"] == {"team": "shop", KEDA_PAUSED: "4"}
    assert k8s.workloads[("deployment", "shop", "orders")].replicas == 4

    restored = Scale().restore(plan, context, previous=outcome.data["keda_previous"])
    assert restored.ok, restored.detail
    assert k8s.scaled_objects[("shop", "orders-so")]["metadata"]["annotations"] == {"team": "shop"}
    assert seen(k8s.requests)[-2:] == [
        ("GET", KEDA, None),
        ("PATCH", KEDA, {"metadata": {"annotations": {KEDA_PAUSED: None}}}),
    ]
