"""The words of a channel's digest and its chart (lagbot.slack.digest), and of the history charts' axis
(lagbot.slack.history_chart).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, tzinfo

from lagbot.core.messages import (
    behind,
    clock,
    count,
    duration,
    slack_escape,
    slack_user,
)
from lagbot.core.model import GroupVerdict, Trend
from lagbot.slack.wording.incidents import SEVERITY_EMOJI, TREND_ARROW

DIGEST_STATUS_ORDER = ("ERR", "STOP", "REWIND", "STALL", "WARN", "OK")


def digest_header(now: float, tz: tzinfo, period: float) -> str:
    return f"Kafka lag digest · last {duration(period)} · {datetime.fromtimestamp(now, tz).strftime('%a %d %b %H:%M')}"


def digest_status_counts(counts: Sequence[tuple[str, int]], total: int) -> str:
    if total == 0:
        return "No consumer group is routed to this channel."
    shown = " · ".join(f"{n:,} {status}" for status, n in counts if n)
    return f"*{total:,} group{'s' if total != 1 else ''}*: {shown}"


def digest_worst_title(shown: int) -> str:
    return f"*Worst {shown} by lag in seconds*, against 24 h before"


def digest_no_lag() -> str:
    return "No group is behind."


def digest_worst_line(
    rank: int, v: GroupVerdict, before_seconds: float | None, before_lag: int | None, trend: Trend | None
) -> str:
    if v.max_lag_seconds is not None:
        now = f"*{behind(v.max_lag_seconds)}* behind, lag {count(v.total_lag)}"
    else:
        now = f"lag *{count(v.total_lag)}*, time behind unknown"
    line = f"{rank}. `{slack_escape(v.group)}` on {slack_escape(v.cluster)}: {now} ({v.status.name})"
    if trend is None:
        return f"{line} · no data 24 h ago"
    then = f"lag {count(before_lag)}"
    if before_seconds is not None:
        then = f"{behind(before_seconds)} behind, {then}"
    return f"{line} · {TREND_ARROW[trend]} vs 24 h ago: {then}"


def digest_incidents_title(period: float, opened: int, resolved: int, still_open: int) -> str:
    return f"*Incidents*, last {duration(period)}: {opened:,} opened, {resolved:,} resolved, {still_open:,} still open"


def digest_incident_line(
    cluster: str, group: str, severity: str, opened_at: float, resolved_at: float | None, peak_lag: int | None,
    now: float, tz: tzinfo,
) -> str:  # fmt: skip
    emoji = SEVERITY_EMOJI.get(severity.lower(), ":white_circle:")
    line = f"{emoji} `{slack_escape(group)}` on {slack_escape(cluster)} ({slack_escape(severity.lower())}) · "
    line += f"opened {clock(opened_at, tz)} · "
    if resolved_at is None:
        line += f"*still open* after {duration(now - opened_at)}"
    else:
        line += f"resolved {clock(resolved_at, tz)} after {duration(resolved_at - opened_at)}"
    return line + f" · peak lag {count(peak_lag)}"


def digest_no_incidents() -> str:
    return "No incidents."


def digest_remediations_title(period: float, run: int) -> str:
    return f"*Remediations*, last {duration(period)}: {run:,} run"


def digest_remediation_line(
    cluster: str, group: str, action: str, requested_by: str, approved_by: Sequence[str], at: float, result: str,
    tz: tzinfo,
) -> str:  # fmt: skip
    approval = f"approved by {', '.join(slack_user(a) for a in approved_by)}" if approved_by else "no approval needed"
    return (
        f"{clock(at, tz)} · _{slack_escape(action)}_ on `{slack_escape(group)}` ({slack_escape(cluster)}) · "
        f"requested by {slack_user(requested_by)}, {approval} · {slack_escape(result)}"
    )


def digest_no_remediations() -> str:
    return "No remediations run."


def digest_more(n: int) -> str:
    return f"… and {n:,} more"


def digest_context(now: float, tz: tzinfo, chart: bool) -> str:
    stamp = f"As of {datetime.fromtimestamp(now, tz).strftime('%a %d %b %Y %H:%M')} ({tz})"
    return stamp + (" · the worst groups' lag over 24 h is charted in the thread" if chart else "")


def digest_fallback(period: float, total: int, counts: Sequence[tuple[str, int]], incidents: int, runs: int) -> str:
    troubled = ", ".join(f"{n:,} {status}" for status, n in counts if n and status != "OK")
    groups = f"{total:,} group{'s' if total != 1 else ''}" + (f" ({troubled})" if troubled else "")
    return f"Kafka lag digest, last {duration(period)}: {groups}, {incidents:,} incident(s), {runs:,} remediation(s)"


def digest_chart_alt(labels: Sequence[str]) -> str:
    return "Line chart of consumer lag (messages) over the last 24 h for " + (", ".join(labels) or "no group")


def digest_chart_axes(tz: tzinfo) -> tuple[str, str]:
    """(x label, y label) of the digest chart."""
    return f"time of day ({tz})", "lag (messages)"


def digest_chart_empty() -> str:
    return "no lag history in the last 24 h"


def history_chart_x_axis(tz: tzinfo) -> str:
    return f"day ({tz})"
