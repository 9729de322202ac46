"""Hand-made verdicts for remediation tests: the lag engine's output shape, with only what a test sets."""

from __future__ import annotations

from collections.abc import Sequence

from lagbot.core.model import GroupState, GroupVerdict, Member, PartitionVerdict, Severity, Status, Trend

CLUSTER = "prod"
GROUP = "orders-consumer"
TOPIC = "orders"


def member(n: int, *partitions: int, topic: str = TOPIC) -> Member:
    return Member(f"m-{n}", f"client-{n}", f"10.0.0.{n}", tuple((topic, p) for p in partitions))


def partition(
    p: int,
    *,
    committed: int | None = 100,
    log_end: int = 100,
    log_start: int = 0,
    status: Status = Status.OK,
    owner: Member | None = None,
    topic: str = TOPIC,
) -> PartitionVerdict:
    lag = None if committed is None else max(0, log_end - committed)
    return PartitionVerdict(
        topic=topic,
        partition=p,
        committed=committed,
        log_end=log_end,
        log_start=log_start,
        lag=lag,
        lag_seconds=None,
        lag_seconds_lower_bound=False,
        status=status,
        reason="",
        produce_rate=None,
        consume_rate=None,
        owner=owner,
    )


def verdict(
    partitions: Sequence[PartitionVerdict] = (),
    *,
    lag: int | None = None,
    state: GroupState = GroupState.STABLE,
    status: Status | None = None,
    severity: Severity = Severity.WARN,
    members: Sequence[Member] = (),
    produce: float | None = None,
    consume: float | None = None,
    error: str | None = None,
    group: str = GROUP,
) -> GroupVerdict:
    """A verdict; total lag is the partitions' unless `lag` is given; status is the worst partition's."""
    total = lag if lag is not None else sum(p.lag or 0 for p in partitions)
    worst = status if status is not None else max((p.status for p in partitions), default=Status.OK)
    return GroupVerdict(
        cluster=CLUSTER,
        group=group,
        state=state,
        status=worst,
        severity=severity,
        severity_reason="",
        partitions=tuple(partitions),
        total_lag=None if error else total,
        max_lag_seconds=None,
        produce_rate=produce,
        consume_rate=consume,
        eta_seconds=None,
        trend=Trend.UNKNOWN,
        members=tuple(members),
        error=error,
    )
