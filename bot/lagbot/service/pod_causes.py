"""The owner's pod as evidence on the cause: what Kubernetes shows of the members a cause blames.

A cause that names members (stuck_consumer: the owners of the stalled partitions; hot_partition: the hot partition's
owner) gets, in the incident's messages, what their pods show (lagbot.remediations.executors.pod_evidence
`findings`: restarts with the last termination, CrashLoopBackOff, not Ready, evicted or terminating, a rollout in
progress, the limits), for the first OWNERS_READ owners blamed. The pods are those of the policy rule's workload,
found as the executor finds a member's pod (by IP or by name: `Workload.member_pod`), read through the service's
PodReadings (each owner at most once in its time, shared with the restart's own reading). The engine knows nothing
of Kubernetes: this runs in the service, on the verdict the incident shows; a pod that cannot be read leaves the
cause as the broker sees it.

The reads run on the check's thread: the check cycle's reads, all its groups', share one `ReadRound` (`cycle_round`):
they end within CYCLE_READS seconds of the first one's start, and an API server that gave no answer (timed out,
refused the connection) is not asked again in that cycle, so that a hanging one costs a cycle that much at most, not
its timeout per group; the incidents update without the pods that were not read. A pod not found is its owner's
fact: the other owners are read. The reads of other threads (`/lag`, a restart's `prepare`) keep the executor's own
timeout and retry.

The same reading serves `/lag <group>` (lagbot.slack.wiring) and `lagbot check` (lagbot.cli.pods): `PodCauses.read`
gives each owner's pod (`OwnerPod`, healthy ones too) and why the reading stopped, if it did (`PodsRead.error`);
`cause_pods` joins them to a cause.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from lagbot.core.model import Cause, CauseKind, GroupVerdict, Member
from lagbot.remediations.executors.base import Executor, ExecutorError, NotFound, Workload
from lagbot.remediations.executors.pod_evidence import (
    RECENT,
    PodEvidence,
    PodReader,
    PodReadings,
    ReadRound,
    findings,
    owner_key,
)
from lagbot.remediations.restart.remediation import stuck_owners
from lagbot.service import wording

OWNERS_READ = 5
"""Owners whose pods a verdict's causes show at most (the first blamed): the reading is on the check's thread, and a
cause says what is telling in a few lines (the restart's own plan reads every owner it restarts)."""

CYCLE_READS = 5.0
"""Seconds the owners' pods of one check cycle (all its groups) are read in, all together, from the first read's start:
a hanging API server costs a cycle this much at most. A healthy one answers a pod's three requests in milliseconds."""


def cycle_round() -> ReadRound:
    """The round of one check cycle's pod reads (lagbot.service.bot: Bot.apply makes one per call)."""
    return ReadRound(CYCLE_READS)


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


@dataclass(frozen=True)
class OwnerPod:
    """A blamed owner's pod as read: the member, its pod's name and what it shows (empty: it looks healthy)."""

    member: Member
    pod: str
    findings: tuple[str, ...]


@dataclass(frozen=True)
class PodsRead:
    """The blamed owners' pods read for one verdict: by member id, in the order blamed; `error`: why the reading
    stopped before the end (the first pod that could not be read, or no executor to read with), None when it did
    not."""

    owners: dict[str, OwnerPod] = field(default_factory=dict)
    error: str | None = None

    def shown(self) -> dict[str, list[str]]:
        """Member id -> what its pod shows, for the owners whose pod shows something (`with_pod_evidence`)."""
        return {m: list(o.findings) for m, o in self.owners.items() if o.findings}


def read_owners(read: ReadPod, owners: Sequence[Member], *, now: float) -> PodsRead:
    """Each owner's pod, with what it shows at `now` (an owner with nothing kept is left out). The first pod that
    cannot be read ends the reading, as the restart's does (the others would meet the same refusal or slowness),
    unless it was not found: that is its owner's fact, and the others are read (`error`: the first failure)."""
    found: dict[str, OwnerPod] = {}
    missing: str | None = None
    for member in owners:
        try:
            evidence = read(member)
        except NotFound as exc:
            missing = missing or str(exc)
            continue
        except ExecutorError as exc:
            return PodsRead(found, missing or str(exc))
        if evidence is not None:
            found[member.member_id] = OwnerPod(member, evidence.pod, tuple(findings(evidence, now, RECENT)))
    return PodsRead(found, missing)


def cause_pods(cause: Cause, verdict: GroupVerdict, pods: PodsRead) -> list[OwnerPod]:
    """Pure: the pods read of the members `cause` blames, in the cause's order (an owner not read is left out)."""
    return [pods.owners[m.member_id] for m in cause_owners(cause, verdict) if m.member_id in pods.owners]


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

    def explained(
        self, verdict: GroupVerdict, *, now: float, read: bool = True, round: ReadRound | None = None
    ) -> GroupVerdict:
        """The verdict with its owners' pods on its member causes. `read`: False uses only the readings kept (never
        calls the API server: a click's thread). `round`: the check cycle's (`cycle_round`), bounding its reads."""
        pods = self.read(verdict, now=now, read=read, round=round)
        return verdict if pods is None else with_pod_evidence(verdict, pods.shown())

    def read(
        self, verdict: GroupVerdict, *, now: float, read: bool = True, round: ReadRound | None = None
    ) -> PodsRead | None:
        """The pods of the owners the verdict's causes blame; None when there is nothing to read (no owner blamed, no
        workload named for the group, or its executor reads no pods). `read`, `round`: as in `explained`."""
        owners = blamed(verdict)
        if not owners:
            return None
        workload = self.workload_of(verdict.cluster, verdict.group)
        if workload is None:
            return None
        try:
            reader = self.executor_for(workload)
        except (ExecutorError, ValueError, OSError) as exc:
            return PodsRead(error=str(exc))  # no executor to read with: the remediations say so when they need one
        if not isinstance(reader, PodReader):
            return None
        return read_owners(self._reader(reader, workload, now, read, round), owners, now=now)

    def _reader(
        self, reader: PodReader, workload: Workload, now: float, read: bool, round: ReadRound | None
    ) -> ReadPod:
        if read:
            return lambda member: self.readings.read(reader, workload, member, now=now, round=round)

        def kept(member: Member) -> PodEvidence | None:
            found = self.readings.kept(owner_key(workload, member), now=now)
            return found if isinstance(found, PodEvidence) else None

        return kept
