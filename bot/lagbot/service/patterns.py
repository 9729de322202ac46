"""Recurring patterns in a group's history: lag that rises and drains at about the same time of day (or week).

Pure functions over history points (`now` and the time zone passed in):

1. `episodes`: the runs of points whose lag stands clearly above the group's usual level (`elevated_level`: the
   median plus a multiple of the median absolute deviation, and never below `min_lag`). A group that is always a
   little behind has a high median and a small spread: its noise is no episode.
2. `find_patterns`: episodes that start within `tolerance` of the same time of day, on at least `min_days` of the
   last `days` days, make a daily pattern; those on the same weekday and time, in at least `min_weeks` of the last
   `weeks` weeks (and not already a daily pattern), a weekly one. A pattern states its usual start, peak and time to
   drain, and on how many of the days it was seen.
3. `match`: whether an incident (its start and its peak) is one more occurrence of a pattern: it started within the
   tolerance of the usual start and its peak is at most `peak_factor` times the usual one. A real incident inside
   the pattern's hour that is much larger does not match.

Naming a pattern never silences anything: lagbot.service.incidents decides incidents as before; the pattern is
only said in the thread (and may suggest a maintenance window).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo

from lagbot.service import wording
from lagbot.service.history import LagPoint

DAY = 86_400.0
WEEK = 7 * DAY


@dataclass(frozen=True)
class PatternRules:
    """How a recurring pattern is recognised."""

    days: int = 7
    """Daily patterns: the last this many days are looked at."""
    min_days: int = 4
    """... and the episode must have been seen on at least this many of them."""
    weeks: int = 4
    min_weeks: int = 3
    tolerance: float = 1800.0
    """Episodes starting within this many seconds of each other (as a time of day or week) are the same."""
    spread: float = 6.0
    """An episode's lag is above median + spread * MAD ..."""
    min_lag: int = 1_000
    """... and above this many messages."""
    min_points: int = 2
    """An episode lasts at least this many points (one spike is no episode)."""
    peak_factor: float = 3.0
    """An incident matches a pattern when its peak is at most this many times the pattern's usual peak."""


@dataclass(frozen=True)
class Episode:
    start: float
    end: float
    """The time of the first point back at the usual level (or of the last point, if the history ends high)."""
    peak: int


@dataclass(frozen=True)
class Pattern:
    """A recurring episode: `period` DAY (daily) or WEEK (weekly), at `offset` seconds into the day (or week,
    from Monday 00:00) in the time zone it was found in."""

    period: float
    offset: float
    peak: int
    """The usual (median) peak in messages."""
    drains_in: float
    """The usual (median) time from the start to the drain, in seconds."""
    seen: int
    out_of: int

    @property
    def daily(self) -> bool:
        return self.period == DAY

    @property
    def drains_by(self) -> float:
        """Offset (into the day or week) by which it usually drained."""
        return (self.offset + self.drains_in) % self.period


def elevated_level(points: Sequence[LagPoint], rules: PatternRules) -> float:
    """The lag above which a point is elevated: median + spread * MAD, at least `min_lag`."""
    lags = [p.total_lag for p in points if p.total_lag is not None]
    if not lags:
        return math.inf
    middle = statistics.median(lags)
    mad = statistics.median(abs(x - middle) for x in lags)
    return max(middle + rules.spread * mad, float(rules.min_lag))


def episodes(points: Sequence[LagPoint], rules: PatternRules) -> list[Episode]:
    """The runs of elevated points (at least `min_points` long), oldest first."""
    level = elevated_level(points, rules)
    found: list[Episode] = []
    run: list[LagPoint] = []
    for point in points:
        if point.total_lag is not None and point.total_lag > level:
            run.append(point)
            continue
        if point.total_lag is None:
            continue  # unknown lag neither starts nor ends a run
        if len(run) >= rules.min_points:
            found.append(Episode(run[0].at, point.at, max(p.total_lag or 0 for p in run)))
        run = []
    if len(run) >= rules.min_points:
        found.append(Episode(run[0].at, run[-1].at, max(p.total_lag or 0 for p in run)))
    return found


