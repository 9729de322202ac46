"""Synthetic lag histories with a known truth, for the patterns, backtest, report and rollup tests.

Points one a minute, in UTC, from `START` (a Monday, 00:00 UTC). Noise is seeded: every run sees the same points.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import redis

from lagbot.core.config import Settings
from lagbot.core.model import Severity, Status
from lagbot.engine.check import CheckReport
from lagbot.service.history import LagPoint
from lagbot.service.incidents import Incident, RedisIncidentStore
from lagbot.service.rollups import make_tiered_history
from tests.support.verdict_factory import verdict

START = 1_700_438_400.0  # Monday 2023-11-20 00:00:00 UTC
MINUTE = 60.0
HOUR = 3600.0
DAY = 86_400.0
NIGHTS = 7
STEP = 15 * MINUTE

Shape = Callable[[float], int]
"""Time -> the lag at that time, before noise."""


def nightly(peak: int = 40_000, at_hour: float = 2.0, rise: float = 10 * MINUTE, drain: float = 10 * MINUTE) -> Shape:
    """A batch job every night: lag rises linearly to `peak` for `rise` seconds from `at_hour`, then drains."""

    def lag(t: float) -> int:
        into = (t - START) % DAY - at_hour * HOUR
        if 0 <= into < rise:
            return round(peak * (into + MINUTE) / rise)
        if rise <= into < rise + drain:
            return round(peak * (1 - (into - rise) / drain))
        return 0

    return lag


def flat(level: int) -> Shape:
    return lambda _t: level


def series(shape: Shape, *, days: float, noise: int = 0, seed: int = 7, every: float = MINUTE,
           warn_at: int | None = None, seconds_per_message: float = 0.01) -> list[LagPoint]:  # fmt: skip
    """Points every `every` seconds for `days` days; WARN severity where lag >= `warn_at` (None: never)."""
    rng = random.Random(seed)
    points = []
    for i in range(int(days * DAY / every)):
        at = START + i * every
        lag = max(0, shape(at) + (rng.randint(-noise, noise) if noise else 0))
        warn = warn_at is not None and lag >= warn_at
        points.append(
            LagPoint(
                at=at,
                total_lag=lag,
                max_lag_seconds=lag * seconds_per_message,
                status=Status.WARN if warn else Status.OK,
                severity=Severity.WARN if warn else Severity.OK,
            )
        )
    return points


def with_incident(points: list[LagPoint], start: float, end: float, lag: int) -> list[LagPoint]:
    """`points` with lag `lag` (severity WARN) from `start` to `end` (exclusive)."""
    return [LagPoint(p.at, lag, lag * 0.01, Status.WARN, Severity.WARN) if start <= p.at < end else p for p in points]


def store_nights(client: redis.Redis, config: Settings, group: str) -> None:
    """Stored as the bot stores them, a check every 15 minutes from START for seven nights: 3,000 messages at
    02:00 and 02:15, drained by 02:30, and an incident each night (02:00 to 02:45)."""
    history = make_tiered_history(config.digest.history, client)
    incidents = RedisIncidentStore(client, keep=config.digest.history.longest)
    for check in range(NIGHTS * 96):
        at = START + check * STEP
        night, of_day = divmod(check, 96)
        high = of_day in (8, 9)
        lag = 3_000 if high else 20
        history.record(CheckReport(at, [verdict(group, total_lag=lag, lag_seconds=None,
                                                status=Status.WARN if high else Status.OK,
                                                severity=Severity.WARN if high else Severity.OK)],
                                   clusters=["prod"]))  # fmt: skip
        if of_day == 8:
            done = at + 45 * MINUTE
            incidents.put(Incident(f"i{night}", "prod", group, "C1", at, Severity.WARN, Severity.WARN, 3_000,
                                   "slow_consumer", Status.WARN, done, resolved_at=done))  # fmt: skip
