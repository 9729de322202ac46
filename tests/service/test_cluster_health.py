"""The bot's account of a cluster's reachability: one log line per change, and its /healthz entry."""

from __future__ import annotations

import logging

import pytest

from lagbot.engine.check import CheckReport
from lagbot.service.cluster_health import clusters_health, note_reachability

DOWN = "cluster 'prod' unreachable while listing consumer groups: Local: Timed out (_TIMED_OUT)"


def report(at: float, error: str | None) -> CheckReport:
    return CheckReport(
        taken_at=at, verdicts=[], cluster_errors={} if error is None else {"prod": error}, clusters=["prod"]
    )


def test_one_line_when_the_cluster_goes_away_and_one_when_it_is_back(caplog: pytest.LogCaptureFixture) -> None:
    away: dict[str, float] = {}
    reports = [report(100, None), report(101, DOWN), report(102, DOWN), report(103, DOWN), report(161.5, None)]
    with caplog.at_level(logging.INFO, logger="lagbot.service.cluster_health"):
        previous = None
        for current in reports:
            note_reachability("prod", previous, current, away)
            if current.taken_at == 102:
                assert away == {"prod": 101}
                assert clusters_health({"prod": current}, away) == {
                    "prod": {"reachable": False, "checked_at": 102, "error": DOWN, "unreachable_since": 101}
                }
            previous = current
    assert [(r.levelname, r.getMessage(), getattr(r, "unreachable_for", None)) for r in caplog.records] == [
        ("WARNING", "cluster unreachable", None),
        ("WARNING", "cluster reachable again", 60.5),
    ]
    assert away == {}
    assert clusters_health({"prod": reports[-1]}, away) == {"prod": {"reachable": True, "checked_at": 161.5}}


def test_a_bot_whose_first_check_fails_says_so_once() -> None:
    away: dict[str, float] = {}
    note_reachability("prod", None, report(5, DOWN), away)
    assert away == {"prod": 5}