def offset_in(at: float, period: float, tz: tzinfo) -> float:
    """Seconds since local midnight (period DAY) or since local Monday 00:00 (period WEEK)."""
    local = datetime.fromtimestamp(at, tz)
    seconds = local.hour * 3600 + local.minute * 60 + local.second
    return float(seconds if period == DAY else local.weekday() * DAY + seconds)


def _circular_gap(a: float, b: float, period: float) -> float:
    gap = abs(a - b) % period
    return min(gap, period - gap)


def _slot(at: float, period: float, tz: tzinfo) -> int:
    """Which day (or week) an episode belongs to, counted in the local calendar."""
    local = datetime.fromtimestamp(at, tz).date()
    return local.toordinal() if period == DAY else (local.toordinal() - local.weekday()) // 7


def _clusters(found: Sequence[Episode], period: float, tz: tzinfo, tolerance: float) -> list[list[Episode]]:
    """Episodes grouped by start offset: each joins the first group whose first episode is within `tolerance`."""
    groups: list[list[Episode]] = []
    for episode in sorted(found, key=lambda e: offset_in(e.start, period, tz)):
        offset = offset_in(episode.start, period, tz)
        home = next((g for g in groups if _circular_gap(offset_in(g[0].start, period, tz), offset, period)
                     <= tolerance), None)  # fmt: skip
        if home is None:
            groups.append([episode])
        else:
            home.append(episode)
    return groups


def _pattern(group: Sequence[Episode], period: float, tz: tzinfo, out_of: int) -> Pattern:
    offsets = sorted(offset_in(e.start, period, tz) for e in group)
    return Pattern(
        period=period,
        offset=offsets[(len(offsets) - 1) // 2],
        peak=round(statistics.median(e.peak for e in group)),
        drains_in=statistics.median(e.end - e.start for e in group),
        seen=len({_slot(e.start, period, tz) for e in group}),
        out_of=out_of,
    )


def find_patterns(points: Sequence[LagPoint], *, now: float, tz: tzinfo, rules: PatternRules) -> list[Pattern]:
    """The daily and weekly patterns of a group's history (points oldest first), the most regular first."""
    found = episodes(points, rules)
    daily_since = now - rules.days * DAY
    daily = [
        _pattern(g, DAY, tz, rules.days)
        for g in _clusters([e for e in found if e.start >= daily_since], DAY, tz, rules.tolerance)
        if len({_slot(e.start, DAY, tz) for e in g}) >= rules.min_days
    ]
    weekly_since = now - rules.weeks * WEEK
    weekly = [
        _pattern(g, WEEK, tz, rules.weeks)
        for g in _clusters([e for e in found if e.start >= weekly_since], WEEK, tz, rules.tolerance)
        if len({_slot(e.start, WEEK, tz) for e in g}) >= rules.min_weeks
        and not any(_circular_gap(d.offset, offset_in(g[0].start, DAY, tz), DAY) <= rules.tolerance for d in daily)
    ]
    return sorted([*daily, *weekly], key=lambda p: (-p.seen / p.out_of, p.period, p.offset))


def match(patterns: Sequence[Pattern], started: float, peak: int | None, *, tz: tzinfo,
          rules: PatternRules) -> Pattern | None:  # fmt: skip
    """The pattern an incident (its start and peak so far) is one more occurrence of, or None."""
    for pattern in patterns:
        near = _circular_gap(offset_in(started, pattern.period, tz), pattern.offset, pattern.period) <= rules.tolerance
        usual = peak is None or peak <= rules.peak_factor * max(pattern.peak, 1)
        if near and usual:
            return pattern
    return None


def describe(pattern: Pattern) -> str:
    """'most nights from 02:00, peak ~40k, drains in ~20 min; 6 of the last 7 nights'"""
    return wording.pattern_text(
        pattern.daily, pattern.offset, pattern.peak, pattern.drains_in, pattern.seen, pattern.out_of
    )


def as_usual(pattern: Pattern) -> str:
    """What an incident's thread says of the pattern it matches: 'as on 6 of the last 7 nights; usually drains by
    02:20', and the maintenance window that may fit it (a suggestion: nothing is silenced)."""
    said = wording.pattern_match_text(pattern.daily, pattern.offset, pattern.drains_by, pattern.seen, pattern.out_of)
    return f"{said} ({wording.pattern_window_hint(pattern.daily, pattern.offset, pattern.drains_by)})"
