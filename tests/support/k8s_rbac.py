"""The shipped RBAC on the real control plane, applied as a user does: `kubectl apply -k` of an overlay.

`bot_account` applies the base's ServiceAccount (namespace lagbot); `apply_target` writes an overlay like
deploy/kubernetes/examples/payments-target for the test's namespace and workloads and applies it with the pinned
kubectl (strict field validation); `executor_as_bot` gives the KubernetesExecutor a TokenRequest token of that
ServiceAccount, so every call it makes is authorized by the real RBAC authorizer.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import yaml

from lagbot.remediations.executors.config import KubernetesConfig
from lagbot.remediations.executors.kubernetes import KubernetesExecutor
from tests.support.k8s_cluster import ROOT, ControlPlane
from tests.support.k8s_fixtures import Cluster

DEPLOY = ROOT / "deploy" / "kubernetes"
BOT_NAMESPACE, BOT_ACCOUNT = "lagbot", "lagbot"


def kubectl_ok(plane: ControlPlane, *args: str) -> str:
    """Run kubectl as the admin; its stdout, or AssertionError with what it said."""
    result = plane.kubectl(*args)
    assert result.returncode == 0, f"kubectl {' '.join(args)} failed:\n{result.stderr}"
    return result.stdout


def apply_bot_account(plane: ControlPlane) -> None:
    """The base's Namespace and ServiceAccount, as shipped (the rest of the base needs its Secrets)."""
    base = DEPLOY / "base"
    kubectl_ok(
        plane, "apply", "--validate=strict", "-f", str(base / "namespace.yaml"), "-f", str(base / "serviceaccount.yaml")
    )


def relative(path: Path, start: Path) -> str:
    """`path` relative to `start`: kustomize refuses an absolute path to another kustomization."""
    return os.path.relpath(path, start)


def target_overlay(
    folder: Path,
    namespace: str,
    *,
    workloads: list[str] | None = None,
    scaled_objects: list[str] | None = None,
    keda: bool = True,
    evidence: bool = False,
) -> Path:
    """A user's overlay of deploy/kubernetes/target for one namespace, as examples/payments-target shows it:
    the namespace, the optional components, and (given names) the patch that narrows the grants to them."""
    folder.mkdir(parents=True, exist_ok=True)
    components = [
        relative(DEPLOY / "components" / c, folder) for c, on in (("keda", keda), ("evidence", evidence)) if on
    ]
    kustomization: dict[str, Any] = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "namespace": namespace,
        "resources": [relative(DEPLOY / "target", folder)],
        "components": components,
    }
    operations = []
    if workloads is not None:
        operations += [{"op": "add", "path": f"/rules/{i}/resourceNames", "value": workloads} for i in (0, 1)]
    if scaled_objects is not None and keda:
        operations.append({"op": "add", "path": "/rules/3/resourceNames", "value": scaled_objects})
    if operations:
        target = {"kind": "Role", "name": "lagbot-remediations"}
        kustomization["patches"] = [{"target": target, "patch": json.dumps(operations)}]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    return folder


def apply_target(plane: ControlPlane, overlay: Path) -> str:
    return kubectl_ok(plane, "apply", "--validate=strict", "-k", str(overlay))


def executor_as_bot(cluster: Cluster, *, now: float, timeout: float = 10) -> KubernetesExecutor:
    """The executor as lagbot runs in its pod: the ServiceAccount's token (TokenRequest), the cluster's CA."""
    token = cluster.service_account_token(BOT_NAMESPACE, BOT_ACCOUNT)
    config = KubernetesConfig(api_url=cluster.url, ca_file=cluster.plane.ca_file, token=token, timeout=timeout)
    return KubernetesExecutor(config, clock=lambda: now)
