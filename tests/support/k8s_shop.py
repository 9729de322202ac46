"""The namespace `shop` on the real control plane, as the remediation coordinator's tests want it.

Deployment orders (2 replicas) and ScaledObject orders-so (annotation owner=shop), made afresh for each test;
lagbot's Role there (deploy/kubernetes/target with the KEDA component, applied with kubectl) and a TokenRequest
token of the ServiceAccount lagbot/lagbot to act with. The namespace outlives the test (creating it again would
wait for the namespace controller to empty it); its objects do not.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from types import TracebackType
from typing import Self

from kubernetes.client.exceptions import ApiException

from lagbot.remediations.executors.kubernetes import RESTARTED_AT
from tests.support.k8s_cluster import ControlPlane
from tests.support.k8s_fixtures import Cluster
from tests.support.k8s_rbac import BOT_ACCOUNT, BOT_NAMESPACE, apply_bot_account, apply_target, target_overlay

NAMESPACE = "shop"
_ready: set[str] = set()
"""The control planes (by URL) where the namespace and its Role have been made."""


class Shop:
    def __init__(self, plane: ControlPlane) -> None:
        self.plane = plane
        self.cluster = Cluster(plane, NAMESPACE)
        self.token = ""

    def __enter__(self) -> Self:
        if self.plane.url not in _ready:
            apply_bot_account(self.plane)
            self.cluster.create_namespace(NAMESPACE)
            self.cluster.wait_default_service_account(NAMESPACE)
            with tempfile.TemporaryDirectory() as folder:
                apply_target(self.plane, target_overlay(Path(folder), NAMESPACE))
            _ready.add(self.plane.url)
        self._remove()
        self.cluster.deployment("orders", 2)
        self.cluster.scaled_object("orders-so", "orders", annotations={"owner": "shop"})
        self.token = self.cluster.service_account_token(BOT_NAMESPACE, BOT_ACCOUNT)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self._remove()
        self.cluster.close()

    def _remove(self) -> None:
        for delete in (
            lambda: self.cluster.apps.delete_namespaced_deployment("orders", NAMESPACE),
            lambda: self.cluster.custom.delete_namespaced_custom_object(
                "keda.sh", "v1alpha1", NAMESPACE, "scaledobjects", "orders-so"
            ),
        ):
            try:
                delete()
            except ApiException as exc:
                if exc.status != 404:
                    raise

    # --- what the tests read back -----------------------------------------------------------------------

    def replicas(self) -> int:
        return int(self.cluster.apps.read_namespaced_deployment("orders", NAMESPACE).spec.replicas)

    def annotations(self) -> dict[str, str]:
        """The ScaledObject's annotations (KEDA's paused-replicas among them)."""
        return self.cluster.scaled_object_annotations("orders-so")

    def restarted_at(self) -> str | None:
        """The restartedAt annotation of the pod template: set by a rolling restart."""
        template = self.cluster.apps.read_namespaced_deployment("orders", NAMESPACE).spec.template
        return (template.metadata.annotations or {}).get(RESTARTED_AT)
