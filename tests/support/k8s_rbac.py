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
from tests.support.waiting import wait_for

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
    """`kubectl apply -k` the overlay, then wait until the API server's authorizer grants lagbot's ServiceAccount every
    rule of the Roles bound to it there: the authorizer reads Roles and RoleBindings from its own cache, which a
    loaded machine fills a moment after kubectl's answer (a test then saw 403 for a verb the Role grants)."""
    applied = kubectl_ok(plane, "apply", "--validate=strict", "-k", str(overlay))
    wait_granted(plane, yaml.safe_load((overlay / "kustomization.yaml").read_text())["namespace"])
    return applied


def bot_rules(plane: ControlPlane, namespace: str) -> list[tuple[str, str, str, str]]:
    """(verb, resource, API group, name or '') of every rule of the Roles bound to lagbot's ServiceAccount in
    `namespace`, as the API server holds them."""
    bindings = json.loads(kubectl_ok(plane, "get", "rolebindings", "-n", namespace, "-o", "json"))["items"]
    bound = {
        b["roleRef"]["name"]
        for b in bindings
        if b["roleRef"]["kind"] == "Role"
        and any((s.get("kind"), s.get("name"), s.get("namespace")) == ("ServiceAccount", BOT_ACCOUNT, BOT_NAMESPACE)
                for s in b.get("subjects") or ())
    }  # fmt: skip
    roles = json.loads(kubectl_ok(plane, "get", "roles", "-n", namespace, "-o", "json"))["items"]
    return [
        (verb, resource, group, name)
        for role in roles
        if role["metadata"]["name"] in bound
        for rule in role.get("rules") or ()
        for verb in rule.get("verbs") or ()
        for resource in rule.get("resources") or ()
        for group in rule.get("apiGroups") or ("",)
        for name in rule.get("resourceNames") or ("",)
    ]


def wait_granted(plane: ControlPlane, namespace: str, timeout: float = 30) -> None:
    """Wait until a SubjectAccessReview allows lagbot's ServiceAccount every rule its Roles in `namespace` grant."""
    from kubernetes import client

    authorization = client.AuthorizationV1Api(plane.api_client())
    user = f"system:serviceaccount:{BOT_NAMESPACE}:{BOT_ACCOUNT}"

    def allowed(verb: str, resource: str, group: str, name: str) -> bool:
        attributes = {"namespace": namespace, "verb": verb, "resource": resource, "group": group, "name": name}
        review = {"spec": {"user": user, "groups": ["system:serviceaccounts"], "resourceAttributes": attributes}}
        return bool(authorization.create_subject_access_review(review).status.allowed)

    rules = bot_rules(plane, namespace)
    wait_for("the authorizer to grant what the Roles say", lambda: all(allowed(*rule) for rule in rules), timeout)


def executor_as_bot(cluster: Cluster, *, now: float, timeout: float = 10) -> KubernetesExecutor:
    """The executor as lagbot runs in its pod: the ServiceAccount's token (TokenRequest), the cluster's CA."""
    token = cluster.service_account_token(BOT_NAMESPACE, BOT_ACCOUNT)
    config = KubernetesConfig(api_url=cluster.url, ca_file=cluster.plane.ca_file, token=token, timeout=timeout)
    return KubernetesExecutor(config, clock=lambda: now)
