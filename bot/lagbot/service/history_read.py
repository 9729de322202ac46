"""A group's past as lagbot keeps it, read once: what `lagbot history`, `lagbot thresholds suggest`, `/lag history`,
`/lag report` and the weekly report are made from.

`read_group` and `read_groups` do the reading (Redis, through the stores); everything after is pure:
- `daily_rows`: one row per local day (peak lag and seconds, time at WARN and CRITICAL+, incidents opened);
- `suggest`: the thresholds proposal from the healthy distribution, and the current and proposed WARN levels
  backtested side by side on the stored history (lagbot.service.backtest), with the YAML snippet;
- `weekly_report`: the report's groups, worst first (lagbot.service.report).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo

from lagbot.core.config import IncidentConfig, Level
from lagbot.service import backtest, report, wording
from lagbot.service.audit import AuditEntry, AuditTrail
from lagbot.service.backtest import Comparison, Proposal, Span
from lagbot.service.history import HistoryStore, LagPoint
from lagbot.service.incidents import Incident, IncidentStore
from lagbot.service.report import GroupReport
from lagbot.service.rollups import Rollup, TieredHistoryStore, merged_series

AUDIT_READ = 1_000
"""Audit entries read per group (the trail keeps at most this many per group: lagbot.service.audit)."""


@dataclass(frozen=True)
class GroupHistory:
    """One group's stored past over [since, until]."""

    cluster: str
    group: str
    since: float
    until: float
    series: tuple[LagPoint, ...]
    """Minute points, and before them one peak point per rollup (lagbot.service.rollups.merged_series)."""
    minute_points: tuple[LagPoint, ...]
    rollups: tuple[Rollup, ...]
    resolution: float
    incidents: tuple[Incident, ...]
    audit: tuple[AuditEntry, ...]

    def trouble(self) -> tuple[float, float, float]:
        return report.time_in_trouble(
            self.minute_points, self.rollups, resolution=self.resolution, since=self.since, until=self.until
        )

    def incident_spans(self) -> list[Span]:
        return [Span(i.opened_at, i.resolved_at) for i in sorted(self.incidents, key=lambda i: i.opened_at)]

    def acted_spans(self) -> list[Span]:
        return report.acted_spans(self.incidents, self.audit, now=self.until)


def _tiers(history: HistoryStore, cluster: str, groups: Sequence[str], since: float, until: float) -> tuple[
    dict[str, list[LagPoint]], dict[str, list[Rollup]]
]:  # fmt: skip
    if isinstance(history, TieredHistoryStore):
        return (
            history.points.series_many(cluster, groups, since, until),
            history.rollups.rollups_many(cluster, groups, since, until),
        )
    return history.series_many(cluster, groups, since, until), {g: [] for g in groups}


def read_groups(
    history: HistoryStore,
    incidents: IncidentStore,
    audit: AuditTrail | None,
    keys: Iterable[tuple[str, str]],
    *,
    since: float,
    until: float,
) -> list[GroupHistory]:
    """The stored past of each (cluster, group) over [since, until]: one pipelined read per cluster per tier."""
    wanted = sorted(set(keys))
    changed = incidents.changed_since(since)
    found = []
    for cluster in sorted({c for c, _ in wanted}):
        groups = [g for c, g in wanted if c == cluster]
        points, rollups = _tiers(history, cluster, groups, since, until)
        for group in groups:
            mine = tuple(i for i in changed if i.cluster == cluster and i.group == group)
            entries = audit.latest(cluster, group, AUDIT_READ) if audit is not None else []
            found.append(
                GroupHistory(
                    cluster=cluster,
                    group=group,
                    since=since,
                    until=until,
                    series=tuple(merged_series(points[group], rollups[group])),
                    minute_points=tuple(points[group]),
                    rollups=tuple(rollups[group]),
                    resolution=float(history.resolution),
                    incidents=mine,
                    audit=tuple(sorted((e for e in entries if since <= e.at <= until), key=lambda e: e.at)),
                )
            )
    return found


def read_group(
    history: HistoryStore, incidents: IncidentStore, audit: AuditTrail | None, cluster: str, group: str, *,
    since: float, until: float,
) -> GroupHistory:  # fmt: skip
    return read_groups(history, incidents, audit, [(cluster, group)], since=since, until=until)[0]


# ---------------------------------------------------------------------------------------------------
# Day by day
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DayRow:
    day: str
    """The local date, YYYY-MM-DD."""
    peak_lag: int | None
    peak_seconds: float | None
    warn_seconds: float
    critical_seconds: float
    unreadable_seconds: float
    incidents: int


def _day_start(at: float, tz: tzinfo) -> float:
    local = datetime.fromtimestamp(at, tz)
    return local.replace(hour=0, minute=0, second=0, microsecond=0).timestamp()


