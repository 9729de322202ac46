"""The owner's pod as evidence: what Kubernetes knows about the pod of a lagging partition's member.

The broker sees a member stop committing; its pod says why: restarting (and the last termination: OOMKilled, or
Error with its exit code), CrashLoopBackOff, not Ready, evicted, terminating, a rollout in progress (two
ReplicaSets of the Deployment with pods), and the container's CPU and memory limits.

`read_pod` turns the API's JSON of a pod into `PodEvidence` (pure); `findings` words it for the incident (pure,
`now` passed in); `escalation` says when a restart would not help (a container OOM-killed again and again: a
restart brings back the same limit). `KubernetesExecutor.owner_pod_evidence` reads the pod and its ReplicaSets
with the read-only Role of deploy/kubernetes/components/evidence. `PodReadings` keeps each owner's reading for
READ_EVERY seconds: a restart refused at every check, and the causes that show the pods, read each pod at most once
in that time. A `ReadRound` bounds the reads of one check cycle together: one deadline for them all, and a server
that gave no answer is not asked again in the round (a pod not found is its owner's fact: the others are read).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from lagbot.remediations.executors import wording
from lagbot.remediations.executors.base import CutShort, Deadline, ExecutorError, NoAnswer

if TYPE_CHECKING:
    from lagbot.core.model import Member
    from lagbot.remediations.executors.base import Workload

RECENT = 600.0
"""Seconds back a termination still counts as evidence of now (a restart or OOM kill in the last ten minutes)."""
OOM_RESTARTS_TO_ESCALATE = 3
"""A container OOM-killed and restarted this many times (the last within the window) is not fixed by a restart."""
READ_EVERY = 120.0
"""Seconds an owner's pod reading (or the refusal to read it) is kept: at the default check interval (60 s) a pod is
read at most every other check. The evidence stays right meanwhile: its times are absolute (`findings` words them
against `now`)."""
MOST_OWNERS = 4_096
"""Owners whose reading is kept at most (the oldest go first): a bound on memory, whatever the groups."""
MOST_TEXT = 100
"""Characters kept of each text a pod's status carries (a reason, a container's name, a limit), cut with an ellipsis:
the status is written by whoever may patch it, and a reason is free text (a kubelet's are short words)."""


@runtime_checkable
class PodReader(Protocol):
    """An executor that can read a member's pod (lagbot.remediations.executors.kubernetes)."""

    def owner_pod_evidence(
        self, workload: Workload, member: Member, *, deadline: Deadline | None = None
    ) -> PodEvidence:
        """What Kubernetes knows of the member's pod, its requests within `deadline` if given. Raises ExecutorError
        when it cannot be found (NotFound) or read (NoAnswer when the server did not answer)."""
        ...


@dataclass(frozen=True)
class ContainerEvidence:
    name: str
    restarts: int
    ready: bool
    last_reason: str | None
    """Why the previous run ended: 'OOMKilled', 'Error', 'Completed' (None: it never ended)."""
    last_exit_code: int | None
    last_finished: float | None
    """When it ended (epoch seconds)."""
    waiting_reason: str | None
    """'CrashLoopBackOff', 'ImagePullBackOff', ... while the container is not running."""
    limits: dict[str, str]
    """Its resource limits as written: {'cpu': '500m', 'memory': '512Mi'}."""


@dataclass(frozen=True)
class PodEvidence:
    pod: str
    phase: str
    ready: bool
    reason: str | None
    """The pod's own reason: 'Evicted' when the kubelet evicted it."""
    terminating: bool
    containers: tuple[ContainerEvidence, ...]
    rollout_replica_sets: int = 1
    """ReplicaSets of the pod's Deployment that have pods: more than one is a rollout in progress."""


def _time(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.timestamp()
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()


def _cut(value: Any) -> str:
    """A text of the pod as kept: at most MOST_TEXT characters, the last an ellipsis when cut."""
    text = str(value)
    return text if len(text) <= MOST_TEXT else text[: MOST_TEXT - 1] + "…"


def _cut_or_none(value: Any) -> str | None:
    return None if value is None else _cut(value)


def read_pod(pod: dict[str, Any], rollout_replica_sets: int = 1) -> PodEvidence:
    """PodEvidence from a pod as the API serves it (JSON field names: camelCase), each text of its status cut to
    MOST_TEXT."""
    metadata, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    limits = {c.get("name"): dict((c.get("resources") or {}).get("limits") or {}) for c in spec.get("containers") or ()}
    containers = []
    for c in status.get("containerStatuses") or ():
        last = (c.get("lastState") or {}).get("terminated") or {}
        waiting = (c.get("state") or {}).get("waiting") or {}
        containers.append(
            ContainerEvidence(
                name=_cut(c.get("name")),
                restarts=int(c.get("restartCount") or 0),
                ready=bool(c.get("ready")),
                last_reason=_cut_or_none(last.get("reason")),
                last_exit_code=last.get("exitCode"),
                last_finished=_time(last.get("finishedAt")),
                waiting_reason=_cut_or_none(waiting.get("reason")),
                limits={_cut(k): _cut(v) for k, v in limits.get(c.get("name"), {}).items()},
            )
        )
    ready = any(cond.get("type") == "Ready" and cond.get("status") == "True" for cond in status.get("conditions") or ())
    return PodEvidence(
        pod=str(metadata.get("name")),  # a DNS-1123 name, as the API server checks it
        phase=str(status.get("phase") or "Unknown"),
        ready=ready,
        reason=_cut_or_none(status.get("reason")),
        terminating=metadata.get("deletionTimestamp") is not None,
        containers=tuple(containers),
        rollout_replica_sets=rollout_replica_sets,
    )


def findings(evidence: PodEvidence, now: float, window: float) -> list[str]:
    """What the pod shows, one line each, most telling first; empty when it looks healthy."""
    lines = []
    if evidence.reason == "Evicted":
        lines.append(wording.pod_evicted(evidence.pod))
    if evidence.terminating:
        lines.append(wording.pod_terminating(evidence.pod))
    for c in evidence.containers:
        ago = None if c.last_finished is None else now - c.last_finished
        recent = ago is not None and ago <= window
        if c.restarts and ago is not None and recent and c.last_reason:
            lines.append(wording.pod_restarted(evidence.pod, c.name, c.restarts, c.last_reason, c.last_exit_code, ago))
        if c.waiting_reason:
            lines.append(wording.pod_waiting(evidence.pod, c.name, c.waiting_reason))
        if c.limits and (recent or c.waiting_reason):
            lines.append(wording.pod_limits(c.name, c.limits))
    if evidence.phase == "Running" and not evidence.ready and not evidence.terminating:
        lines.append(wording.pod_not_ready(evidence.pod))
    if evidence.rollout_replica_sets > 1:
        lines.append(wording.pod_rollout(evidence.rollout_replica_sets))
    return lines


def escalation(evidence: PodEvidence, now: float, window: float) -> str | None:
    """Why a restart would not help, or None: a container OOM-killed again and again, the last time recently."""
    for c in evidence.containers:
        recent = c.last_finished is not None and now - c.last_finished <= window
        if c.last_reason == "OOMKilled" and recent and c.restarts >= OOM_RESTARTS_TO_ESCALATE:
            return wording.pod_oom_escalation(evidence.pod, c.name, c.restarts, c.limits.get("memory"))
    return None


Owner = tuple[str, str, str, str]
"""(the workload as JSON, member id, client id, host): whose pod a reading is of."""


def owner_key(workload: Workload, member: Member) -> Owner:
    return (workload.model_dump_json(), member.member_id, member.client_id, member.host)


@dataclass(frozen=True)
class Refusal:
    """A reading that failed, as kept: the kind of ExecutorError it raised (whether the server answered) and its
    message."""

    kind: type[ExecutorError]
    message: str

    @classmethod
    def of(cls, exc: ExecutorError) -> Refusal:
        return cls(type(exc), str(exc))

    def error(self) -> ExecutorError:
        return self.kind(self.message)


class ReadRound:
    """The pod reads of one check cycle, bounded together: all within `budget` seconds of the first one's start (one
    `Deadline`, on `clock`: time.monotonic), and none sent to a reader (an executor: one API server) that gave no
    answer earlier in the round. Used by the one thread that runs the cycle; never shared with a click's thread.
    """

    def __init__(self, budget: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.budget = budget
        self.deadline: Deadline | None = None
        """Set when the first read is sent."""
        self._clock = clock
        self._silent: list[object] = []

    def start(self) -> Deadline:
        """The round's deadline, set now if no read was sent yet."""
        if self.deadline is None:
            self.deadline = Deadline(self._clock() + self.budget, self.budget)
        return self.deadline

    def closed(self, reader: object) -> Refusal | None:
        """Why `reader` is not asked now (the round's time is spent, or it gave no answer in it), or None."""
        if any(reader is silent for silent in self._silent):
            return Refusal(NoAnswer, wording.pods_not_asked_silent())
        if self.deadline is not None and self.deadline.left(self._clock()) <= 0:
            return Refusal(CutShort, wording.pods_not_asked_spent(self.budget))
        return None

    def failed(self, reader: object, exc: ExecutorError) -> None:
        """Note a read that failed: a reader that gave no answer is not asked again in this round."""
        if isinstance(exc, NoAnswer) and not any(reader is silent for silent in self._silent):
            self._silent.append(reader)


class PodReadings:
    """Each owner's pod evidence (or the ExecutorError that reading it raised), kept `every` seconds, in memory.

    One per running service, shared by the threads that propose (the check, `/lag remediate`). Two threads may read
    the same owner at once (the lock is not held while the API is called); both readings are right.
    """

    def __init__(self, *, every: float = READ_EVERY, most: int = MOST_OWNERS) -> None:
        self.every, self.most = every, most
        self._kept: dict[Owner, tuple[float, PodEvidence | Refusal]] = {}
        self._lock = threading.Lock()

    def read(
        self, reader: PodReader, workload: Workload, member: Member, *, now: float, round: ReadRound | None = None
    ) -> PodEvidence:
        """The kept reading while it is fresh, else what `reader` reads now (kept). In a `round`, a read is sent only
        while the round allows it, within its deadline; one it does not send is refused, and kept as any refusal
        (the same cycle's restart proposal, on the same thread, does not ask the server again).

        Raises:
            ExecutorError: the pod cannot be read (now, or when it was last read within `every`), of the kind the
                reading raised (NotFound, NoAnswer, CutShort ...).
        """
        key = owner_key(workload, member)
        kept = self.kept(key, now=now)
        if kept is None:
            kept = self._ask(reader, workload, member, round)
            self._keep(key, kept, now)
        if isinstance(kept, Refusal):
            raise kept.error()
        return kept

    @staticmethod
    def _ask(reader: PodReader, workload: Workload, member: Member, round: ReadRound | None) -> PodEvidence | Refusal:
        """What `reader` reads now, or why not (the refusal, of its kind)."""
        if round is None:  # the executor's own timeout and retry
            try:
                return reader.owner_pod_evidence(workload, member)
            except ExecutorError as exc:
                return Refusal.of(exc)
        closed = round.closed(reader)
        if closed is not None:
            return closed
        try:
            return reader.owner_pod_evidence(workload, member, deadline=round.start())
        except ExecutorError as exc:
            round.failed(reader, exc)
            return Refusal.of(exc)

    def kept(self, key: Owner, *, now: float) -> PodEvidence | Refusal | None:
        """The fresh reading of an owner (`owner_key`), or the refusal to read it, without reading; None: none."""
        with self._lock:
            found = self._kept.get(key)
        if found is None or not 0 <= now - found[0] < self.every:
            return None
        return found[1]

    def _keep(self, key: Owner, reading: PodEvidence | Refusal, now: float) -> None:
        with self._lock:
            self._kept.pop(key, None)
            if len(self._kept) >= self.most:
                stale = [k for k, (at, _) in self._kept.items() if not 0 <= now - at < self.every]
                for k in stale:
                    del self._kept[k]
                while len(self._kept) >= self.most:
                    del self._kept[next(iter(self._kept))]
            self._kept[key] = (now, reading)
