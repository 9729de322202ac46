"""The weekly report's parts on hand-made incidents, audit entries and history: exact counts and times."""

from __future__ import annotations

from lagbot.core.model import Severity, Status
from lagbot.service.audit import AuditEntry
from lagbot.service.backtest import Span
from lagbot.service.history import LagPoint
from lagbot.service.incidents import Incident
from lagbot.service.report import (
    ActionOutcome,
    acted_spans,
    group_report,
    outcomes,
    time_in_trouble,
    worst_first,
)
from lagbot.service.rollups import downsample
from tests.support.lag_histories import DAY, HOUR, MINUTE, START

NOW = START + 7 * DAY


def incident(group: str, opened: float, resolved: float | None, cause: str | None = "slow_consumer") -> Incident:
    return Incident(
        id=f"{group}-{opened:.0f}",
        cluster="prod",
        group=group,
        channel="C1",
        opened_at=opened,
        severity=Severity.WARN,
        peak_severity=Severity.CRITICAL,
        peak_lag=90_000,
        primary_cause=cause,
        status=Status.WARN,
        updated_at=resolved or opened,
        resolved_at=resolved,
    )


def entry(at: float, event: str, proposal: str, action: str, user: str = "lagbot", **detail: object) -> AuditEntry:
    return AuditEntry(at, event, "prod", "billing", user, action, proposal, dict(detail))


def test_what_worked_and_what_did_not_comes_from_the_last_verification_of_each_run() -> None:
    entries = [
        entry(START, "approved", "p1", "scale", user="U1"),
        entry(START + 10, "succeeded", "p1", "scale"),
        entry(START + 70, "verified", "p1", "scale", progress="improving"),
        entry(START + 300, "verified", "p1", "scale", progress="resolved"),
        entry(START + DAY, "succeeded", "p2", "restart"),
        entry(START + DAY + 300, "verified", "p2", "restart", progress="no_change"),
        entry(START + 2 * DAY, "failed", "p3", "restart"),
        entry(START + 3 * DAY, "succeeded", "p4", "scale"),
        entry(START + 3 * DAY + 60, "verified", "p4", "scale", progress="resolved"),
        entry(START + 4 * DAY, "succeeded", "p5", "restart"),
        entry(START + 4 * DAY + 60, "verified", "p5", "restart", progress="worse"),
        entry(START + 5 * DAY, "succeeded", "p6", "scale"),  # still being verified
        entry(START + 5 * DAY, "proposed", "p7", "reset_offsets"),  # never ran
    ]

    assert outcomes(entries) == (
        ActionOutcome("restart", runs=3, worked=0, did_not=3),
        ActionOutcome("scale", runs=3, worked=2, did_not=0),
    )


def test_time_in_trouble_counts_minute_points_and_rollups_before_them() -> None:
    old = [LagPoint(START + i * MINUTE, 10, 1.0, Status.WARN, Severity.WARN) for i in range(15)]
    old += [LagPoint(START + (15 + i) * MINUTE, 10, 1.0, Status.STALL, Severity.CRITICAL) for i in range(5)]
    old += [LagPoint(START + (20 + i) * MINUTE, 10, 1.0, Status.OK, Severity.OK) for i in range(10)]
    rollups = downsample(old, 15 * MINUTE)
    recent = [
        LagPoint(START + HOUR, 5_000, 50.0, Status.WARN, Severity.WARN),
        LagPoint(START + HOUR + MINUTE, None, None, Status.ERR, Severity.OK),
        LagPoint(START + HOUR + 2 * MINUTE, 9_000_000, 900.0, Status.STALL, Severity.PAGE),
        LagPoint(START + HOUR + 3 * MINUTE, 10, 0.1, Status.OK, Severity.OK),
    ]

    warn, critical, unreadable = time_in_trouble(recent, rollups, resolution=60, since=START, until=NOW)

    assert (warn, critical, unreadable) == (15 * MINUTE + 60, 5 * MINUTE + 60, 60)


def test_a_human_acted_on_an_incident_when_they_approved_within_it() -> None:
    incidents = [incident("billing", START, START + HOUR), incident("billing", START + DAY, None)]
    entries = [
        entry(START + 10 * MINUTE, "approved", "p1", "scale", user="U1"),
        entry(START + DAY + 5, "approved", "p2", "scale", user="lagbot", auto=True),  # the policy, not a human
    ]

    assert acted_spans(incidents, entries, now=NOW) == [Span(START, START + HOUR)]


def test_the_group_report_and_worst_first() -> None:
    incidents = [
        incident("billing", START, START + HOUR),
        incident("billing", START + DAY, START + DAY + 3 * HOUR, cause="producer_burst"),
        incident("billing", START + 2 * DAY, START + 2 * DAY + 2 * HOUR),
        incident("billing", START + 6 * DAY, None),
        incident("billing", START - 3 * DAY, START - 2 * DAY),  # before the week
        incident("search", START + DAY, START + DAY + 10 * MINUTE),
    ]
    audit = [entry(START + 5 * MINUTE, "approved", "p1", "scale", user="U1")]

    billing = group_report("prod", "billing", incidents=incidents, trouble=(600.0, 120.0, 0.0), audit=audit,
                           since=START, now=NOW)  # fmt: skip
    search = group_report("prod", "search", incidents=incidents, trouble=(60.0, 0.0, 0.0), audit=[],
                          since=START, now=NOW)  # fmt: skip

    assert (billing.incidents, billing.open_now, billing.acted) == (4, 1, 1)
    assert billing.mttr == 2 * HOUR  # (1 + 3 + 2) / 3 hours
    assert billing.causes == (("slow_consumer", 3), ("producer_burst", 1))
    assert (search.incidents, search.mttr) == (1, 10 * MINUTE)
    assert [r.group for r in worst_first([search, billing])] == ["billing", "search"]
