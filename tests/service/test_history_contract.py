"""The HistoryStore contract, run against both stores: what `MemoryHistoryStore` does, `RedisHistoryStore` does.

The Redis store runs on the real redis-server of the `redis_client` fixture (flushed per test).
"""

from __future__ import annotations

import json

import pytest
import redis

from lagbot.core.digest_config import HistoryConfig
from lagbot.core.model import GroupVerdict, Severity, Status
from lagbot.core.stored import StoredFormatError
from lagbot.engine.check import CheckReport
from lagbot.service.history import (
    FORMAT_VERSION,
    HistoryStore,
    LagPoint,
    MemoryHistoryStore,
    RedisHistoryStore,
    decode_point,
    encode_point,
    make_history,
)
from tests.support.verdict_factory import unreadable, verdict

T0 = 1_700_000_040.0  # a multiple of 60: the start of a bucket
HOUR = 3600.0
RETENTION = 6 * HOUR
RESOLUTION = 60


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.integration)])
def store(request: pytest.FixtureRequest) -> HistoryStore:
    if request.param == "memory":
        return MemoryHistoryStore(retention=RETENTION, resolution=RESOLUTION)
    client: redis.Redis = request.getfixturevalue("redis_client")
    return RedisHistoryStore(client, retention=RETENTION, resolution=RESOLUTION)


@pytest.fixture
def redis_store(redis_client: redis.Redis) -> RedisHistoryStore:
    return RedisHistoryStore(redis_client, retention=RETENTION, resolution=RESOLUTION)


def report(at: float, *verdicts: GroupVerdict, clusters: tuple[str, ...] = ("prod",)) -> CheckReport:
    return CheckReport(taken_at=at, verdicts=list(verdicts), clusters=list(clusters))


def lagging(group: str, lag: int, cluster: str = "prod") -> GroupVerdict:
    """A group with `lag` messages, `lag / 10` seconds behind, WARN above 1,000 messages."""
    warn = lag > 1_000
    return verdict(
        group,
        cluster=cluster,
        total_lag=lag,
        lag_seconds=lag / 10,
        status=Status.WARN if warn else Status.OK,
        severity=Severity.WARN if warn else Severity.OK,
    )


def everything(store: HistoryStore, group: str = "orders", cluster: str = "prod") -> list[LagPoint]:
    return store.series(cluster, group, 0, 2 * T0)


# ---------------------------------------------------------------------------------------------------
# Record and read back
# ---------------------------------------------------------------------------------------------------


def test_record_then_series_returns_exact_points_oldest_first(store: HistoryStore) -> None:
    for i, lag in enumerate([500, 2_000, 1_500]):
        store.record(report(T0 + 60 * i, lagging("orders", lag), lagging("billing", 10 * i)))

    assert everything(store) == [
        LagPoint(T0, 500, 50.0, Status.OK, Severity.OK),
        LagPoint(T0 + 60, 2_000, 200.0, Status.WARN, Severity.WARN),
        LagPoint(T0 + 120, 1_500, 150.0, Status.WARN, Severity.WARN),
    ]
    assert [p.total_lag for p in everything(store, "billing")] == [0, 10, 20]


def test_series_bounds_are_inclusive(store: HistoryStore) -> None:
    for i in range(5):
        store.record(report(T0 + 60 * i, lagging("orders", i)))
    assert [p.total_lag for p in store.series("prod", "orders", T0 + 60, T0 + 180)] == [1, 2, 3]
    assert store.series("prod", "orders", T0 + 61, T0 + 119) == []


def test_unknown_group_or_cluster_has_an_empty_series(store: HistoryStore) -> None:
    assert everything(store) == []
    store.record(report(T0, lagging("orders", 5)))
    assert everything(store, "nobody") == []
    assert everything(store, "orders", cluster="staging") == []
    assert store.series_many("prod", ["orders", "nobody"], 0, 2 * T0) == {
        "orders": [LagPoint(T0, 5, 0.5, Status.OK, Severity.OK)],
        "nobody": [],
    }


def test_unknown_lag_round_trips_as_none(store: HistoryStore) -> None:
    store.record(report(T0, verdict("orders", total_lag=None, lag_seconds=None)))
    assert everything(store) == [LagPoint(T0, None, None, Status.OK, Severity.OK)]


