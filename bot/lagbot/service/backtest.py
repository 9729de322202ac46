"""Thresholds backtested on a group's own past: a proposal from its healthy distribution, replayed on its history.

Pure functions (nothing here reads Redis or changes a setting):

- `propose`: a WARN level in messages and in seconds from the group's healthy points (those outside the incidents a
  human acted on: bursts that drained by themselves are the group's normal life): a high quantile of each, times a
  margin, rounded up to a round number.
- `replay`: the incidents a WARN level would have opened on the stored points, as lagbot.service.incidents opens
  and resolves them: the level fires where lag (messages or seconds) has been over a limit for `sustained_for`
  (and, with `growing`, is higher than at the start of that time); an incident opens when it fires, resolves after
  `resolve_after` without firing, and trouble within `reopen_within` of its resolution reopens it (same incident).
  Only the WARN level is replayed: it is the one that opens incidents at the default `open_at`.
- `compare`: the replay against the incidents actually opened: which ones it would also have opened and how much
  earlier or later, and which incidents a human acted on (approved a remediation) it would have missed.

The backtest is as fine as the history: minute points for the recent days, one peak per rollup before them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from lagbot.core.config import IncidentConfig, Level
from lagbot.service.history import LagPoint


@dataclass(frozen=True)
class Span:
    """An incident's time: from `start` to `end` (None: still open at the end of the history)."""

    start: float
    end: float | None

    def overlaps(self, other: Span, slack: float = 0.0) -> bool:
        mine = math.inf if self.end is None else self.end
        theirs = math.inf if other.end is None else other.end
        return self.start <= theirs + slack and other.start <= mine + slack


@dataclass(frozen=True)
class Proposal:
    messages: int
    seconds: float
    healthy_points: int
    """How many points the proposal was made from."""


@dataclass(frozen=True)
class Comparison:
    """A replay against what happened."""

    would_open: tuple[Span, ...]
    also_opened: tuple[tuple[Span, float], ...]
    """Actual incidents the replay would also have opened, with the replay's start minus the actual start (s)."""
    missed: tuple[Span, ...]
    """Actual incidents the replay would not have opened."""
    missed_acted: tuple[Span, ...]
    """Of those, the ones a human acted on."""


QUANTILE = 0.999
MARGIN = 1.5
MIN_MESSAGES = 1_000
MIN_SECONDS = 30.0


