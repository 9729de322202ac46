"""What a remediation's verification keeps of each check after its run: a compact point, and back.

A point is [at, total lag, status name, severity label, produce rate, consume rate, error], stored in the
incident's remediation state (lagbot.service.remediate.StateSlot); `check_of` makes it a `Check` again, its
verdict carrying those figures only (no partitions).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from lagbot.core.model import GroupState, GroupVerdict, Severity, Status
from lagbot.remediations.verify import Check


def point_of(verdict: GroupVerdict, now: float) -> list[Any]:
    """What verification keeps of a check: [at, lag, status, severity, produce, consume, error]."""
    return [
        now,
        verdict.total_lag,
        verdict.status.name,
        verdict.severity.label,
        verdict.produce_rate,
        verdict.consume_rate,
        verdict.error,
    ]


def check_of(point: list[Any]) -> Check:
    at, lag, status, severity, produce, consume, error = point
    verdict = replace(
        unknown_verdict("", ""),
        status=Status[status],
        severity=Severity[severity.upper()],
        total_lag=lag,
        produce_rate=produce,
        consume_rate=consume,
        error=error,
    )
    return Check(verdict, at)


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
        trend="unknown",
    )
