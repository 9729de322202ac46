"""The long tier of the history: downsampling keeps peaks, and both rollup stores keep the same contract.

The Redis store runs on the real redis-server of the `redis_client` fixture (flushed per test).
"""

from __future__ import annotations

import pytest
import redis

from lagbot.core.digest_config import HistoryConfig
from lagbot.core.model import GroupVerdict, Severity, Status
from lagbot.core.stored import StoredFormatError
from lagbot.engine.check import CheckReport
from lagbot.service.history import LagPoint, MemoryHistoryStore, RedisHistoryStore
from lagbot.service.rollups import (
    MemoryRollupStore,
    RedisRollupStore,
    RollupStore,
    TieredHistoryStore,
    decode_rollup,
    downsample,
    encode_rollup,
    make_tiered_history,
    merged_series,
    rollup_keys,
    trouble_seconds,
)
from tests.support.lag_histories import DAY, HOUR, MINUTE, START, nightly, series
from tests.support.verdict_factory import unreadable, verdict

WIDTH = 15 * MINUTE


def test_downsampling_keeps_the_peak_the_trough_and_the_last_value() -> None:
    points = series(nightly(peak=40_000), days=1, noise=300)

    rollups = downsample(points, WIDTH)

    assert len(rollups) == 96
    assert max(r.max_lag or 0 for r in rollups) == max(p.total_lag or 0 for p in points)  # the peak survives
    for rollup in rollups:
        inside = [p for p in points if rollup.start <= p.at < rollup.end]
        lags = [p.total_lag for p in inside if p.total_lag is not None]
        assert rollup.points == len(inside) == 15
        assert (rollup.min_lag, rollup.max_lag, rollup.last_lag) == (min(lags), max(lags), lags[-1])
        assert rollup.max_seconds == round(max(p.max_lag_seconds or 0 for p in inside))
        assert rollup.at == inside[-1].at


def test_a_one_minute_spike_survives_downsampling_to_a_day() -> None:
    points = series(lambda t: 1_000_000 if t == START + 7 * HOUR + 3 * MINUTE else 10, days=1)

    (day,) = downsample(points, DAY)

    assert (day.min_lag, day.max_lag, day.last_lag, day.points) == (10, 1_000_000, 10, 1440)


def test_trouble_levels_are_counted_and_timed_in_proportion() -> None:
    warn = LagPoint(START, 5_000, 50.0, Status.WARN, Severity.WARN)
    page = LagPoint(START + 60, 9_000_000, 900.0, Status.STALL, Severity.PAGE)
    lost = LagPoint(START + 120, None, None, Status.ERR, Severity.OK)
    fine = LagPoint(START + 180, 10, 0.1, Status.OK, Severity.OK)

    (rollup,) = downsample([warn, page, lost, fine], 4 * MINUTE)

    assert (rollup.warn, rollup.critical, rollup.unreadable, rollup.points) == (1, 1, 1, 4)
    assert (rollup.status, rollup.severity) == (Status.ERR, Severity.PAGE)
    assert trouble_seconds(rollup) == (60.0, 60.0, 60.0)
    assert rollup.last_lag == 10


def test_the_stored_form_round_trips_stays_small_and_refuses_other_versions() -> None:
    points = [LagPoint(START + i, 123_456_789 - i, 98_765.4, Status.STOP, Severity.CRITICAL) for i in range(5)]
    (rollup,) = downsample(points, WIDTH)

    raw = encode_rollup(rollup)

    assert len(raw) < 64  # a member of Redis's compact encoding
    assert decode_rollup(raw, rollup.at, WIDTH) == rollup
    with pytest.raises(StoredFormatError, match="history rollup has format version 2"):
        decode_rollup("[2" + raw[2:], rollup.at, WIDTH)


# ---------------------------------------------------------------------------------------------------
# The stores' contract
# ---------------------------------------------------------------------------------------------------


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.integration)])
def store(request: pytest.FixtureRequest) -> RollupStore:
    if request.param == "memory":
        return MemoryRollupStore(width=WIDTH, retention=2 * DAY)
    client: redis.Redis = request.getfixturevalue("redis_client")
    return RedisRollupStore(client, width=WIDTH, retention=2 * DAY)


def lagging(group: str, lag: int) -> GroupVerdict:
    warn = lag > 1_000
    return verdict(group, total_lag=lag, lag_seconds=lag / 10, status=Status.WARN if warn else Status.OK,
                   severity=Severity.WARN if warn else Severity.OK)  # fmt: skip


def report(at: float, *verdicts: GroupVerdict) -> CheckReport:
    return CheckReport(taken_at=at, verdicts=list(verdicts), clusters=["prod"])


def test_a_store_folds_each_check_into_its_rollup_as_downsample_does(store: RollupStore) -> None:
    lags = [10, 5_000, 70, 2_000_000, 30, 40, 12]
    for i, lag in enumerate(lags):  # every 5 minutes: 3 per rollup
        store.record(report(START + i * 5 * MINUTE, lagging("billing", lag), lagging("a:b*[x]", lag + 1)))

    expected = downsample(
        [LagPoint(START + i * 5 * MINUTE, lag, lag / 10, Status.WARN if lag > 1_000 else Status.OK,
                  Severity.WARN if lag > 1_000 else Severity.OK) for i, lag in enumerate(lags)],
        WIDTH,
    )  # fmt: skip
    found = store.rollups("prod", "billing", START, START + HOUR)
    assert found == expected
    assert [(r.min_lag, r.max_lag, r.last_lag) for r in found] == [(10, 5_000, 70), (30, 2_000_000, 40), (12, 12, 12)]
    assert store.rollups("prod", "a:b*[x]", START, START + HOUR)[1].max_lag == 2_000_001
    assert store.groups("prod") == ["a:b*[x]", "billing"]
    assert store.rollups("prod", "nobody", START, START + HOUR) == []


