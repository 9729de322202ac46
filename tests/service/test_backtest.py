"""Thresholds backtested on a synthetic history whose incidents are known: exact counts, exact start times."""

from __future__ import annotations

import pytest

from lagbot.core.config import IncidentConfig, Level
from lagbot.policies.loader import parse_policy
from lagbot.service.backtest import (
    Span,
    compare,
    firing,
    propose,
    proposed_level,
    quantile,
    replay,
    round_up,
    yaml_snippet,
)
from lagbot.service.history import LagPoint
from tests.support.lag_histories import HOUR, MINUTE, START, flat, series, with_incident

INCIDENTS = IncidentConfig(open_at="warn", resolve_after=600, reopen_within=1800)
CURRENT = Level(messages=1_000)  # a noisy WARN level: every short burst opens an incident

SPIKES = [START + (4 * k + 1) * HOUR for k in range(10)]
"""Ten bursts of 2,000 messages for 3 minutes, four hours apart: they drain by themselves."""
REAL = START + 45 * HOUR
"""300,000 messages for an hour: a human approved a remediation."""
MIDDLE = START + 60 * HOUR
"""50,000 messages for 3 minutes: nobody acted."""


def history() -> list[LagPoint]:
    points = series(flat(200), days=3)
    for at in SPIKES:
        points = with_incident(points, at, at + 3 * MINUTE, 2_000)
    points = with_incident(points, REAL, REAL + HOUR, 300_000)
    return with_incident(points, MIDDLE, MIDDLE + 3 * MINUTE, 50_000)


def test_the_current_level_replayed_opens_one_incident_per_burst_at_its_first_minute() -> None:
    opened = replay(history(), CURRENT, INCIDENTS)

    assert len(opened) == 12
    assert [s.start for s in opened] == [*SPIKES, REAL, MIDDLE]
    # resolved `resolve_after` after the first point back under the level
    assert [s.end for s in opened] == [at + 3 * MINUTE + 600 for at in SPIKES] + [
        REAL + HOUR + 600,
        MIDDLE + 3 * MINUTE + 600,
    ]


def test_the_proposal_comes_from_the_healthy_points_and_the_backtest_counts_are_exact() -> None:
    points = history()
    actual = replay(points, CURRENT, INCIDENTS)
    acted = [Span(REAL, REAL + HOUR + 600)]

    proposal = propose(points, acted)

    assert proposal is not None
    # healthy: 4,320 minutes less the acted incident's 71 (both ends in); above the 99.9th percentile's rank
    # lie the top 5 of 4,249 points: 3 of 50,000 and 2 of the bursts' 30 of 2,000, so 2,000 * 1.5 = 3,000 ->
    # 5,000 messages; 20 s * 1.5 = 30 s -> 50 s
    assert proposal.healthy_points == 3 * 1440 - 71
    assert (proposal.messages, proposal.seconds) == (5_000, 50.0)
    level = proposed_level(CURRENT, proposal)
    would = replay(points, level, INCIDENTS)
    result = compare(would, actual, acted)
    assert [s.start for s in result.would_open] == [REAL, MIDDLE]
    assert [(s.start, delta) for s, delta in result.also_opened] == [(REAL, 0.0), (MIDDLE, 0.0)]
    assert [s.start for s in result.missed] == SPIKES
    assert result.missed_acted == ()


def test_a_level_that_misses_an_incident_a_human_acted_on_says_so() -> None:
    slow = START + 2 * HOUR  # between the first two bursts, more than `reopen_within` from each
    points = with_incident(history(), slow, slow + HOUR, 3_000)  # 3,000 messages, 30 s: under 5,000 / 50 s
    actual = replay(points, CURRENT, INCIDENTS)
    acted = [Span(REAL, REAL + HOUR + 600), Span(slow, slow + HOUR + 600)]

    result = compare(replay(points, Level(messages=5_000, seconds=50), INCIDENTS), actual, acted)

    assert len(actual) == 13
    assert [s.start for s in result.missed_acted] == [slow]
    assert len(result.missed) == 11


def test_sustained_for_delays_the_start_and_growing_needs_a_rise() -> None:
    points = with_incident(series(flat(200), days=1), START + HOUR, START + 2 * HOUR, 10_000)

    sustained = replay(points, Level(messages=1_000, sustained_for=300), INCIDENTS)
    flat_high = firing(points, Level(messages=1_000, sustained_for=300, growing=True))

    assert [s.start for s in sustained] == [START + HOUR + 5 * MINUTE]
    assert not any(flat_high)  # over the limit for an hour, but never higher than 5 minutes before


def test_trouble_again_within_reopen_within_is_the_same_incident() -> None:
    points = series(flat(200), days=1)
    points = with_incident(points, START + HOUR, START + HOUR + 5 * MINUTE, 2_000)
    points = with_incident(points, START + HOUR + 30 * MINUTE, START + HOUR + 35 * MINUTE, 2_000)  # 15 min after

    assert replay(points, CURRENT, INCIDENTS) == [Span(START + HOUR, START + HOUR + 35 * MINUTE + 600)]


def test_an_incident_still_open_at_the_end_has_no_end() -> None:
    points = with_incident(series(flat(200), days=1), START + 23 * HOUR, START + 24 * HOUR, 9_000)

    assert replay(points, CURRENT, INCIDENTS) == [Span(START + 23 * HOUR, None)]


@pytest.mark.parametrize(
    ("value", "rounded"), [(1, 1), (3_000, 5_000), (2_000, 2_000), (2_001, 2_500), (30, 50), (0.12, 0.2), (7, 10)]
)
def test_round_up_to_a_round_number(value: float, rounded: float) -> None:
    assert round_up(value) == pytest.approx(rounded)


def test_quantile_is_a_value_that_was_seen() -> None:
    assert quantile([5, 1, 4, 2, 3], 0.5) == 3
    assert quantile(list(range(1, 1001)), 0.999) == 999


def test_no_healthy_point_no_proposal() -> None:
    points = series(flat(200), days=1)

    assert propose(points, [Span(START - 1, None)]) is None


def test_the_yaml_snippet_is_a_valid_policy_whose_rule_matches_exactly_the_group() -> None:
    hostile = 'pay.ments*"{x}: #y'
    snippet = yaml_snippet("prod", hostile, Level(messages=5_000, seconds=50, sustained_for=120, growing=True))

    import yaml

    data = yaml.safe_load(snippet)
    policy = parse_policy({**data, "default": {"name": "default"}}, source="snippet")
    rule = policy.match("prod", hostile)
    assert rule.name == "backtested-thresholds"
    assert rule.thresholds is not None
    assert rule.thresholds.warn == Level(messages=5_000, seconds=50, sustained_for=120, growing=True)
    assert policy.match("prod", "payXments") is policy.default