def test_error_verdicts_are_recorded_as_err_points_without_lag(store: HistoryStore) -> None:
    store.record(report(T0, lagging("orders", 300)))
    store.record(CheckReport(T0 + 60, [unreadable("orders")], {"prod": "unreachable"}, ["prod"]))
    store.record(report(T0 + 120, lagging("orders", 100)))
    assert everything(store) == [
        LagPoint(T0, 300, 30.0, Status.OK, Severity.OK),
        LagPoint(T0 + 60, None, None, Status.ERR, Severity.OK),
        LagPoint(T0 + 120, 100, 10.0, Status.OK, Severity.OK),
    ]


# ---------------------------------------------------------------------------------------------------
# Resolution: one point per bucket, the newest wins
# ---------------------------------------------------------------------------------------------------


def test_one_point_per_bucket_the_newest_wins(store: HistoryStore) -> None:
    for offset, lag in [(0, 1), (15, 2), (59.5, 3), (60, 4), (61, 5)]:
        store.record(report(T0 + offset, lagging("orders", lag)))
    assert [(p.at, p.total_lag) for p in everything(store)] == [(T0 + 59.5, 3), (T0 + 61, 5)]


def test_an_older_point_does_not_replace_a_newer_one_in_its_bucket(store: HistoryStore) -> None:
    store.record(report(T0 + 30, lagging("orders", 7)))
    store.record(report(T0 + 10, lagging("orders", 99)))  # late, e.g. a slow replica's report
    store.record(report(T0 - 10, lagging("orders", 4)))  # an earlier bucket: kept
    assert [(p.at, p.total_lag) for p in everything(store)] == [(T0 - 10, 4), (T0 + 30, 7)]


def test_a_tie_keeps_the_one_recorded_last(store: HistoryStore) -> None:
    store.record(report(T0, lagging("orders", 1)))
    store.record(report(T0, lagging("orders", 2)))
    assert [p.total_lag for p in everything(store)] == [2]


def test_a_day_of_checks_every_20_s_keeps_one_point_a_minute(store: HistoryStore) -> None:
    for i in range(3 * 60 * 3):  # three hours, every 20 s
        store.record(report(T0 + 20 * i, lagging("orders", i)))
    points = everything(store)
    assert len(points) == 180
    assert [p.total_lag for p in points[:3]] == [2, 5, 8]  # the last check of each minute
    assert points[-1] == LagPoint(T0 + 20 * 539, 539, 53.9, Status.OK, Severity.OK)


# ---------------------------------------------------------------------------------------------------
# Retention and groups
# ---------------------------------------------------------------------------------------------------


def test_points_older_than_the_retention_are_dropped(store: HistoryStore) -> None:
    for hours in range(8):
        store.record(report(T0 + hours * HOUR, lagging("orders", hours)))
    # At T0 + 7 h, with 6 h of retention, points before T0 + 1 h are gone; T0 + 1 h itself is kept.
    assert [p.total_lag for p in everything(store)] == [1, 2, 3, 4, 5, 6, 7]


def test_groups_lists_the_groups_of_a_cluster(store: HistoryStore) -> None:
    assert store.groups("prod") == []
    store.record(
        report(T0, lagging("orders", 1), lagging("billing", 2), lagging("audit", 3, cluster="staging"),
               clusters=("prod", "staging"))
    )  # fmt: skip
    assert store.groups("prod") == ["billing", "orders"]
    assert store.groups("staging") == ["audit"]
    assert store.groups("nowhere") == []


def test_a_vanished_group_expires_entirely_after_the_retention(store: HistoryStore) -> None:
    store.record(report(T0, lagging("orders", 1), lagging("gone", 2)))
    store.record(report(T0 + 5 * HOUR, lagging("orders", 3)))
    assert store.groups("prod") == ["gone", "orders"]
    assert [p.total_lag for p in everything(store, "gone")] == [2]  # within the retention: still there

    store.record(report(T0 + 6 * HOUR + 1, lagging("orders", 4)))

    assert store.groups("prod") == ["orders"]
    assert everything(store, "gone") == []
    assert [p.total_lag for p in everything(store)] == [3, 4]


def test_expiry_of_one_cluster_leaves_the_others_alone(store: HistoryStore) -> None:
    store.record(report(T0, lagging("audit", 1, cluster="staging"), clusters=("staging",)))
    store.record(report(T0 + 7 * HOUR, lagging("orders", 1)))
    assert store.groups("staging") == ["audit"]


