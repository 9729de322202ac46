"""What a remediation's verification keeps of each check after its run: a compact point, and back.

A `CheckPoint` is the check's time, total lag, status, severity, produce and consume rates and error, stored in
the incident's remediation state (lagbot.service.remediation_state) as a JSON object; `check_of` makes it a
`Check` again, its verdict carrying those figures only (no partitions). Points written by an earlier lagbot are
positional lists, [at, total lag, status name, severity label, produce rate, consume rate, error]: they are still
read (`CheckPoint.from_stored`), so verifications under way when lagbot is upgraded go on.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from lagbot.core.model import GroupState, GroupVerdict, Severity, Status, Trend
from lagbot.core.stored import StoredFormatError
from lagbot.remediations.verify import Check


@dataclass(frozen=True, slots=True)
class CheckPoint:
    """What verification keeps of one check."""

    at: float
    lag: int | None
    status: Status
    severity: Severity
    produce_rate: float | None
    consume_rate: float | None
    error: str | None

    def to_stored(self) -> dict[str, Any]:
        """The point as a JSON object: enum members by name (status) and label (severity)."""
        return {
            "at": self.at,
            "lag": self.lag,
            "status": self.status.name,
            "severity": self.severity.label,
            "produce_rate": self.produce_rate,
            "consume_rate": self.consume_rate,
            "error": self.error,
        }

    @classmethod
    def from_stored(cls, stored: object) -> CheckPoint:
        """A point as `to_stored` wrote it, or in the positional list form earlier lagbots wrote.

        Raises:
            StoredFormatError: it is neither.
        """
        if isinstance(stored, list) and len(stored) == 7:
            at, lag, status, severity, produce, consume, error = stored
        elif isinstance(stored, dict):
            try:
                at, lag, status, severity = stored["at"], stored["lag"], stored["status"], stored["severity"]
            except KeyError as missing:
                raise StoredFormatError(f"stored check point has no {missing}") from None
            produce, consume, error = stored.get("produce_rate"), stored.get("consume_rate"), stored.get("error")
        else:
            raise StoredFormatError(f"stored check point is not one lagbot wrote: {stored!r}")
        try:
            return cls(float(at), lag, Status[status], Severity[str(severity).upper()], produce, consume, error)
        except KeyError as unknown:
            raise StoredFormatError(f"stored check point has an unknown status or severity {unknown}") from None


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
