"""The owner's pod as evidence on the cause: what Kubernetes shows of the members a cause blames.

A cause that names members (stuck_consumer: the owners of the stalled partitions; hot_partition: the hot partition's
owner) gets, in the incident's messages, what their pods show (lagbot.remediations.executors.pod_evidence
`findings`: restarts with the last termination, CrashLoopBackOff, not Ready, evicted or terminating, a rollout in
progress, the limits), for the first OWNERS_READ owners blamed. The pods are those of the policy rule's workload,
found as the executor finds a member's pod (by IP or by name: `Workload.member_pod`), read through the service's
PodReadings (each owner at most once in its time, shared with the restart's own reading). The engine knows nothing
of Kubernetes: this runs in the service, on the verdict the incident shows; a pod that cannot be read leaves the
cause as the broker sees it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

from lagbot.core.model import Cause, CauseKind, GroupVerdict, Member
from lagbot.remediations.executors.base import Executor, ExecutorError, Workload
from lagbot.remediations.executors.pod_evidence import (
    RECENT,
    PodEvidence,
    PodReader,
    PodReadings,
    findings,
    owner_key,
)
from lagbot.remediations.restart.remediation import stuck_owners
from lagbot.service import wording

OWNERS_READ = 5
"""Owners whose pods a verdict's causes show at most (the first blamed): the reading is on the check's thread, and a
cause says what is telling in a few lines (the restart's own plan reads every owner it restarts)."""

ReadPod = Callable[[Member], PodEvidence | None]
"""A member -> its pod's evidence, None when there is none to show. Raises ExecutorError when it cannot be read."""


def cause_owners(cause: Cause, verdict: GroupVerdict) -> list[Member]:
    """Pure: the members a cause blames (as the restart would restart them), in partition order."""
    if cause.kind == CauseKind.STUCK_CONSUMER:
        return stuck_owners(verdict)[0]
    if cause.kind == CauseKind.HOT_PARTITION:
        topic, number = cause.evidence.get("topic"), cause.evidence.get("partition")
        hot = next((p for p in verdict.partitions if (p.topic, p.partition) == (topic, number)), None)
        return [hot.owner] if hot is not None and hot.owner is not None else []
    return []


def blamed(verdict: GroupVerdict, most: int = OWNERS_READ) -> list[Member]:
    """Pure: the members that the verdict's causes blame, once each (by member id), the first `most` of them (the most
    likely cause's first)."""
    owners: dict[str, Member] = {}
    for cause in verdict.causes:
        for member in cause_owners(cause, verdict):
            owners.setdefault(member.member_id, member)
    return list(owners.values())[:most]


def with_pod_evidence(verdict: GroupVerdict, shown: Mapping[str, Sequence[str]]) -> GroupVerdict:
    """Pure: the verdict whose member causes carry what their owners' pods show (`shown`: member id -> lines), in
    their explanation and as evidence["pods"]. A line said of two owners (a rollout) is said once."""
    if not shown:
        return verdict
    causes = []
    for cause in verdict.causes:
        lines = list(dict.fromkeys(line for m in cause_owners(cause, verdict) for line in shown.get(m.member_id, ())))
        if lines:
            explanation = wording.cause_with_pods(cause.explanation, lines)
            cause = dataclasses.replace(cause, explanation=explanation, evidence={**cause.evidence, "pods": lines})
        causes.append(cause)
    return dataclasses.replace(verdict, causes=tuple(causes))


def pod_lines(read: ReadPod, owners: Sequence[Member], *, now: float) -> dict[str, list[str]]:
    """Member id -> what its pod shows (a healthy pod, or one with nothing kept, adds nothing). The first pod that
    cannot be read ends the reading, as the restart's does: the others would meet the same refusal or slowness."""
    shown: dict[str, list[str]] = {}
    for member in owners:
        try:
            evidence = read(member)
        except ExecutorError:
            break
        lines = findings(evidence, now, RECENT) if evidence is not None else []
        if lines:
            shown[member.member_id] = lines
    return shown


class PodCauses:
    """Adds the owners' pods to the causes of a verdict, for the policy rule's workload of its group.

    Args:
        readings: the service's readings (shared with the restart's `prepare`).
        workload_of: (cluster, group) -> the workload the policy names for it (None: none).
        executor_for: the executor of a workload (it reads pods when it is a PodReader).
    """

    def __init__(
        self,
        readings: PodReadings,
        workload_of: Callable[[str, str], Workload | None],
        executor_for: Callable[[Workload], Executor],
    ) -> None:
        self.readings = readings
        self.workload_of = workload_of
        self.executor_for = executor_for

    def explained(self, verdict: GroupVerdict, *, now: float, read: bool = True) -> GroupVerdict:
        """The verdict with its owners' pods on its member causes. `read`: False uses only the readings kept (never
        calls the API server: a click's thread)."""
        owners = blamed(verdict)
        if not owners:
            return verdict
        workload = self.workload_of(verdict.cluster, verdict.group)
        if workload is None:
            return verdict
        try:
            reader = self.executor_for(workload)
        except (ExecutorError, ValueError, OSError):
            return verdict  # no executor to read with: the remediations say so when they need one
        if not isinstance(reader, PodReader):
            return verdict
        return with_pod_evidence(verdict, pod_lines(self._reader(reader, workload, now, read), owners, now=now))

    def _reader(self, reader: PodReader, workload: Workload, now: float, read: bool) -> ReadPod:
        if read:
            return lambda member: self.readings.read(reader, workload, member, now=now)

        def kept(member: Member) -> PodEvidence | None:
            found = self.readings.kept(owner_key(workload, member), now=now)
            return found if isinstance(found, PodEvidence) else None

        return kept
