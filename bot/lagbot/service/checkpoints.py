"""What a remediation's verification keeps of each check after its run: a compact point, and back.

A `CheckPoint` is the check's time, total lag, status, severity, produce and consume rates and error, stored in
the incident's remediation state (lagbot.service.remediation_state) as a JSON object; `check_of` makes it a
`Check` again, its verdict carrying those figures only (no partitions). Points written by an earlier lagbot are
positional lists, [at, total lag, status name, severity label, produce rate, consume rate, error]: the codec's
upgraders make them objects (`point_from_list`), so verifications under way when lagbot is upgraded go on.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Annotated, Any

from lagbot.core.codec import ByName
from lagbot.core.model import GroupState, GroupVerdict, Severity, Status, Trend
from lagbot.remediations.verify import Check


@dataclass(frozen=True, slots=True)
class CheckPoint:
    """What verification keeps of one check. Stored (lagbot.service.remediation_state's codec) as a JSON object:
    the status by name, the severity by label."""

    at: float
    lag: int | None
    status: Annotated[Status, ByName(Status)]
    severity: Annotated[Severity, ByName(Severity, lower=True)]
    produce_rate: float | None = None
    consume_rate: float | None = None
    error: str | None = None


POINT_FIELDS = ("at", "lag", "status", "severity", "produce_rate", "consume_rate", "error")
"""The positional list an earlier lagbot stored a point as."""


def point_from_list(stored: Any) -> Any:
    """A point as earlier lagbots stored it (a positional list) as the object stored now; an object as it is.

    Raises:
        ValueError: a list of another length (the codec makes it a StoredFormatError).
    """
    if not isinstance(stored, list):
        return stored
    if len(stored) != len(POINT_FIELDS):
        raise ValueError(f"a stored check point has {len(POINT_FIELDS)} items, not {len(stored)}")
    return dict(zip(POINT_FIELDS, stored, strict=True))


def point_of(verdict: GroupVerdict, now: float) -> CheckPoint:
    """What verification keeps of a check."""
    return CheckPoint(
        at=now,
        lag=verdict.total_lag,
        status=verdict.status,
        severity=verdict.severity,
        produce_rate=verdict.produce_rate,
        consume_rate=verdict.consume_rate,
        error=verdict.error,
    )


def check_of(point: CheckPoint) -> Check:
    verdict = replace(
        unknown_verdict("", ""),
        status=point.status,
        severity=point.severity,
        total_lag=point.lag,
        produce_rate=point.produce_rate,
        consume_rate=point.consume_rate,
        error=point.error,
    )
    return Check(verdict, point.at)


def unknown_verdict(cluster: str, group: str) -> GroupVerdict:
    return GroupVerdict(
        cluster=cluster,
        group=group,
        state=GroupState.UNKNOWN,
        status=Status.OK,
        severity=Severity.OK,
        severity_reason="",
        partitions=(),
        total_lag=None,
        max_lag_seconds=None,
        produce_rate=None,
        consume_rate=None,
        eta_seconds=None,
        trend=Trend.UNKNOWN,
    )
