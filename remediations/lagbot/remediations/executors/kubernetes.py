"""The Kubernetes executor: the official client against the API server.

What it sends, exactly (tests/remediations/test_executor_kubernetes.py runs each against a real API server, as
the shipped ServiceAccount under the shipped RBAC):
- `replicas`: GET  /apis/apps/v1/namespaces/{ns}/{deployments|statefulsets}/{name}/scale
- `scale`:    GET of the scale subresource (the count before), then
              PATCH of it, body {"spec": {"replicas": N}} (strategic merge patch, as the client sends a dict).
              On a KEDA-managed workload (`Workload.keda_scaled_object`) first
              GET  /apis/keda.sh/v1alpha1/namespaces/{ns}/scaledobjects/{so} (it must exist; its current
              pause is kept in `Outcome.data["keda_previous"]`), then
              PATCH of it (merge patch), metadata.annotations["autoscaling.keda.sh/paused-replicas"] = "N",
              so the autoscaler holds N instead of undoing the change (unless it is paused at N already:
              the scale remediation pauses first, and that pause is its own). If the scale patch then fails,
              the annotation it set is put back as it was.
- `restore_autoscaling`: PATCH of the ScaledObject that sets the annotation back to `previous`
              (null removes it): KEDA takes over again. The scale remediation calls it once verification
              is over (resolved, or given up), passing `Outcome.data["keda_previous"]` from the scale.
- `restart`:  PATCH /apis/apps/v1/namespaces/{ns}/{kind}s/{name}, body
              {"spec": {"template": {"metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": RFC3339}}}}},
              as `kubectl rollout restart` does.
- `restart_member`: DELETE /api/v1/namespaces/{ns}/pods/{pod}; its controller starts a new one. The pod
              name is `Workload.member_pod` with {host} / {client_id} filled in from what Kafka reports (a
              leading "/" of the host is dropped). When that gives an IP address (Kafka reports hosts as
              IPs), the pod is found by
              GET /api/v1/namespaces/{ns}/pods?fieldSelector=status.podIP=<ip>,status.phase=Running.
              The name must be a DNS-1123 subdomain and start with "<workload>-" (pods of a Deployment
              or a StatefulSet are named so): a mapping gone wrong never deletes another workload's pod.

Every request waits at most `timeout` (connecting, then reading), and is retried once. An executor built with a
`budget` (`lagbot check` reads its owners' pods within its --timeout) keeps its requests, all together, within that
many seconds of the first one's start (its `Deadline`): each connects and reads at most what is left, none is retried
(the retry would need time the deadline does not leave), none is sent once it has passed; a server that accepts and
never answers ends them at the deadline, `cut short` (tests/cli/test_check_pods.py). The budget counts from the first
request, not from the executor's making: loading the client is work of this process, not a wait on the server.
A caller may bound one call instead (`owner_pod_evidence(deadline=)`: the bot's check cycle, lagbot.service.pod_causes):
its requests wait at most what is left of that deadline and are sent once (through a copy of the client without the
retry), and the executor's other calls, on other threads, keep their timeout and retry.

A failure says whether the server answered: `NoAnswer` (a timeout, a connection refused or reset; `CutShort` at a
deadline), `NotFound` (a 404, no pod with the member's address), else `ExecutorError` (executors.base).

Failures the API server answers (404, 409, 500 ...) or cannot be reached for become
`Outcome(ok=False)` naming the workload and what was being done; `replicas` raises `ExecutorError`. A refusal by
RBAC (403) names the account, the verb, the resource and the namespace the Role must grant it in.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from lagbot.core.model import Member
from lagbot.remediations.base import Outcome
from lagbot.remediations.executors import wording
from lagbot.remediations.executors.base import (
    CutShort,
    Deadline,
    Executor,
    ExecutorError,
    NoAnswer,
    NotFound,
    Workload,
)
from lagbot.remediations.executors.config import KubernetesConfig
from lagbot.remediations.executors.k8s_client import (
    api_problem,
    build_api_client,
    earliest,
    forbidden_user,
    request_timeout,
    single_try_client,
    timed_out,
    unanswered,
)
from lagbot.remediations.executors.pod_evidence import PodEvidence, read_pod

KEDA_PAUSED = "autoscaling.keda.sh/paused-replicas"
RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"
KEDA_GROUP, KEDA_VERSION, KEDA_PLURAL = "keda.sh", "v1alpha1", "scaledobjects"
EVIDENCE_ROLE = "lagbot-evidence"
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")

T = TypeVar("T")
_API_KIND = {"deployment": "deployment", "statefulset": "stateful_set"}
"""Workload.kind as the client's method names spell it."""


