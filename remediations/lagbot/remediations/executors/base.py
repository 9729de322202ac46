"""The contract every executor keeps, and how a policy names the workload behind a group.

An executor changes the workload that runs a consumer group's members: how many replicas, a rolling
restart, or the restart of the one member that owns stuck partitions. Implementations:
`kubernetes` (the official client against the API server), `command` (an argv template, no shell),
`local` (a real fleet of consumer processes on this machine: the demo and the tests).

Rules every implementation keeps:
- every call is bounded in time and returns an `Outcome` (ok or not, with a short detail); it raises
  only `ExecutorError`, with a message that says what was being done;
- `replicas` reads the current count; `scale` sets it and returns the count before and after in
  `Outcome.data` (`{"before": n, "after": m}`);
- `restart_member` restarts the member identified by its client id / host as Kafka reports them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from lagbot.core.model import Member
from lagbot.remediations.base import Outcome
from lagbot.remediations.executors import wording


class ExecutorError(Exception):
    """An executor could not do what it was asked; the message says what and why."""


class NoAnswer(ExecutorError):
    """The server gave no answer: the request timed out, the connection was refused or reset. Asking the same server
    again soon would most likely wait again (a cycle's pod reads stop asking it: lagbot.service.pod_causes)."""


class CutShort(NoAnswer):
    """No answer before a deadline set for several requests together (`Deadline`), shorter than the request's own
    timeout: it says the time ran out, nothing more of the server or of what was asked."""


class NotFound(ExecutorError):
    """The server answered: what was asked for does not exist (a pod gone, no pod with a member's address). One
    owner's fact: other owners' reads go on."""


@dataclass(frozen=True)
class Deadline:
    """When requests sent together must all have their answers, on time.monotonic()'s clock; `seconds`: the budget it
    was set with, as messages say it."""

    at: float
    seconds: float

    def left(self, now: float) -> float:
        """Pure: seconds left at `now` (0 once it has passed)."""
        return max(0.0, self.at - now)


class Workload(BaseModel):
    """What runs a consumer group's members, as a policy rule names it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    executor: Literal["kubernetes", "command", "local"]
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    """A Deployment or StatefulSet (kubernetes), a fleet (local), the {workload} of a command template."""
    kind: Literal["deployment", "statefulset"] = "deployment"
    namespace: str = Field(default="default", pattern=r"^[a-z0-9-]+$")
    keda_scaled_object: str | None = None
    """On a KEDA-managed workload, its ScaledObject: scaling pauses it (paused-replicas) and later restores it."""
    member_pod: str = "{host}"
    """How a member's pod name is derived from what Kafka reports: {host} or {client_id}, e.g. "{client_id}"."""

    def label(self) -> str:
        """How plans name it: "deployment shop/orders", or "local fleet orders-workers" (no namespace there)."""
        return wording.workload_label(self.executor, self.kind, self.namespace, self.name)


class Executor(ABC):
    """Acts on workloads. One instance per configured executor, shared by all remediations."""

    name: ClassVar[str]

    @abstractmethod
    def replicas(self, workload: Workload) -> int:
        """The workload's current replica count."""

    @abstractmethod
    def scale(self, workload: Workload, replicas: int) -> Outcome:
        """Set the replica count; data = {"before": n, "after": replicas}."""

    @abstractmethod
    def restart(self, workload: Workload) -> Outcome:
        """A rolling restart of the whole workload."""

    @abstractmethod
    def restart_member(self, workload: Workload, member: Member) -> Outcome:
        """Restart the one member (pod, process) that Kafka reports as `member`."""
