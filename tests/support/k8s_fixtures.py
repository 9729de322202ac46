"""Fixtures on the real control plane (tests/support/k8s_cluster.py), loaded by tests/conftest.py.

- `k8s_control_plane` (session): etcd + kube-apiserver + kube-controller-manager, started once, stopped after.
- `k8s`: a `Cluster` with a fresh namespace for the test, deleted afterwards; its helpers create what a test acts
  on (Deployments, StatefulSets, ScaledObjects, pods with the status a kubelet would write) as the admin, and mint
  service-account tokens through TokenRequest.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from tests.support.k8s_build import build_problem, build_running, needs_control_plane, wait_for_build
from tests.support.k8s_cluster import ControlPlane
from tests.support.waiting import wait_for


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    """Before a test that needs the control plane, wait while its build runs (40 min at most per worker). Outside the
    test's own timeout (pytest-timeout's wrapper runs inside this one): the wait is the build's, not the test's."""
    if needs_control_plane(item) and build_running():
        began = time.monotonic()
        wait_for_build()
        item.user_properties.append(("k8s_build_wait_s", round(time.monotonic() - began)))  # in --junitxml
    return (yield)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test that needs the control plane fails at once, with the reason, when its binaries are not there: the
    build failed (its log's last lines), still runs after the wait, or never ran (`make k8s-fetch`)."""
    if needs_control_plane(item):
        problem = build_problem()
        if problem is not None:
            pytest.fail(problem, pytrace=False)


@pytest.fixture(scope="session")
def k8s_control_plane() -> Iterator[ControlPlane]:
    with ControlPlane().start() as running:
        yield running


