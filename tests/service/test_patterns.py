"""Recurring patterns on synthetic histories whose truth is known: found when they are there, not otherwise."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC
from zoneinfo import ZoneInfo

import pytest
import redis

from lagbot.core.model import Severity, Status
from lagbot.engine.check import CheckReport
from lagbot.service.history import LagPoint, MemoryHistoryStore
from lagbot.service.incidents import REPLY, Change, Effect, Incident
from lagbot.service.pattern_notes import PatternNotes
from lagbot.service.patterns import (
    DAY,
    PatternRules,
    as_usual,
    describe,
    episodes,
    find_patterns,
    match,
)
from tests.support.lag_histories import HOUR, MINUTE, START, flat, nightly, series, with_incident
from tests.support.verdict_factory import verdict

RULES = PatternRules()
END = START + 7 * DAY


def skipping(night: int) -> object:
    """The nightly batch, except on night `night` (0-based): 6 of 7 nights."""
    batch = nightly()

    def lag(t: float) -> int:
        return 0 if int((t - START) // DAY) == night else batch(t)

    return lag


def test_a_nightly_batch_with_noise_is_a_pattern_seen_six_of_seven_nights() -> None:
    points = series(skipping(3), days=7, noise=200)  # type: ignore[arg-type]

    patterns = find_patterns(points, now=END, tz=UTC, rules=RULES)

    assert len(patterns) == 1
    pattern = patterns[0]
    assert pattern.daily
    assert pattern.offset == 2 * HOUR
    assert (pattern.seen, pattern.out_of) == (6, 7)
    assert pattern.drains_in == 20 * MINUTE  # rises for 10 min, drains for 10 min
    assert 39_800 <= pattern.peak <= 40_200  # the peak of 40,000 give or take the noise
    assert describe(pattern) == "most nights from 02:00, peak ~40k, drains in ~20 min; 6 of the last 7 nights"


def test_the_pattern_is_found_at_its_local_time() -> None:
    points = series(nightly(at_hour=1.0), days=7, noise=200)  # 01:00 UTC is 02:00 in Paris in November

    (pattern,) = find_patterns(points, now=END, tz=ZoneInfo("Europe/Paris"), rules=RULES)

    assert pattern.offset == 2 * HOUR
    assert (pattern.seen, pattern.out_of) == (7, 7)


def test_a_group_always_slightly_behind_has_no_episode_and_no_pattern() -> None:
    for level, noise in ((500, 50), (5_000, 300), (80_000, 2_000)):
        points = series(flat(level), days=7, noise=noise)

        assert episodes(points, RULES) == []
        assert find_patterns(points, now=END, tz=UTC, rules=RULES) == []


def test_three_nights_out_of_seven_is_no_pattern() -> None:
    batch = nightly()
    points = series(lambda t: batch(t) if int((t - START) // DAY) in (0, 2, 4) else 0, days=7, noise=200)

    assert len(episodes(points, RULES)) == 3
    assert find_patterns(points, now=END, tz=UTC, rules=RULES) == []


def test_a_real_incident_inside_the_pattern_does_not_match_it_but_a_usual_night_does() -> None:
    last_night = START + 6 * DAY + 2 * HOUR
    points = with_incident(series(nightly(), days=7, noise=200), last_night + 5 * MINUTE, last_night + 3 * HOUR,
                           400_000)  # fmt: skip

    patterns = find_patterns(points, now=END, tz=UTC, rules=RULES)

    assert len(patterns) == 1
    (pattern,) = patterns
    assert pattern.offset == 2 * HOUR
    assert (pattern.seen, pattern.out_of) == (7, 7)
    assert pattern.drains_in == 20 * MINUTE  # the median: one long night does not move it
    assert match(patterns, last_night + 5 * MINUTE, 400_000, tz=UTC, rules=RULES) is None  # 10x the usual peak
    assert match(patterns, last_night + 3 * MINUTE, 41_000, tz=UTC, rules=RULES) is pattern
    assert match(patterns, last_night + 4 * HOUR, 41_000, tz=UTC, rules=RULES) is None  # another time of day
    assert as_usual(pattern) == (
        "as on 7 of the last 7 nights; usually drains by 02:20 (a maintenance window for nights 02:00-02:20 may fit it)"
    )


def test_a_weekly_job_is_a_weekly_pattern() -> None:
    def mondays(t: float) -> int:
        into = (t - START) % (7 * DAY)  # START is a Monday
        return 20_000 if 9 * HOUR <= into < 9 * HOUR + 30 * MINUTE else 0

    points = series(mondays, days=28, noise=100)

    (pattern,) = find_patterns(points, now=START + 28 * DAY, tz=UTC, rules=RULES)

    assert not pattern.daily
    assert pattern.offset == 9 * HOUR  # Monday 09:00
    assert (pattern.seen, pattern.out_of) == (4, 4)
    assert describe(pattern) == "most Mondays from 09:00, peak ~20k, drains in ~30 min; 4 of the last 4 weeks"


# ---------------------------------------------------------------------------------------------------
# What an opening incident's thread is told (lagbot.service.pattern_notes)
# ---------------------------------------------------------------------------------------------------


def nightly_store() -> MemoryHistoryStore:
    """Seven nights at 15-minute checks: 3,000 messages at 02:00 and 02:15, as the bot records them."""
    store = MemoryHistoryStore(retention=30 * DAY, resolution=60)
    for check in range(7 * 96):
        high = check % 96 in (8, 9)
        lag = 3_000 if high else 20
        store.record(CheckReport(START + check * 900, [verdict("billing", total_lag=lag, lag_seconds=None,
                                 severity=Severity.WARN if high else Severity.OK)], clusters=["prod"]))  # fmt: skip
    return store


def opening(at: float, peak: int) -> Incident:
    return Incident("i8", "prod", "billing", "C1", at, Severity.WARN, Severity.WARN, peak, None, Status.WARN, at)


def test_an_incident_at_the_usual_time_is_told_so_in_its_thread_and_nothing_else_changes() -> None:
    notes = PatternNotes(nightly_store(), tz=UTC, width=900)
    tonight = START + 7 * DAY + 2 * HOUR

    said = notes.effects(opening(tonight, 3_100), now=tonight)

    assert said == [
        Effect(REPLY, Change.PATTERN, "as on 7 of the last 7 nights; usually drains by 02:30 "
               "(a maintenance window for nights 02:00-02:30 may fit it)")
    ]  # fmt: skip
    assert notes.effects(opening(tonight, 40_000), now=tonight) == []  # much bigger than usual: a real incident
    assert notes.effects(opening(tonight + 12 * HOUR, 3_000), now=tonight + 12 * HOUR) == []  # another time


class Unreadable(MemoryHistoryStore):
    def series_many(self, cluster: str, groups: Iterable[str], since: float, until: float) -> dict[str, list[LagPoint]]:
        raise redis.ConnectionError("redis went away")


def test_a_history_that_cannot_be_read_costs_the_thread_one_line_only(caplog: pytest.LogCaptureFixture) -> None:
    notes = PatternNotes(Unreadable(), tz=UTC, width=900)

    assert notes.effects(opening(START, 3_000), now=START) == []
    assert "pattern note failed" in caplog.text