def round_up(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 times a power of ten that is >= value (value > 0)."""
    if value <= 0:
        return 0.0
    power = 10.0 ** math.floor(math.log10(value))
    for step in (1.0, 2.0, 2.5, 5.0, 10.0):
        if step * power >= value - 1e-9 * power:
            return step * power
    return 10.0 * power  # pragma: no cover  (the loop always returns)


def quantile(values: Sequence[float], q: float) -> float:
    """The q-quantile by the nearest rank (no interpolation: a value that was seen)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def healthy(points: Sequence[LagPoint], acted: Sequence[Span]) -> list[LagPoint]:
    """Points with a known lag outside the incidents a human acted on."""
    return [p for p in points if p.total_lag is not None and not any(Span(p.at, p.at).overlaps(i) for i in acted)]


def propose(points: Sequence[LagPoint], acted: Sequence[Span]) -> Proposal | None:
    """WARN limits from the healthy points: quantile * margin, rounded up (None: no healthy point)."""
    calm = healthy(points, acted)
    if not calm:
        return None
    lags = [float(p.total_lag or 0) for p in calm]
    seconds = [p.max_lag_seconds for p in calm if p.max_lag_seconds is not None]
    messages = max(MIN_MESSAGES, int(round_up(quantile(lags, QUANTILE) * MARGIN)))
    behind = max(MIN_SECONDS, round_up(quantile(seconds, QUANTILE) * MARGIN)) if seconds else MIN_SECONDS
    return Proposal(messages, behind, len(calm))


def over(point: LagPoint, level: Level) -> bool:
    """The point is over one of the level's limits (messages or seconds)."""
    by_messages = level.messages is not None and point.total_lag is not None and point.total_lag >= level.messages
    by_seconds = (
        level.seconds is not None and point.max_lag_seconds is not None and point.max_lag_seconds >= level.seconds
    )
    return by_messages or by_seconds


def firing(points: Sequence[LagPoint], level: Level) -> list[bool]:
    """Per point: the level fires (over a limit for `sustained_for`, growing over that time if asked)."""
    fired = []
    since: int | None = None
    for i, point in enumerate(points):
        if point.total_lag is None:  # unknown lag: neither fires nor breaks the run (as incidents ignore ERR)
            fired.append(False)
            continue
        if not over(point, level):
            since = None
            fired.append(False)
            continue
        since = i if since is None else since
        held = point.at - points[since].at >= level.sustained_for
        grew = not level.growing or (point.total_lag or 0) > (points[since].total_lag or 0) or level.sustained_for == 0
        fired.append(held and grew)
    return fired


def replay(points: Sequence[LagPoint], level: Level, config: IncidentConfig) -> list[Span]:
    """The incidents `level` (as the WARN level) would have opened on `points` (oldest first)."""
    spans: list[Span] = []
    start: float | None = None
    below_since: float | None = None
    resolved: Span | None = None
    for point, fires in zip(points, firing(points, level), strict=True):
        if point.total_lag is None:
            continue
        if start is None:
            if not fires:
                continue
            if resolved is not None and point.at - (resolved.end or point.at) <= config.reopen_within:
                spans.pop()
                start = resolved.start  # reopened: the same incident
            else:
                start = point.at
            below_since = None
            continue
        if fires:
            below_since = None
            continue
        below_since = point.at if below_since is None else below_since
        if point.at - below_since >= config.resolve_after:
            resolved = Span(start, point.at)
            spans.append(resolved)
            start, below_since = None, None
    if start is not None:
        spans.append(Span(start, None))
    return spans


def compare(would: Sequence[Span], actual: Sequence[Span], acted: Sequence[Span], *, slack: float = 0.0) -> Comparison:
    """Which actual incidents the replay also opens (overlapping in time, `slack` allowed), which it misses."""
    also: list[tuple[Span, float]] = []
    missed: list[Span] = []
    for incident in actual:
        twin = next((w for w in would if w.overlaps(incident, slack)), None)
        if twin is None:
            missed.append(incident)
        else:
            also.append((incident, twin.start - incident.start))
    missed_acted = tuple(m for m in missed if any(m.overlaps(a) for a in acted))
    return Comparison(tuple(would), tuple(also), tuple(missed), missed_acted)


def proposed_level(current: Level, proposal: Proposal) -> Level:
    """The current WARN level with the proposal's limits (its sustain and growth kept)."""
    return current.model_copy(update={"messages": proposal.messages, "seconds": proposal.seconds})


def yaml_snippet(cluster: str, group: str, level: Level) -> str:
    """The policy rule (lagbot.policies) that would set this WARN level for the group: to review, never applied."""
    lines = [
        "# A policy rule to review (lagbot never applies it): put it before the rules that match this group,",
        "# or copy its thresholds into the rule that already does (approvers and remediations are not copied).",
        "rules:",
        "  - name: backtested-thresholds",
        f"    match: {{cluster: {_quoted(cluster)}, group: {_quoted(_anchored(group))}}}",
        "    thresholds:",
        "      warn:",
        f"        messages: {level.messages}",
        f"        seconds: {_seconds_text(level.seconds)}",
        f"        sustained_for: {_seconds_text(level.sustained_for)}",
        f"        growing: {'true' if level.growing else 'false'}",
    ]
    return "\n".join(lines) + "\n"


def _seconds_text(value: float | None) -> str:
    if value is None:
        return "null"
    return f"{int(value)}s" if float(value).is_integer() else f"{value}s"


def _anchored(group: str) -> str:
    """The group's exact name as a regex (policies match group names with regexes)."""
    return re.escape(group)


def _quoted(text: str) -> str:
    """A YAML double-quoted scalar (JSON's, ASCII only): any name, however hostile, stays one string."""
    return json.dumps(text)