class Cluster:
    """The control plane seen from one test: its namespace and an admin client."""

    def __init__(self, plane: ControlPlane, namespace: str) -> None:
        from kubernetes import client

        self.plane = plane
        self.namespace = namespace
        self.api = plane.api_client()
        self.core = client.CoreV1Api(self.api)
        self.apps = client.AppsV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)
        self.rbac = client.RbacAuthorizationV1Api(self.api)

    @property
    def url(self) -> str:
        return self.plane.url

    def create_namespace(self, name: str) -> None:
        self.core.create_namespace({"metadata": {"name": name}})

    def wait_default_service_account(self, namespace: str) -> None:
        """Pods are refused until the controller has made the namespace's `default` ServiceAccount."""
        from kubernetes.client.exceptions import ApiException

        def made() -> bool:
            try:
                self.core.read_namespaced_service_account("default", namespace)
            except ApiException:
                return False
            return True

        wait_for(f"the default ServiceAccount of {namespace}", made, timeout=30, every=0.05)

    def delete_namespace(self, name: str) -> None:
        from kubernetes.client.exceptions import ApiException

        try:
            self.core.delete_namespace(name)
        except ApiException as exc:
            if exc.status != 404:
                raise

    # --- workloads ---------------------------------------------------------------------------------------

    def deployment(
        self, name: str, replicas: int, namespace: str | None = None, limits: dict[str, str] | None = None
    ) -> dict[str, Any]:
        body = _workload("Deployment", name, replicas)
        if limits:
            body["spec"]["template"]["spec"]["containers"][0]["resources"] = {"limits": limits}
        self.apps.create_namespaced_deployment(namespace or self.namespace, body)
        return body

    def statefulset(self, name: str, replicas: int, namespace: str | None = None) -> dict[str, Any]:
        body = _workload("StatefulSet", name, replicas)
        body["spec"]["serviceName"] = name
        self.apps.create_namespaced_stateful_set(namespace or self.namespace, body)
        return body

    def scaled_object(self, name: str, target: str, annotations: dict[str, str] | None = None) -> None:
        body = {
            "apiVersion": "keda.sh/v1alpha1",
            "kind": "ScaledObject",
            "metadata": {"name": name, "annotations": annotations or {}},
            "spec": {"scaleTargetRef": {"name": target}, "minReplicaCount": 1, "maxReplicaCount": 10},
        }
        self.custom.create_namespaced_custom_object("keda.sh", "v1alpha1", self.namespace, "scaledobjects", body)

    def scaled_object_annotations(self, name: str) -> dict[str, str]:
        found = self.custom.get_namespaced_custom_object("keda.sh", "v1alpha1", self.namespace, "scaledobjects", name)
        return dict(found["metadata"].get("annotations") or {})

    def pods_of(self, app: str) -> list[Any]:
        """The pods of a workload (label app=<name>) that are not being deleted, by name."""
        listed = self.core.list_namespaced_pod(self.namespace, label_selector=f"app={app}")
        return sorted((p for p in listed.items if p.metadata.deletion_timestamp is None), key=lambda p: p.metadata.name)

    def wait_pods(self, app: str, count: int, timeout: float = 60) -> list[Any]:
        """Wait until the controllers have made exactly `count` pods of the workload."""

        def made() -> list[Any] | None:
            pods = self.pods_of(app)
            return pods if len(pods) == count else None

        return wait_for(f"{count} pods of {app}", made, timeout)

    def set_pod_status(self, pod: str, ip: str, phase: str = "Running", **status: Any) -> None:
        """What a kubelet writes: the phase, the pod's IP, and any other status fields (container statuses ...)."""
        body = {"status": {"phase": phase, "podIP": ip, "podIPs": [{"ip": ip}], "hostIP": "127.0.0.1", **status}}
        self.core.patch_namespaced_pod_status(pod, self.namespace, body)

    @contextmanager
    def at_most_replicas(self, limit: int) -> Iterator[None]:
        """A ValidatingAdmissionPolicy (CEL, in the API server) refusing a scale of a Deployment in this namespace
        above `limit`: a real refusal of the API server after earlier calls succeeded. In force when this yields."""
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        name = f"at-most-{limit}-{self.namespace}"
        rule = {
            "apiGroups": ["apps"],
            "apiVersions": ["v1"],
            "operations": ["UPDATE"],
            "resources": ["deployments/scale"],
        }
        policy = {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "resourceRules": [rule],
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": self.namespace}},
                },
                "validations": [
                    {"expression": f"object.spec.replicas <= {limit}", "message": f"at most {limit} replicas here"}
                ],
            },
        }
        binding = {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {"policyName": name, "validationActions": ["Deny"]},
        }
        admission = client.AdmissionregistrationV1Api(self.api)
        admission.create_validating_admission_policy(policy)
        admission.create_validating_admission_policy_binding(binding)

        def enforced() -> bool:
            [first, *_] = self.apps.list_namespaced_deployment(self.namespace).items  # one to probe with
            try:
                probe = {"spec": {"replicas": limit + 1}}
                self.apps.patch_namespaced_deployment_scale(first.metadata.name, self.namespace, probe, dry_run="All")
            except ApiException as exc:
                return exc.status == 422
            return False

        try:
            wait_for("the admission policy in force", enforced, timeout=30)
            yield
        finally:
            admission.delete_validating_admission_policy_binding(name)
            admission.delete_validating_admission_policy(name)

    # --- identities ----------------------------------------------------------------------------------------

    def service_account_token(self, namespace: str, name: str, seconds: int = 3600) -> str:
        """A token for the ServiceAccount, from the TokenRequest API (what a projected volume holds in a pod)."""
        request = {"spec": {"expirationSeconds": seconds}}
        answer = self.core.create_namespaced_service_account_token(name, namespace, request)
        return str(answer.status.token)

    def close(self) -> None:
        self.api.close()


def _workload(kind: str, name: str, replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "consumer", "image": "example.invalid/consumer:1"}]},
            },
        },
    }


def new_namespace_name(stem: str = "t") -> str:
    return f"{stem}-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def k8s(k8s_control_plane: ControlPlane) -> Iterator[Cluster]:
    """A fresh namespace (with its `default` ServiceAccount) on the session's control plane, removed after."""
    namespace = new_namespace_name()
    cluster = Cluster(k8s_control_plane, namespace)
    cluster.create_namespace(namespace)
    cluster.wait_default_service_account(namespace)
    try:
        yield cluster
    finally:
        cluster.delete_namespace(namespace)
        cluster.close()
