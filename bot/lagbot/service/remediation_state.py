"""An incident's latest remediation, as its root message shows it and its verification goes on from it.

Kept in Redis apart from the incident record (lagbot.service.remediate.StateSlot), through the one versioned
codec of lagbot.core.stored. Format 2 stores the verification's check points as objects; format 1 (earlier
lagbots) stored them as positional lists, and is still read, so a deployment's stored state survives an upgrade.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from lagbot.core.stored import StoredFormatError, decode, encode
from lagbot.remediations.base import Progress
from lagbot.service.checkpoints import CheckPoint

STATE_VERSION = 2
"""2: check points are objects. 1 (still read): check points are positional lists."""
OLDER_VERSIONS = (1,)


class RunState(StrEnum):
    """Where an incident's latest remediation is: running, then verifying, failed or interrupted; a verification
    ends it resolved, no_change or worse (lagbot.remediations.base.Progress's names)."""

    RUNNING = "running"
    VERIFYING = "verifying"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    RESOLVED = "resolved"
    NO_CHANGE = "no_change"
    WORSE = "worse"


@dataclass(frozen=True, slots=True)
class RemediationState:
    """What an incident's latest remediation is doing, and what its verification has seen."""

    action: str
    """The remediation's name (restart, scale, ...)."""
    state: RunState
    detail: str
    id: str
    """The proposal's id (its plan, for the remediation's own verification)."""
    checks: tuple[CheckPoint, ...] = ()
    """The check taken when it ran (the baseline), then the latest checks since, oldest first."""
    progress: Progress | None = None
    """The verification's latest judgement; None before its first."""
    executed_at: float | None = None
    settle_until: float | None = None
    """The run's own rebalance is expected from `executed_at` to here (lagbot.engine.agreement.own_rebalance)."""

    def to_stored(self) -> dict[str, Any]:
        """The state as a JSON object (what `from_stored` reads); unset fields are left out."""
        document: dict[str, Any] = {"action": self.action, "state": self.state, "detail": self.detail, "id": self.id}
        if self.checks:
            document["checks"] = [point.to_stored() for point in self.checks]
        if self.progress is not None:
            document["progress"] = self.progress.value
        if self.executed_at is not None:
            document["executed_at"] = self.executed_at
        if self.settle_until is not None:
            document["settle_until"] = self.settle_until
        return document

    @classmethod
    def from_stored(cls, document: Mapping[str, Any]) -> RemediationState:
        """A state `to_stored` wrote, its check points in either stored form.

        Raises:
            StoredFormatError: it is not a state lagbot wrote.
        """
        try:
            progress = document.get("progress")
            executed_at, settle_until = document.get("executed_at"), document.get("settle_until")
            return cls(
                action=str(document["action"]),
                state=RunState(document["state"]),
                detail=str(document.get("detail", "")),
                id=str(document["id"]),
                checks=tuple(CheckPoint.from_stored(point) for point in document.get("checks", ())),
                progress=None if progress is None else Progress(progress),
                executed_at=None if executed_at is None else float(executed_at),
                settle_until=None if settle_until is None else float(settle_until),
            )
        except StoredFormatError:
            raise
        except (KeyError, ValueError, TypeError) as exc:
            raise StoredFormatError(f"stored remediation state is not one lagbot wrote ({exc!r})") from None

    def to_json(self) -> str:
        return encode(STATE_VERSION, self.to_stored())

    @classmethod
    def from_json(cls, kind: str, raw: str | bytes) -> RemediationState:
        """The state `to_json` wrote, or one in an older format (see the module doc). `kind` names it in errors."""
        return cls.from_stored(decode(kind, STATE_VERSION, raw, also=OLDER_VERSIONS))