def test_equal_rollups_of_one_day_are_all_kept(store: RollupStore) -> None:
    for i in range(8):  # the same lag every 15 minutes: eight rollups alike but for their time
        store.record(report(START + i * WIDTH, lagging("billing", 20)))

    found = store.rollups("prod", "billing", START, START + 2 * HOUR)

    assert [(r.start, r.max_lag) for r in found] == [(START + i * WIDTH, 20) for i in range(8)]


def test_unreadable_checks_are_counted_without_a_lag(store: RollupStore) -> None:
    store.record(report(START, unreadable("billing")))
    store.record(report(START + MINUTE, lagging("billing", 500)))

    (rollup,) = store.rollups("prod", "billing", START, START + HOUR)

    assert (rollup.points, rollup.unreadable, rollup.min_lag, rollup.max_lag) == (2, 1, 500, 500)
    assert rollup.status is Status.ERR


def test_retention_drops_old_rollups_and_silent_groups(store: RollupStore) -> None:
    store.record(report(START, lagging("billing", 10), lagging("gone", 10)))
    for day in range(1, 4):
        store.record(report(START + day * DAY, lagging("billing", day)))

    kept = store.rollups("prod", "billing", START - DAY, START + 4 * DAY)

    assert [r.last_lag for r in kept] == [1, 2, 3]  # the first is older than two days
    assert store.groups("prod") == ["billing"]


@pytest.mark.integration
def test_redis_keeps_a_day_of_rollups_in_one_compact_sorted_set(redis_client: redis.Redis) -> None:
    store = RedisRollupStore(redis_client, width=WIDTH, retention=30 * DAY)
    for i in range(96 * 15):  # a day, one check a minute
        store.record(report(START + i * MINUTE, lagging("billing", i)))

    before, after, days, index = rollup_keys("prod", "billing")
    day_key = f"{before}{int(START // DAY)}{after}"
    assert redis_client.zcard(day_key) == 96
    assert redis_client.object("encoding", day_key) in (b"listpack", b"ziplist")  # compact (by Redis version)
    assert 0 < redis_client.ttl(day_key) <= 31 * DAY
    assert redis_client.zrange(days, 0, -1) == [str(int(START // DAY)).encode()]
    assert redis_client.zscore(index, "billing") == START + (96 * 15 - 1) * MINUTE


# ---------------------------------------------------------------------------------------------------
# The two tiers as one history
# ---------------------------------------------------------------------------------------------------


def test_the_series_is_rollup_peaks_before_the_minute_points() -> None:
    recent = [LagPoint(START + HOUR + i * MINUTE, 5, 0.5, Status.OK, Severity.OK) for i in range(3)]
    older = downsample([LagPoint(START + i * MINUTE, i, float(i), Status.OK, Severity.OK) for i in range(75)], WIDTH)

    merged = merged_series(recent, older)

    # the rollup of 01:00-01:15 overlaps the minute points: they alone answer for it
    assert [p.total_lag for p in merged] == [14, 29, 44, 59, 5, 5, 5]
    assert merged[0].at == START + 14 * MINUTE


def test_tiered_store_answers_weeks_back_from_rollups_and_the_last_days_from_minutes() -> None:
    points = MemoryHistoryStore(retention=DAY, resolution=60)
    tiered = TieredHistoryStore(points, MemoryRollupStore(width=WIDTH, retention=30 * DAY))
    for i in range(3 * 96):  # three days, one check every 15 minutes
        tiered.record(report(START + i * WIDTH, lagging("billing", i)))
    now = START + (3 * 96 - 1) * WIDTH

    found = tiered.series("prod", "billing", now - 3 * DAY, now)

    assert len(found) == 3 * 96  # one point per check: a day of minute points, two days of rollups before
    assert [p.total_lag for p in found] == list(range(3 * 96))
    assert len(points.series("prod", "billing", now - 3 * DAY, now)) == 97  # the minute tier keeps a day (both ends)
    assert tiered.groups("prod") == ["billing"]


@pytest.mark.integration
def test_the_settings_choose_the_tiers(redis_client: redis.Redis) -> None:
    assert isinstance(make_tiered_history(HistoryConfig(rollup_retention=0), None), MemoryHistoryStore)
    tiered = make_tiered_history(HistoryConfig(), redis_client)
    assert isinstance(tiered, TieredHistoryStore)
    assert isinstance(tiered.points, RedisHistoryStore)
    assert isinstance(tiered.rollups, RedisRollupStore)
    assert (tiered.rollups.width, tiered.rollups.retention, tiered.points.retention) == (900.0, 30 * DAY, 2 * DAY)


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        ({"rollup_resolution": 90}, "rollup_resolution must be a whole multiple of resolution"),
        ({"rollup_resolution": 30}, "rollup_resolution must be a whole multiple of resolution"),
        ({"retention": "3d", "rollup_retention": "2d"}, "rollup_retention (2 d) must be at least retention (3 d)"),
    ],
)
def test_bad_tier_settings_are_named(settings: dict[str, object], problem: str) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        HistoryConfig.model_validate(settings)
