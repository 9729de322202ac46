"""The test suite's Kubernetes control plane itself (tests/support/k8s_cluster.py, built by `make k8s-fetch`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.k8s_cluster import ROOT, ControlPlane
from tests.support.k8s_fixtures import Cluster
from tests.support.listening import listening_sockets

pytestmark = pytest.mark.integration


def test_every_process_listens_on_127_0_0_1_only(k8s_control_plane: ControlPlane) -> None:
    plane = k8s_control_plane
    sockets = {name: listening_sockets(process.pid) for name, process in plane.processes.items()}
    assert set(sockets) == {"etcd", "kube-apiserver", "kube-controller-manager"}
    for name, found in sockets.items():
        assert found, f"{name} listens nowhere"
        assert {address for address, _ in found} == {"127.0.0.1"}, f"{name}: {sorted(found)}"
    assert (("127.0.0.1", plane.port)) in sockets["kube-apiserver"]
    assert {("127.0.0.1", plane.etcd_port), ("127.0.0.1", plane.etcd_peer_port)} <= sockets["etcd"]


def test_tls_rbac_and_service_account_tokens(k8s: Cluster) -> None:
    """The API server answers only over TLS with its CA, refuses an unknown token, and knows a TokenRequest
    token as its ServiceAccount, which RBAC then limits (no Role: nothing allowed)."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    k8s.core.create_namespaced_service_account(k8s.namespace, {"metadata": {"name": "nobody"}})
    token = k8s.service_account_token(k8s.namespace, "nobody")
    with k8s.plane.api_client(token) as api:
        review = client.AuthenticationV1Api(api).create_self_subject_review(
            {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        )
        assert review.status.user_info.username == f"system:serviceaccount:{k8s.namespace}:nobody"
        with pytest.raises(ApiException) as refused:
            client.CoreV1Api(api).list_namespaced_pod(k8s.namespace)
        assert refused.value.status == 403
    with k8s.plane.api_client("not-a-token") as api, pytest.raises(ApiException) as unknown:
        client.CoreV1Api(api).list_namespaced_pod(k8s.namespace)
    assert unknown.value.status == 401


def test_the_scaled_object_crd_is_served(k8s: Cluster) -> None:
    k8s.scaled_object("orders-so", "orders", annotations={"a": "b"})
    assert k8s.scaled_object_annotations("orders-so") == {"a": "b"}


def test_without_go_one_line_says_what_to_install(tmp_path: Path) -> None:
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin", "HOME": str(tmp_path), "LAGBOT_K8S_DIR": str(tmp_path / "k8s")}
    result = subprocess.run(
        ["bash", str(ROOT / "tools" / "k8s" / "fetch.sh")],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "make k8s-fetch: Go is missing; install Go 1.26 or newer (https://go.dev/dl/) and put it on PATH"
    ]
    assert not (tmp_path / "k8s").exists()


def test_a_second_fetch_with_the_same_pin_builds_nothing(k8s_control_plane: ControlPlane) -> None:
    """The binaries the session runs are those of the committed pin: fetching again is a no-op."""
    result = subprocess.run(
        ["bash", str(ROOT / "tools" / "k8s" / "fetch.sh")], capture_output=True, text=True, check=False, timeout=60
    )
    assert result.returncode == 0, result.stderr
    [line] = result.stdout.splitlines()
    assert line.startswith("k8s-fetch: ") and line.split(" (pin ")[0].endswith("/bin is up to date")
