"""The daily digest of a channel, composed: groups by status, the worst groups against 24 h before, incidents,
remediations, and a chart of the worst groups' lag over the last 24 h in the digest's thread.

Pure functions build it (`build_digest`, `lag_chart`, `now` and the zone passed in); `compose_digest` reads
the history store for the few groups it shows; lagbot.service.digest posts it. The message stays
within Slack's limits for any number of groups, incidents and remediations: ten blocks at most, each
section under 3,000 characters, long lists cut with "and N more". Wording lives in lagbot.slack.wording.

Inputs the caller fills from its stores: the latest verdicts of the groups routed to the channel,
`IncidentSummary` (from the incident store) and `RemediationSummary` (from the audit log).
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Any

from slack_sdk.models.blocks import Block, ContextBlock, DividerBlock, HeaderBlock, SectionBlock
from slack_sdk.models.blocks.basic_components import MarkdownTextObject, PlainTextObject

from lagbot.core import messages
from lagbot.core.digest_config import DAY, DigestConfig
from lagbot.core.model import GroupVerdict, Status, Trend
from lagbot.service.digest import ComposedDigest, IncidentSummary, RemediationSummary
from lagbot.service.history import HistoryStore, LagPoint
from lagbot.service.slack_message import SlackMessage
from lagbot.slack.render import MAX_BLOCKS, MAX_SECTION_TEXT, clip, message
from lagbot.slack.wording import digests as wording

WORST_SHOWN = 5
"""Groups listed as the worst, and lines drawn in the chart."""
COMPARE_TOLERANCE = 30 * 60.0
"""A point within this many seconds of 'now - 24 h' stands for '24 h before'; none nearer: 'no data'."""
STEADY_WITHIN = 0.10
"""Against 24 h before, lag within 10% (of the larger value) counts as steady (→)."""
MAX_LIST_LINES = 15
"""Incident and remediation lines shown before 'and N more'."""
MAX_LINE = 600
"""One list line at most (a very long group name is cut rather than crowding out the others)."""
MAX_HEADER = 150
CHART_SPAN = DAY
SeriesKey = tuple[str, str]
"""(cluster, group)."""


@dataclass(frozen=True, slots=True)
class Comparison:
    """A worst group now, and its history point nearest to 24 h before (None: no data then)."""

    verdict: GroupVerdict
    before: LagPoint | None

    @property
    def trend(self) -> Trend | None:
        """Growing, shrinking or steady against 24 h before; None without comparable numbers."""
        if self.before is None:
            return None
        now_s, then_s = self.verdict.max_lag_seconds, self.before.max_lag_seconds
        if now_s is not None and then_s is not None:
            return compare(now_s, then_s)
        now_n, then_n = self.verdict.total_lag, self.before.total_lag
        if now_n is not None and then_n is not None:
            return compare(now_n, then_n)
        return None


# ---------------------------------------------------------------------------------------------------
# Choosing what to show
# ---------------------------------------------------------------------------------------------------


def is_behind(v: GroupVerdict) -> bool:
    """A readable group with some lag (in seconds or in messages)."""
    return v.status is not Status.ERR and ((v.max_lag_seconds or 0) > 0 or (v.total_lag or 0) > 0)


def worst(verdicts: Iterable[GroupVerdict], limit: int = WORST_SHOWN) -> list[GroupVerdict]:
    """The groups furthest behind: by lag in seconds (unknown after known), then lag in messages, then name."""
    behind = [v for v in verdicts if is_behind(v)]
    behind.sort(key=lambda v: (v.max_lag_seconds is None, -(v.max_lag_seconds or 0), -(v.total_lag or 0),
                               v.cluster, v.group))  # fmt: skip
    return behind[:limit]


def compare(now: float, then: float) -> Trend:
    """Steady within STEADY_WITHIN of the larger value, else growing or shrinking."""
    if abs(now - then) <= STEADY_WITHIN * max(abs(now), abs(then)):
        return Trend.STEADY
    return Trend.GROWING if now > then else Trend.SHRINKING


def point_near(points: Iterable[LagPoint], at: float, tolerance: float = COMPARE_TOLERANCE) -> LagPoint | None:
    """The point with a known lag nearest to `at` within `tolerance` (the earlier on a tie), else None."""
    known = [
        p for p in points if abs(p.at - at) <= tolerance and (p.total_lag is not None or p.max_lag_seconds is not None)
    ]
    return min(known, key=lambda p: (abs(p.at - at), p.at), default=None)


def status_counts(verdicts: Iterable[GroupVerdict]) -> list[tuple[str, int]]:
    """(status, groups) for every status, worst first."""
    counted = {name: 0 for name in wording.DIGEST_STATUS_ORDER}
    for v in verdicts:
        counted[v.status.name] += 1
    return list(counted.items())


def in_period(incident: IncidentSummary, since: float, now: float) -> bool:
    """An incident open at some time within [since, now]."""
    return incident.opened_at <= now and (incident.resolved_at is None or incident.resolved_at >= since)


def incidents_shown(incidents: Iterable[IncidentSummary], since: float, now: float) -> list[IncidentSummary]:
    """Incidents of the period: still open first, then the most recently opened first."""
    found = [i for i in incidents if in_period(i, since, now)]
    return sorted(found, key=lambda i: (i.resolved_at is not None, -i.opened_at, i.cluster, i.group))


def remediations_shown(runs: Iterable[RemediationSummary], since: float, now: float) -> list[RemediationSummary]:
    """Remediations run within [since, now], the most recent first."""
    return sorted((r for r in runs if since <= r.at <= now), key=lambda r: (-r.at, r.cluster, r.group))


# ---------------------------------------------------------------------------------------------------
# The message
# ---------------------------------------------------------------------------------------------------


def fit_lines(title: str, lines: Sequence[str], *, limit: int = MAX_SECTION_TEXT, most: int = MAX_LIST_LINES) -> str:
    """`title` then as many of `lines` as fit in `limit` characters (and at most `most`), then 'and N more'."""
    text = title
    for shown, line in enumerate(lines):
        rest = len(lines) - shown
        candidate = f"{text}\n{clip(line, MAX_LINE)}"
        room_for_more = len(candidate) + 1 + len(wording.digest_more(rest)) <= limit
        if shown == most or not (room_for_more or (rest == 1 and len(candidate) <= limit)):
            return f"{text}\n{wording.digest_more(rest)}"
        text = candidate
    return text


def section(text: str) -> SectionBlock:
    return SectionBlock(text=MarkdownTextObject(text=clip(text, MAX_SECTION_TEXT)))


def build_digest(
    *,
    verdicts: Sequence[GroupVerdict],
    series: Mapping[SeriesKey, Sequence[LagPoint]],
    incidents: Iterable[IncidentSummary],
    remediations: Iterable[RemediationSummary],
    now: float,
    tz: tzinfo,
    period: float = DAY,
    chart: bool | None = None,
) -> SlackMessage:
    """The digest message of a channel: fallback text and blocks.

    Args:
        verdicts: the latest verdict of every group routed to the channel.
        series: history points per (cluster, group); only the worst groups' points near `now - 24 h` are used.
        incidents, remediations: any; those of the period `[now - period, now]` are shown.
        chart: whether a chart follows in the thread (default: when some group is behind).
    """
    since = now - period
    counts = status_counts(verdicts)
    comparisons = [Comparison(v, point_near(series.get((v.cluster, v.group), ()), now - DAY)) for v in worst(verdicts)]
    shown_incidents = incidents_shown(incidents, since, now)
    shown_runs = remediations_shown(remediations, since, now)
    charted = bool(comparisons) if chart is None else chart
    blocks: list[Block] = [
        HeaderBlock(text=PlainTextObject(text=clip(wording.digest_header(now, tz, period), MAX_HEADER))),
        section(wording.digest_status_counts(counts, len(verdicts))),
        section(worst_text(comparisons)),
        DividerBlock(),
        section(incidents_text(shown_incidents, since, now, tz, period)),
        DividerBlock(),
        section(remediations_text(shown_runs, tz, period)),
        ContextBlock(elements=[MarkdownTextObject(text=wording.digest_context(now, tz, charted))]),
    ]
    assert len(blocks) <= MAX_BLOCKS
    fallback = wording.digest_fallback(period, len(verdicts), counts, len(shown_incidents), len(shown_runs))
    return message(fallback, blocks)


def worst_text(comparisons: Sequence[Comparison]) -> str:
    if not comparisons:
        return wording.digest_no_lag()
    lines = []
    for rank, c in enumerate(comparisons, start=1):
        before_s = c.before.max_lag_seconds if c.before else None
        before_n = c.before.total_lag if c.before else None
        lines.append(clip(wording.digest_worst_line(rank, c.verdict, before_s, before_n, c.trend), MAX_LINE))
    return fit_lines(wording.digest_worst_title(len(comparisons)), lines)


def incidents_text(shown: Sequence[IncidentSummary], since: float, now: float, tz: tzinfo, period: float) -> str:
    opened = sum(1 for i in shown if i.opened_at >= since)
    resolved = sum(1 for i in shown if i.resolved_at is not None and since <= i.resolved_at <= now)
    still_open = sum(1 for i in shown if i.resolved_at is None)
    title = wording.digest_incidents_title(period, opened, resolved, still_open)
    if not shown:
        return f"{title}\n{wording.digest_no_incidents()}"
    lines = [
        wording.digest_incident_line(i.cluster, i.group, i.severity, i.opened_at, i.resolved_at, i.peak_lag, now, tz)
        for i in shown
    ]
    return fit_lines(title, lines)


def remediations_text(shown: Sequence[RemediationSummary], tz: tzinfo, period: float) -> str:
    title = wording.digest_remediations_title(period, len(shown))
    if not shown:
        return f"{title}\n{wording.digest_no_remediations()}"
    lines = [
        wording.digest_remediation_line(r.cluster, r.group, r.action, r.requested_by, r.approved_by, r.at, r.result, tz)
        for r in shown
    ]
    return fit_lines(title, lines)


# ---------------------------------------------------------------------------------------------------
# History and the chart
# ---------------------------------------------------------------------------------------------------


def load_series(
    history: HistoryStore, groups: Iterable[GroupVerdict], *, now: float
) -> dict[SeriesKey, list[LagPoint]]:
    """The last 24 h (and the comparison's margin) of history of `groups`: one read per cluster."""
    by_cluster: dict[str, list[str]] = {}
    for v in groups:
        by_cluster.setdefault(v.cluster, []).append(v.group)
    since = now - CHART_SPAN - COMPARE_TOLERANCE
    found: dict[SeriesKey, list[LagPoint]] = {}
    for cluster, names in by_cluster.items():
        for group, points in history.series_many(cluster, names, since, now).items():
            found[(cluster, group)] = points
    return found


def chart_series(
    groups: Iterable[GroupVerdict], series: Mapping[SeriesKey, Sequence[LagPoint]], *, now: float
) -> dict[str, list[tuple[float, int | None]]]:
    """What `lag_chart` draws: per group ('group (cluster)'), its (time, lag) over the last 24 h."""
    return {
        f"{v.group} ({v.cluster})": [
            (p.at, p.total_lag) for p in series.get((v.cluster, v.group), ()) if p.at >= now - CHART_SPAN
        ]
        for v in groups
    }


def legend_label(label: str) -> str:
    """A name as matplotlib shows it literally: '$' would start math text; cut to 60 characters."""
    return clip(label, 60).replace("$", r"\$")


def lag_chart(series: Mapping[str, Sequence[tuple[float, int | None]]], *, now: float, tz: tzinfo) -> bytes:
    """A PNG line chart of lag (messages) over [now - 24 h, now], one line per series (the first five).

    None values are gaps (unknown lag, e.g. the cluster was unreachable), never zeros. The x axis shows
    the time of day in `tz`; the y axis human counts (12,000, 4.2 M). Drawn with matplotlib's Agg canvas
    directly (no pyplot, no display, no global state), imported here so the CLI does not pay for it.
    """
    from matplotlib import dates
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    figure = Figure(figsize=(10, 4.5), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    lines, labels = [], []
    for label, points in list(series.items())[:WORST_SHOWN]:
        times: Any = [datetime.fromtimestamp(at, tz) for at, _ in points]  # matplotlib converts datetimes
        values = [math.nan if lag is None else float(lag) for _, lag in points]
        (line,) = axes.plot(times, values, linewidth=1.6)
        lines.append(line)
        labels.append(legend_label(label))
    if lines:
        axes.legend(lines, labels, loc="upper left", fontsize="small")  # explicit: names starting with _ are kept
    else:
        axes.text(0.5, 0.5, wording.digest_chart_empty(), transform=axes.transAxes, ha="center", va="center")
    start: Any = datetime.fromtimestamp(now - CHART_SPAN, tz)
    end: Any = datetime.fromtimestamp(now, tz)
    axes.set_xlim(start, end)
    axes.set_ylim(0, max(axes.get_ylim()[1], 10))  # whole messages: no 0.2-message ticks on a flat chart
    axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    untyped: Any = dates  # matplotlib.dates has no annotations
    axes.xaxis.set_major_locator(untyped.HourLocator(byhour=range(0, 24, 3), tz=tz))
    axes.xaxis.set_major_formatter(untyped.DateFormatter("%H:%M", tz=tz))
    axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _: messages.count(value)))
    x_label, y_label = wording.digest_chart_axes(tz)
    axes.set(title=messages.digest_chart_title(), xlabel=x_label, ylabel=y_label)
    axes.grid(alpha=0.3)
    out = io.BytesIO()
    figure.savefig(out, format="png", facecolor="white")
    return out.getvalue()


# ---------------------------------------------------------------------------------------------------
# Putting it together and posting
# ---------------------------------------------------------------------------------------------------


def compose_digest(
    *,
    config: DigestConfig,
    verdicts: Sequence[GroupVerdict],
    history: HistoryStore,
    incidents: Iterable[IncidentSummary],
    remediations: Iterable[RemediationSummary],
    now: float,
) -> ComposedDigest:
    """The digest of `config.channel`: reads the history of the worst groups only, then builds both parts."""
    shown = worst(verdicts)
    series = load_series(history, shown, now=now)
    built = build_digest(
        verdicts=verdicts, series=series, incidents=incidents, remediations=remediations,
        now=now, tz=config.zone, period=config.period,
    )  # fmt: skip
    drawn = chart_series(shown, series, now=now)
    png = lag_chart(drawn, now=now, tz=config.zone) if shown else None
    return ComposedDigest(built, png, wording.digest_chart_alt(list(drawn)))