def daily_rows(past: GroupHistory, tz: tzinfo) -> list[DayRow]:
    """One row per local day of [since, until], oldest first (days without a point included, empty)."""
    rows = []
    start = _day_start(past.since, tz)
    while start <= past.until:
        end = (datetime.fromtimestamp(start, tz) + timedelta(days=1)).timestamp()
        points = [p for p in past.series if start <= p.at < end]
        lags = [p.total_lag for p in points if p.total_lag is not None]
        seconds = [p.max_lag_seconds for p in points if p.max_lag_seconds is not None]
        warn, critical, unreadable = report.time_in_trouble(
            past.minute_points, past.rollups, resolution=past.resolution, since=start, until=end - 1e-3
        )
        rows.append(
            DayRow(
                day=datetime.fromtimestamp(start, tz).date().isoformat(),
                peak_lag=max(lags) if lags else None,
                peak_seconds=max(seconds) if seconds else None,
                warn_seconds=warn,
                critical_seconds=critical,
                unreadable_seconds=unreadable,
                incidents=sum(start <= i.opened_at < end for i in past.incidents),
            )
        )
        start = end
    return rows


def worst_point(points: Iterable[LagPoint]) -> LagPoint | None:
    known = [p for p in points if p.total_lag is not None]
    return max(known, key=lambda p: (p.severity, p.total_lag or 0), default=None)


# ---------------------------------------------------------------------------------------------------
# Thresholds
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Suggestion:
    """The current and proposed WARN levels, each backtested on the same history."""

    cluster: str
    group: str
    proposal: Proposal | None
    current: Level
    proposed: Level | None
    actual: tuple[Span, ...]
    """The incidents actually opened in the history's time."""
    acted: tuple[Span, ...]
    current_result: Comparison
    proposed_result: Comparison | None
    snippet: str | None
    points: int
    first_point: float | None


def suggest(past: GroupHistory, current: Level, incidents: IncidentConfig) -> Suggestion:
    """The proposal and both backtests (pure: nothing is changed anywhere)."""
    actual, acted = past.incident_spans(), past.acted_spans()
    proposal = backtest.propose(past.series, acted)
    current_result = backtest.compare(backtest.replay(past.series, current, incidents), actual, acted)
    proposed = None if proposal is None else backtest.proposed_level(current, proposal)
    proposed_result = (
        None if proposed is None else backtest.compare(backtest.replay(past.series, proposed, incidents), actual, acted)
    )
    return Suggestion(
        cluster=past.cluster,
        group=past.group,
        proposal=proposal,
        current=current,
        proposed=proposed,
        actual=tuple(actual),
        acted=tuple(acted),
        current_result=current_result,
        proposed_result=proposed_result,
        snippet=None if proposed is None else backtest.yaml_snippet(past.cluster, past.group, proposed),
        points=len(past.series),
        first_point=past.series[0].at if past.series else None,
    )


# ---------------------------------------------------------------------------------------------------
# The weekly report
# ---------------------------------------------------------------------------------------------------


def weekly_report(pasts: Iterable[GroupHistory]) -> list[GroupReport]:
    """The groups with something to report, worst first."""
    made = [
        report.group_report(
            p.cluster, p.group, incidents=p.incidents, trouble=p.trouble(), audit=p.audit, since=p.since, now=p.until
        )
        for p in pasts
    ]
    return report.worst_first(r for r in made if report.worth_reporting(r))


def peaks_by_day(past: GroupHistory, tz: tzinfo) -> list[tuple[float, int | None]]:
    """(local midnight, the day's peak lag) for the month's chart."""
    rows = daily_rows(past, tz)
    return [(datetime.fromisoformat(r.day).replace(tzinfo=tz).timestamp(), r.peak_lag) for r in rows]


def _figures(level: Level, result: Comparison) -> tuple[str, int, int, int, int, str]:
    return (
        wording.level_text(level.messages, level.seconds, level.sustained_for, level.growing),
        len(result.would_open),
        len(result.also_opened),
        len(result.missed),
        len(result.missed_acted),
        wording.start_shift([delta for _, delta in result.also_opened]),
    )


def suggestion_table(s: Suggestion) -> list[list[str]]:
    """The current and proposed levels side by side with their backtest counts (header row first)."""
    current = _figures(s.current, s.current_result)
    if s.proposed is None or s.proposed_result is None:
        return [
            wording.suggestion_columns(),
            *([row[0], row[1], "-"] for row in wording.suggestion_rows(current, current)),
        ]
    return [wording.suggestion_columns(), *wording.suggestion_rows(current, _figures(s.proposed, s.proposed_result))]
