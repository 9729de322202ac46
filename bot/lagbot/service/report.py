"""The weekly report: per group, its incidents, time in trouble, time to resolve, causes, and what fixed it.

Pure functions over what lagbot already keeps (`now` passed in):
- the incidents (lagbot.service.incidents, kept as long as the history's rollups);
- the lag history (minute points, then rollups: lagbot.service.rollups), for the time spent at WARN, at CRITICAL
  or PAGE, and unreadable;
- the audit trail (lagbot.service.audit): who approved what, and each remediation's verification ("verified"
  entries: resolved, no_change, worse) or failure.

`group_report` is one group; `worst_first` orders them (most incidents, then most time in trouble, then slowest to
resolve). A remediation "worked" when its last verification said resolved, "did not" when it said no change or
worse, or the run failed; one still improving when the report was made counts as neither.
"""

from __future__ import annotations

import itertools
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from lagbot.core.model import Severity, Status
from lagbot.service.audit import BOT_USER, AuditEntry
from lagbot.service.backtest import Span
from lagbot.service.history import LagPoint
from lagbot.service.incidents import Incident
from lagbot.service.rollups import Rollup, trouble_seconds

"""The audit trail's user for the bot's own actions (lagbot.service.audit)."""
WORKED = ("resolved",)
DID_NOT = ("no_change", "worse")


@dataclass(frozen=True)
class ActionOutcome:
    """How one kind of remediation did for a group: runs, how many resolved the lag, how many did not."""

    action: str
    runs: int
    worked: int
    did_not: int


@dataclass(frozen=True)
class GroupReport:
    cluster: str
    group: str
    incidents: int
    open_now: int
    warn_seconds: float
    critical_seconds: float
    unreadable_seconds: float
    mttr: float | None
    """Mean time to resolve of the incidents resolved in the period (None: none resolved)."""
    causes: tuple[tuple[str, int], ...]
    """Primary causes seen, with how many incidents stated each, most frequent first."""
    actions: tuple[ActionOutcome, ...]
    acted: int
    """Incidents in which a human approved a remediation."""

    @property
    def trouble_seconds(self) -> float:
        return self.warn_seconds + self.critical_seconds


def in_period(incident: Incident, since: float, now: float) -> bool:
    """The incident was open at some time in [since, now]."""
    return incident.opened_at <= now and (incident.resolved_at is None or incident.resolved_at >= since)


def time_in_trouble(
    points: Sequence[LagPoint], rollups: Sequence[Rollup], *, resolution: float, since: float, until: float
) -> tuple[float, float, float]:
    """(WARN, CRITICAL+, unreadable) seconds within [since, until].

    A minute point stands for the time until the next one (checks may be further apart than `resolution`), at most
    twice the usual gap between points (the median; `resolution` with fewer than two points): a stop of the bot is
    no time in trouble. Before the first minute point, the rollups count in proportion of their points.
    """
    warn = critical = unreadable = 0.0
    shown = [p for p in points if since <= p.at <= until]
    first = shown[0].at if shown else float("inf")
    for rollup in rollups:
        if rollup.end <= first and rollup.end > since and rollup.start <= until:
            w, c, u = trouble_seconds(rollup)
            warn, critical, unreadable = warn + w, critical + c, unreadable + u
    for point, spent in zip(shown, point_weights(shown, resolution), strict=True):
        if point.status is Status.ERR:
            unreadable += spent
        elif point.severity is Severity.WARN:
            warn += spent
        elif point.severity >= Severity.CRITICAL:
            critical += spent
    return warn, critical, unreadable


def point_weights(points: Sequence[LagPoint], resolution: float) -> list[float]:
    """The seconds each point stands for (see `time_in_trouble`)."""
    gaps = [b.at - a.at for a, b in itertools.pairwise(points)]
    usual = statistics.median(gaps) if gaps else resolution
    usual = max(usual, resolution)
    return [min(gap, 2 * usual) for gap in gaps] + ([usual] if points else [])


def outcomes(entries: Iterable[AuditEntry]) -> tuple[ActionOutcome, ...]:
    """Per action, from the audit entries of one group: runs (executions), and the last word on each run."""
    last: dict[str, str] = {}
    action_of: dict[str, str] = {}
    for entry in sorted(entries, key=lambda e: e.at):
        if entry.proposal is None or entry.action is None:
            continue
        if entry.event == "succeeded":  # the execution ended well: verification follows
            action_of[entry.proposal] = entry.action
            last.setdefault(entry.proposal, "ran")
        elif entry.event == "verified":
            action_of.setdefault(entry.proposal, entry.action)
            last[entry.proposal] = str(entry.detail.get("progress", ""))
        elif entry.event == "failed":
            action_of.setdefault(entry.proposal, entry.action)
            last[entry.proposal] = "failed"
    found: dict[str, list[str]] = {}
    for proposal, action in action_of.items():
        found.setdefault(action, []).append(last.get(proposal, "ran"))
    return tuple(
        ActionOutcome(
            action=action,
            runs=len(words),
            worked=sum(w in WORKED for w in words),
            did_not=sum(w in DID_NOT or w == "failed" for w in words),
        )
        for action, words in sorted(found.items())
    )


def acted_spans(incidents: Sequence[Incident], entries: Iterable[AuditEntry], *, now: float) -> list[Span]:
    """The incidents (as spans) within which a human approved a remediation of the group."""
    approvals = [e.at for e in entries if e.event == "approved" and e.user != BOT_USER and not e.detail.get("auto")]
    spans = [Span(i.opened_at, i.resolved_at) for i in incidents]
    return [s for s in spans if any(s.start <= at <= (s.end if s.end is not None else now) for at in approvals)]


def group_report(
    cluster: str,
    group: str,
    *,
    incidents: Sequence[Incident],
    trouble: tuple[float, float, float],
    audit: Sequence[AuditEntry],
    since: float,
    now: float,
) -> GroupReport:
    """One group's part of the report over [since, now]."""
    mine = [i for i in incidents if i.cluster == cluster and i.group == group and in_period(i, since, now)]
    resolved = [i.duration(now) for i in mine if i.resolved_at is not None]
    causes = Counter(i.primary_cause for i in mine if i.primary_cause)
    entries = [e for e in audit if e.cluster == cluster and e.group == group and since <= e.at <= now]
    return GroupReport(
        cluster=cluster,
        group=group,
        incidents=len(mine),
        open_now=sum(i.is_open for i in mine),
        warn_seconds=trouble[0],
        critical_seconds=trouble[1],
        unreadable_seconds=trouble[2],
        mttr=sum(resolved) / len(resolved) if resolved else None,
        causes=tuple(sorted(causes.items(), key=lambda kv: (-kv[1], kv[0]))),
        actions=outcomes(entries),
        acted=len(acted_spans(mine, entries, now=now)),
    )


def worst_first(reports: Iterable[GroupReport]) -> list[GroupReport]:
    """Most incidents first, then most time in trouble, then slowest to resolve, then by name."""
    return sorted(
        reports,
        key=lambda r: (-r.incidents, -r.critical_seconds, -r.trouble_seconds, -(r.mttr or 0.0), r.cluster, r.group),
    )


def worth_reporting(report: GroupReport) -> bool:
    """A group with something to say: an incident, time in trouble, a remediation, or time unreadable."""
    return bool(report.incidents or report.trouble_seconds or report.actions or report.unreadable_seconds)
