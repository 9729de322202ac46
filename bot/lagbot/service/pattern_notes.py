"""What an incident's thread says when the incident looks like its group's recurring pattern.

When an incident opens, its group's history (the last `weeks` weeks: rollups, then minute points) is read once,
brought to one resolution (the rollups' width: `downsample`, each bucket's peak), and its patterns found
(lagbot.service.patterns). If the incident started at the pattern's usual time and is no bigger than usual, one
more reply is queued: "as on 6 of the last 7 nights; usually drains by 02:25", with the maintenance window that may
fit it. Nothing is silenced: the incident opens, pages and resolves exactly as it would have without it.

A failure to read or judge the history is logged and costs the thread only that line.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import tzinfo

from lagbot.service.history import HistoryStore, LagPoint
from lagbot.service.incidents import REPLY, Change, Effect, Incident
from lagbot.service.patterns import WEEK, Pattern, PatternRules, as_usual, find_patterns, match
from lagbot.service.rollups import downsample, peak_point

log = logging.getLogger(__name__)


def even_points(points: list[LagPoint], width: float) -> list[LagPoint]:
    """The history at one resolution: each `width` bucket's peak (minute points and rollup peaks alike)."""
    return [peak_point(r) for r in downsample(points, width)]


def patterns_of(
    history: HistoryStore, cluster: str, group: str, *, now: float, tz: tzinfo, width: float, rules: PatternRules
) -> list[Pattern]:
    """The group's recurring patterns, from its stored history at `width` resolution."""
    since = now - max(rules.weeks * WEEK, rules.days * 86_400.0)
    points = even_points(history.series(cluster, group, since, now), width)
    return find_patterns(points, now=now, tz=tz, rules=rules)


class PatternNotes:
    """Adds the pattern line to an opening incident's effects (see the module docstring)."""

    def __init__(self, history: HistoryStore, *, tz: tzinfo, width: float, rules: PatternRules | None = None) -> None:
        self.history = history
        self.tz = tz
        self.width = width
        self.rules = rules or replace(PatternRules(), min_points=1)  # at 15 minutes, one bucket is an episode

    def note(self, incident: Incident, *, now: float) -> str | None:
        """The line for the incident's thread, or None when it matches no pattern."""
        before = incident.opened_at - self.rules.tolerance  # the past nights, not tonight's own rise
        found = patterns_of(self.history, incident.cluster, incident.group, now=before, tz=self.tz,
                            width=self.width, rules=self.rules)  # fmt: skip
        pattern = match(found, incident.opened_at, incident.peak_lag, tz=self.tz, rules=self.rules)
        return None if pattern is None else as_usual(pattern)

    def effects(self, incident: Incident, *, now: float) -> list[Effect]:
        try:
            line = self.note(incident, now=now)
        except Exception:  # the thread loses one line; the incident goes on
            log.exception("pattern note failed", extra={"group": incident.group, "incident": incident.id})
            return []
        return [] if line is None else [Effect(REPLY, Change.PATTERN, line)]