@dataclass(frozen=True)
class Access:
    """The RBAC permission one API call needs: what a Role must grant for it."""

    verb: str
    resource: str
    """Plural, with the subresource: 'deployments/scale', 'pods', 'scaledobjects'."""
    group: str
    """The API group ('' is the core group)."""
    namespace: str
    role: str = "lagbot-remediations"
    """The shipped Role that grants it (deploy/kubernetes/target, components/evidence)."""


def workload_access(workload: Workload, verb: str, subresource: str | None = None) -> Access:
    """The permission to `verb` the workload (or its subresource, such as 'scale')."""
    resource = f"{workload.kind}s" + (f"/{subresource}" if subresource else "")
    return Access(verb, resource, "apps", workload.namespace)


def rfc3339(now: float) -> str:
    """A UTC time as kubectl writes restartedAt: '2025-11-24T09:30:00Z'."""
    return datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def restart_patch(now: float) -> dict[str, Any]:
    """The patch `kubectl rollout restart` sends: a new restartedAt annotation on the pod template."""
    return {"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: rfc3339(now)}}}}}


def keda_patch(value: str | None) -> dict[str, Any]:
    """A merge patch that sets (or, with None, removes) the ScaledObject's paused-replicas annotation."""
    return {"metadata": {"annotations": {KEDA_PAUSED: value}}}


def member_pod_ref(workload: Workload, member: Member) -> str:
    """`Workload.member_pod` filled in from the member: a pod name, or an IP address to look the pod up by.

    Raises:
        ExecutorError: the template names another placeholder, or the result is empty.
    """
    values = {"host": member.host.strip().lstrip("/"), "client_id": member.client_id.strip()}
    try:
        ref = workload.member_pod.format_map(values).strip()
    except (KeyError, ValueError, IndexError) as exc:
        raise ExecutorError(wording.k8s_bad_member_pod(workload.member_pod, str(exc))) from None
    if not ref:
        raise ExecutorError(wording.k8s_no_pod_name(member.client_id, member.host))
    return ref


def as_ip(ref: str) -> str | None:
    """The address when `ref` is an IP address (IPv6 brackets removed), else None."""
    try:
        return str(ipaddress.ip_address(ref.strip("[]")))
    except ValueError:
        return None


def check_pod_name(workload: Workload, pod: str) -> None:
    """A pod we may delete for this workload: a DNS-1123 subdomain that starts with '<workload>-'.

    Raises:
        ExecutorError: naming the pod and the rule it breaks.
    """
    if len(pod) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(pod):
        raise ExecutorError(wording.k8s_bad_pod_name(pod))
    if not pod.startswith(f"{workload.name}-"):
        raise ExecutorError(wording.k8s_pod_not_of_workload(pod, workload.name))


def check_workload(workload: Workload) -> None:
    """Kubernetes names are DNS-1123 labels; the Workload model allows more (other executors use it).

    Raises:
        ExecutorError: the workload is not for this executor or its name is not a Kubernetes name.
    """
    if workload.executor != "kubernetes":
        raise ExecutorError(wording.executor_wrong_workload("kubernetes", workload.executor, workload.name))
    for name in filter(None, (workload.name, workload.keda_scaled_object)):
        if len(name) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(name):
            raise ExecutorError(wording.k8s_bad_name(name))
    if not _DNS1123_LABEL.fullmatch(workload.namespace) or len(workload.namespace) > 63:
        raise ExecutorError(wording.k8s_bad_name(workload.namespace))


def describe(workload: Workload) -> str:
    """'deployment default/orders', for messages."""
    return f"{workload.kind} {workload.namespace}/{workload.name}"


class KubernetesExecutor(Executor):
    """Acts on Deployments and StatefulSets; the API client is built on first use.

    Args:
        config: how to reach the API server.
        api_client: a ready `kubernetes.client.ApiClient` (else built from `config` when first needed).
        clock: the time used for restartedAt (default time.time).
        budget: seconds its requests may take all together, from the first one's start (None: each is bounded alone,
            by `config.timeout`).
    """

    name = "kubernetes"

    def __init__(
        self,
        config: KubernetesConfig,
        *,
        api_client: Any = None,
        clock: Callable[[], float] | None = None,
        budget: float | None = None,
    ) -> None:
        import time

        self.config = config
        self.budget = budget
        self.deadline: Deadline | None = None
        """Set at the first request when there is a budget."""
        self._api_client = api_client
        self._single_try: Any = None
        """The client of the requests bounded by a caller's deadline (`single_try_client`), built on first use."""
        self._clock = clock or time.time

    # --- clients --------------------------------------------------------------------------------

    @property
    def api_client(self) -> Any:
        if self._api_client is None:
            self._api_client = build_api_client(self.config, retries=1 if self.budget is None else 0)
        return self._api_client

    def client_for(self, deadline: Deadline | None) -> Any:
        """The API client a request goes through: the executor's own (with its retry), or for a request bounded by a
        caller's deadline one that sends it once (a retry would need time the deadline does not leave)."""
        return self.api_client if deadline is None else self.single_try

    @property
    def single_try(self) -> Any:
        """The client that sends each request once: the executor's own when it has a budget (built so), else a copy of
        it (`single_try_client`, built on first use; two threads may both build one: either is right)."""
        if self.budget is not None:
            return self.api_client
        if self._single_try is None:
            self._single_try = single_try_client(self.api_client)
        return self._single_try

    def _apps(self, deadline: Deadline | None = None) -> Any:
        from kubernetes import client

        return client.AppsV1Api(self.client_for(deadline))

    def _core(self, deadline: Deadline | None = None) -> Any:
        from kubernetes import client

        return client.CoreV1Api(self.client_for(deadline))

    def _custom(self) -> Any:
        from kubernetes import client

        return client.CustomObjectsApi(self.api_client)

    def _call(
        self,
        doing: str,
        access: Access,
        call: Callable[..., T],
        *args: Any,
        deadline: Deadline | None = None,
        **kwargs: Any,
    ) -> T:
        """One bounded API call (by the executor's timeout, its budget's deadline and the caller's `deadline`, the
        first to come); any failure becomes ExecutorError saying what was being done (and, refused by RBAC, the
        permission it needed), of the kind that says whether the server answered (NoAnswer, CutShort, NotFound)."""
        import time

        from kubernetes.client.exceptions import ApiException

        now = time.monotonic()
        if self.budget is not None and self.deadline is None:
            self.deadline = Deadline(now + self.budget, self.budget)
        bound = earliest(self.deadline, deadline)
        seconds = request_timeout(self.config.timeout, bound, now)
        if bound is not None and seconds <= 0:
            raise CutShort(self._cut_short(doing, bound))
        try:
            # A (connect, read) pair: the client silently ignores a float timeout (only int or tuple count).
            return call(*args, _request_timeout=(seconds, seconds), **kwargs)
        except ExecutorError:
            raise
        except ApiException as exc:
            if exc.status == 403:
                who = forbidden_user(exc)
                a = access
                raise ExecutorError(
                    wording.k8s_forbidden(doing, who, a.verb, a.resource, a.group, a.namespace, a.role)
                ) from exc
            kind = NotFound if exc.status == 404 else ExecutorError
            raise kind(wording.executor_failed(doing, api_problem(exc))) from exc
        except Exception as exc:
            if bound is not None and seconds < self.config.timeout and timed_out(exc):  # it waited what was left
                raise CutShort(self._cut_short(doing, bound)) from exc
            kind = NoAnswer if unanswered(exc) else ExecutorError
            raise kind(wording.executor_failed(doing, api_problem(exc))) from exc

    @staticmethod
    def _cut_short(doing: str, deadline: Deadline) -> str:
        return wording.executor_failed(doing, wording.k8s_cut_short(deadline.seconds))

    # --- the contract ---------------------------------------------------------------------------

    def replicas(self, workload: Workload) -> int:
        check_workload(workload)
        doing = wording.k8s_doing("read the replicas of", describe(workload))
        read = getattr(self._apps(), f"read_namespaced_{_API_KIND[workload.kind]}_scale")
        scale = self._call(doing, workload_access(workload, "get", "scale"), read, workload.name, workload.namespace)
        return int(scale.spec.replicas or 0)

    def scale(self, workload: Workload, replicas: int) -> Outcome:
        check_workload(workload)
        if replicas < 0:
            raise ExecutorError(wording.executor_bad_replicas(replicas))
        try:
            previous = self._keda_previous(workload)
            before = self.replicas(workload)
            # Already paused at this count (the scale remediation pauses first): the caller owns that pause.
            pause = bool(workload.keda_scaled_object) and previous != str(replicas)
            if pause:
                self._set_keda(workload, str(replicas))
            self._patch_scale(workload, replicas, undo_keda=pause, keda_previous=previous)
        except ExecutorError as exc:
            return Outcome(ok=False, detail=str(exc))
        data: dict[str, Any] = {"before": before, "after": replicas}
        if workload.keda_scaled_object:
            data.update(keda_paused=True, keda_previous=previous)
        return Outcome(ok=True, detail=wording.executor_scaled(describe(workload), before, replicas), data=data)

    def restart(self, workload: Workload) -> Outcome:
        check_workload(workload)
        doing = wording.k8s_doing("restart", describe(workload))
        patch = getattr(self._apps(), f"patch_namespaced_{_API_KIND[workload.kind]}")
        body = restart_patch(self._clock())
        try:
            self._call(doing, workload_access(workload, "patch"), patch, workload.name, workload.namespace, body)
        except ExecutorError as exc:
            return Outcome(ok=False, detail=str(exc))
        at = body["spec"]["template"]["metadata"]["annotations"][RESTARTED_AT]
        return Outcome(ok=True, detail=wording.executor_restarted(describe(workload)), data={"restarted_at": at})

    def restart_member(self, workload: Workload, member: Member) -> Outcome:
        check_workload(workload)
        try:
            pod = self._member_pod(workload, member)
            doing = wording.k8s_doing("delete pod", f"{workload.namespace}/{pod} of {describe(workload)}")
            access = Access("delete", "pods", "", workload.namespace)
            self._call(doing, access, self._core().delete_namespaced_pod, pod, workload.namespace)
        except ExecutorError as exc:
            return Outcome(ok=False, detail=str(exc))
        detail = wording.executor_member_restarted(member.client_id, f"pod {pod}", describe(workload))
        return Outcome(ok=True, detail=detail, data={"pod": pod})

    # --- the owner's pod as evidence (read only: deploy/kubernetes/components/evidence) ------------------

    def owner_pod_evidence(
        self, workload: Workload, member: Member, *, deadline: Deadline | None = None
    ) -> PodEvidence:
        """What Kubernetes knows of the member's pod (found as restart_member finds it) and its rollout. `deadline`:
        the caller's bound on these requests all together (a check cycle's reads): each waits at most what is left
        of it and is sent once; without it, each waits the executor's timeout and is retried once.

        Raises:
            ExecutorError: the pod cannot be found (NotFound) or read (naming the permission when RBAC refuses), or
                no answer came (NoAnswer; CutShort at the deadline).
        """
        check_workload(workload)
        pod = self._member_pod(workload, member, deadline)
        ns = workload.namespace
        doing = wording.k8s_doing("read pod", f"{ns}/{pod} of {describe(workload)}")
        access = Access("get", "pods", "", ns, EVIDENCE_ROLE)
        found = self._call(doing, access, self._core(deadline).read_namespaced_pod, pod, ns, deadline=deadline)
        data = self.api_client.sanitize_for_serialization(found)
        sets = self._rollout_replica_sets(workload, deadline) if workload.kind == "deployment" else 1
        return read_pod(data, sets)

    def _rollout_replica_sets(self, workload: Workload, deadline: Deadline | None) -> int:
        """ReplicaSets of the Deployment that still have pods (more than one: a rollout in progress)."""
        ns = workload.namespace
        doing = wording.k8s_doing("list the ReplicaSets of", describe(workload))
        access = Access("list", "replicasets", "apps", ns, EVIDENCE_ROLE)
        listed = self._call(doing, access, self._apps(deadline).list_namespaced_replica_set, ns, deadline=deadline)
        owned = [
            rs
            for rs in listed.items
            if any(o.kind == "Deployment" and o.name == workload.name for o in rs.metadata.owner_references or ())
        ]
        return sum(1 for rs in owned if (rs.status.replicas or 0) > 0)

    # --- KEDA -----------------------------------------------------------------------------------

    def restore_autoscaling(self, workload: Workload, *, previous: str | None = None) -> Outcome:
        """Give the workload back to KEDA: paused-replicas set back to `previous` (None removes it).

        Call it when the scale's verification is over, with `Outcome.data["keda_previous"]` of the scale.
        A workload without a ScaledObject needs nothing: ok.
        """
        check_workload(workload)
        if not workload.keda_scaled_object:
            return Outcome(ok=True, detail=wording.k8s_no_keda(describe(workload)))
        try:
            self._set_keda(workload, previous)
        except ExecutorError as exc:
            return Outcome(ok=False, detail=str(exc))
        return Outcome(ok=True, detail=wording.k8s_keda_restored(workload.keda_scaled_object, previous))

    def set_paused_replicas(self, workload: Workload, replicas: int | None) -> Outcome:
        """lagbot.remediations.scale.PausableAutoscaling: set (None: remove) the ScaledObject's paused-replicas.

        Outcome.data = {"before": the paused count before (None: not paused), "after": replicas}.
        """
        check_workload(workload)
        if not workload.keda_scaled_object:
            return Outcome(ok=True, detail=wording.k8s_no_keda(describe(workload)))
        try:
            before = self._keda_previous(workload)
            self._set_keda(workload, None if replicas is None else str(replicas))
        except ExecutorError as exc:
            return Outcome(ok=False, detail=str(exc))
        previous = int(before) if before is not None and before.isdigit() else None
        detail = wording.k8s_keda_paused(workload.keda_scaled_object, before, replicas)
        return Outcome(ok=True, detail=detail, data={"before": previous, "after": replicas})

    def keda_paused_replicas(self, workload: Workload) -> str | None:
        """The ScaledObject's paused-replicas now (None: not paused, or not managed by KEDA), read before a change
        that pauses it (the drain's scale to 0), so that it can be put back even if the change is interrupted."""
        check_workload(workload)
        return self._keda_previous(workload)

    def _keda_previous(self, workload: Workload) -> str | None:
        """The ScaledObject's current paused-replicas (None: not paused); it must exist."""
        if not workload.keda_scaled_object:
            return None
        doing = wording.k8s_doing("read ScaledObject", f"{workload.namespace}/{workload.keda_scaled_object}")
        scaled_object = self._call(
            doing,
            Access("get", KEDA_PLURAL, KEDA_GROUP, workload.namespace),
            self._custom().get_namespaced_custom_object,
            KEDA_GROUP,
            KEDA_VERSION,
            workload.namespace,
            KEDA_PLURAL,
            workload.keda_scaled_object,
        )
        annotations = (scaled_object.get("metadata") or {}).get("annotations") or {}
        value = annotations.get(KEDA_PAUSED)
        return None if value is None else str(value)

    def _set_keda(self, workload: Workload, value: str | None) -> None:
        assert workload.keda_scaled_object is not None
        what = "pause" if value is not None else "unpause"
        doing = wording.k8s_doing(f"{what} ScaledObject", f"{workload.namespace}/{workload.keda_scaled_object}")
        self._call(
            doing,
            Access("patch", KEDA_PLURAL, KEDA_GROUP, workload.namespace),
            self._custom().patch_namespaced_custom_object,
            KEDA_GROUP,
            KEDA_VERSION,
            workload.namespace,
            KEDA_PLURAL,
            workload.keda_scaled_object,
            keda_patch(value),
        )

    # --- helpers --------------------------------------------------------------------------------

    def _patch_scale(self, workload: Workload, replicas: int, *, undo_keda: bool, keda_previous: str | None) -> None:
        doing = wording.k8s_doing("scale", f"{describe(workload)} to {replicas}")
        patch = getattr(self._apps(), f"patch_namespaced_{_API_KIND[workload.kind]}_scale")
        try:
            access = workload_access(workload, "patch", "scale")
            self._call(doing, access, patch, workload.name, workload.namespace, {"spec": {"replicas": replicas}})
        except ExecutorError as exc:
            if undo_keda:
                raise ExecutorError(f"{exc}; {self._undo_keda(workload, keda_previous)}") from exc
            raise

    def _undo_keda(self, workload: Workload, previous: str | None) -> str:
        try:
            self._set_keda(workload, previous)
        except ExecutorError as exc:
            return str(exc)
        assert workload.keda_scaled_object is not None
        return wording.k8s_keda_restored(workload.keda_scaled_object, previous)

    def _member_pod(self, workload: Workload, member: Member, deadline: Deadline | None = None) -> str:
        ref = member_pod_ref(workload, member)
        ip = as_ip(ref)
        pod = self._pod_by_ip(workload, ip, deadline) if ip is not None else ref
        check_pod_name(workload, pod)
        return pod

    def _pod_by_ip(self, workload: Workload, ip: str, deadline: Deadline | None) -> str:
        doing = wording.k8s_doing("find the pod with IP", f"{ip} in namespace {workload.namespace}")
        listed = self._call(
            doing,
            Access("list", "pods", "", workload.namespace),
            self._core(deadline).list_namespaced_pod,
            workload.namespace,
            field_selector=f"status.podIP={ip},status.phase=Running",
            deadline=deadline,
        )
        names = sorted(str(p.metadata.name) for p in listed.items if p.metadata and p.metadata.name)
        if len(names) != 1:  # none: the member's pod is gone (its fact); more: the address says no one pod
            kind = NotFound if not names else ExecutorError
            raise kind(wording.k8s_pods_for_ip(ip, workload.namespace, names))
        return names[0]
