"""Hand-made verdicts and partitions for the history, digest and metrics tests (no broker needed)."""

from __future__ import annotations

from lagbot.core.model import GroupState, GroupVerdict, PartitionVerdict, Severity, Status, Trend
from lagbot.engine.evaluate import error_verdict


def partition(
    topic: str,
    number: int,
    *,
    committed: int | None,
    log_end: int,
    log_start: int = 0,
    lag_seconds: float | None = None,
    status: Status = Status.OK,
) -> PartitionVerdict:
    lag = None if committed is None else max(0, log_end - committed)
    return PartitionVerdict(
        topic=topic,
        partition=number,
        committed=committed,
        log_end=log_end,
        log_start=log_start,
        lag=lag,
        lag_seconds=lag_seconds,
        lag_seconds_lower_bound=False,
        status=status,
        reason="hand-made",
        produce_rate=None,
        consume_rate=None,
        owner=None,
    )


def verdict(
    group: str,
    *,
    cluster: str = "prod",
    total_lag: int | None = 0,
    lag_seconds: float | None = 0.0,
    status: Status = Status.OK,
    severity: Severity = Severity.OK,
    partitions: tuple[PartitionVerdict, ...] = (),
    state: GroupState = GroupState.STABLE,
) -> GroupVerdict:
    return GroupVerdict(
        cluster=cluster,
        group=group,
        state=state,
        status=status,
        severity=severity,
        severity_reason="hand-made",
        partitions=partitions,
        total_lag=total_lag,
        max_lag_seconds=lag_seconds,
        produce_rate=None,
        consume_rate=None,
        eta_seconds=None,
        trend=Trend.STEADY,
    )


def unreadable(group: str, *, cluster: str = "prod") -> GroupVerdict:
    return error_verdict(cluster, group, GroupState.UNKNOWN, "coordinator not available")