def test_make_history_follows_the_settings(redis_client: redis.Redis) -> None:
    config = HistoryConfig(retention="3d", resolution="5m")
    in_memory, in_redis = make_history(config, None), make_history(config, redis_client)
    assert isinstance(in_memory, MemoryHistoryStore) and isinstance(in_redis, RedisHistoryStore)
    assert [(s.retention, s.resolution) for s in (in_memory, in_redis)] == [(259_200.0, 300)] * 2


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="retention must be > 0"):
        MemoryHistoryStore(retention=0)
    with pytest.raises(ValueError, match="resolution must be >= 1 second"):
        MemoryHistoryStore(resolution=0)


# ---------------------------------------------------------------------------------------------------
# Redis only: layout, TTL, versions
# ---------------------------------------------------------------------------------------------------


def test_redis_layout_is_hourly_sorted_sets_of_versioned_json_with_a_ttl(
    redis_store: RedisHistoryStore, redis_client: redis.Redis
) -> None:
    redis_store.record(report(T0, lagging("orders", 2_000)))
    redis_store.record(report(T0 + HOUR + 0.25, lagging("orders", 3_000)))
    first, second = int(T0 // HOUR), int(T0 // HOUR) + 1  # one chunk per hour at a 60 s resolution
    assert redis_client.zrange("lagbot:history-chunks:prod:orders", 0, -1) == [
        str(first).encode(),
        str(second).encode(),
    ]
    [(member, score)] = redis_client.zrange(f"lagbot:history:prod:{first}:orders", 0, -1, withscores=True)
    assert (json.loads(member), score) == ([FORMAT_VERSION, T0, 2000, 200.0, 1, 1], T0)  # WARN = 1, warn = 1
    assert redis_client.object("encoding", f"lagbot:history:prod:{first}:orders") in (b"listpack", b"ziplist")
    for key in (
        f"lagbot:history:prod:{second}:orders",
        "lagbot:history-chunks:prod:orders",
        "lagbot:history-groups:prod",
    ):
        assert 0 < redis_client.ttl(key) <= RETENTION + HOUR  # fmt: skip
    assert redis_client.zscore("lagbot:history-groups:prod", "orders") == T0 + HOUR + 0.25


def test_redis_deletes_whole_chunks_past_the_retention(
    redis_store: RedisHistoryStore, redis_client: redis.Redis
) -> None:
    for minutes in range(0, 8 * 60, 30):
        redis_store.record(report(T0 + minutes * 60, lagging("orders", minutes)))
    hours = [int(c) for c in redis_client.zrange("lagbot:history-chunks:prod:orders", 0, -1)]
    assert hours == [int(T0 // HOUR) + h for h in range(1, 8)]  # 7.5 h recorded, 6 h kept: the first hour is gone
    assert redis_client.exists(f"lagbot:history:prod:{int(T0 // HOUR)}:orders") == 0
    redis_store.record(report(T0 + 15 * HOUR, lagging("other", 1)))  # orders vanished for over 6 h
    assert redis_client.keys("lagbot:history*orders") == []


def test_redis_refuses_an_unknown_version(redis_store: RedisHistoryStore, redis_client: redis.Redis) -> None:
    redis_store.record(report(T0, lagging("orders", 1)))
    newer = json.dumps([2, T0 + 60, 1, 0.1, 0, 0])
    redis_client.zadd(f"lagbot:history:prod:{int(T0 // HOUR)}:orders", {newer: T0 + 60})
    with pytest.raises(StoredFormatError) as caught:
        redis_store.series("prod", "orders", 0, 2 * T0)
    assert str(caught.value) == "history point has format version 2; this lagbot reads 1"
    assert [p.total_lag for p in redis_store.series("prod", "orders", 0, T0)] == [1]


def test_a_point_without_a_version_is_refused() -> None:
    with pytest.raises(StoredFormatError, match="format version None"):
        decode_point(json.dumps({"at": T0}))
    with pytest.raises(StoredFormatError, match="format version None"):
        decode_point(json.dumps([]))


def test_points_round_trip_every_status_and_severity() -> None:
    for status in Status:
        for severity in Severity:
            point = LagPoint(T0 + 0.25, 12, 3.5, status, severity)
            assert decode_point(encode_point(point)) == point
            assert len(encode_point(LagPoint(T0 + 0.123456, 2**53, 1e9 / 7, status, severity))) <= 64


def test_redis_replicas_share_the_history(redis_client: redis.Redis) -> None:
    first = RedisHistoryStore(redis_client, retention=RETENTION, resolution=RESOLUTION)
    second = RedisHistoryStore(redis_client, retention=RETENTION, resolution=RESOLUTION)
    first.record(report(T0, lagging("orders", 1)))
    second.record(report(T0 + 60, lagging("orders", 2)))
    assert [p.total_lag for p in everything(first)] == [1, 2]
