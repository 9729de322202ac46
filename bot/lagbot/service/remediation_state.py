"""An incident's latest remediation, as its root message shows it and its verification goes on from it.

Kept in Redis apart from the incident record (lagbot.service.remediation_stores.RunStates), through the one versioned
codec of lagbot.core.codec. Format 2 stores the verification's check points as objects; format 1 (earlier
lagbots) stored them as positional lists, and is still read, so a deployment's stored state survives an upgrade.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from lagbot.core import codec
from lagbot.remediations.base import Progress
from lagbot.service.checkpoints import CheckPoint, point_from_list

STATE_VERSION = 2
"""2: check points are objects. 1 (still read): check points are positional lists."""


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

    def to_json(self) -> str:
        return STATE_CODEC.encode(self)

    @classmethod
    def from_json(cls, kind: str, raw: str | bytes) -> RemediationState:
        """The state `to_json` wrote, or one in an older format (see the module doc). `kind` names it in errors.

        Raises:
            StoredFormatError: it is not a state lagbot wrote.
        """
        return STATE_CODEC.decode(raw, kind=kind)


def points_as_objects(document: dict[str, Any]) -> dict[str, Any]:
    """A state whose check points may be positional lists (format 1) with them as objects (format 2)."""
    if "checks" not in document:
        return document
    return {**document, "checks": [point_from_list(point) for point in document["checks"]]}


STATE_CODEC = codec.register(
    codec.Codec("stored remediation state", RemediationState, STATE_VERSION, {1: points_as_objects}, omit_defaults=True)
)
"""Unset fields (no checks, no progress yet ...) are left out."""
