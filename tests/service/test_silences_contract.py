"""The SilenceStore contract, run against both stores: what `MemorySilenceStore` does, `RedisSilenceStore` does.

The Redis store runs on the real redis-server of the `redis_client` fixture (flushed per test); its own
section checks the stored JSON, the real Redis TTL (a short one, waited for with a deadline) and the
refusal of unknown format versions.
"""

from __future__ import annotations

import json
import time

import pytest
import redis

from lagbot.core.stored import StoredFormatError
from lagbot.service.silences import (
    FORMAT_VERSION,
    MemorySilenceStore,
    RedisSilenceStore,
    Silence,
    SilenceStore,
)

T0 = 1_700_000_000.0
HOUR = 3_600.0


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.integration)])
def store(request: pytest.FixtureRequest) -> SilenceStore:
    if request.param == "memory":
        return MemorySilenceStore()
    client: redis.Redis = request.getfixturevalue("redis_client")
    return RedisSilenceStore(client)


@pytest.fixture
def redis_store(redis_client: redis.Redis) -> RedisSilenceStore:
    return RedisSilenceStore(redis_client)


def test_silence_then_active_returns_exactly_what_was_stored(store: SilenceStore) -> None:
    stored = store.silence("prod", "billing", until=T0 + HOUR, reason="deploy in progress", by="U1", now=T0)

    assert stored == Silence("prod", "billing", T0 + HOUR, "deploy in progress", "U1", T0)
    assert store.active("prod", "billing", T0 + 10) == stored
    assert store.all_active(T0 + 10) == [stored]


def test_a_silence_is_per_cluster_and_group(store: SilenceStore) -> None:
    store.silence("prod", "billing", until=T0 + HOUR, reason="", by="U1", now=T0)

    assert store.active("staging", "billing", T0) is None
    assert store.active("prod", "orders", T0) is None


@pytest.mark.parametrize(("elapsed", "active"), [(HOUR - 0.001, True), (HOUR, False), (HOUR + 1, False)])
def test_expiry_boundary_by_now(store: SilenceStore, elapsed: float, active: bool) -> None:
    store.silence("prod", "billing", until=T0 + HOUR, reason="", by="U1", now=T0)

    assert (store.active("prod", "billing", T0 + elapsed) is not None) is active
    assert len(store.all_active(T0 + elapsed)) == (1 if active else 0)


def test_silencing_again_replaces_the_silence(store: SilenceStore) -> None:
    store.silence("prod", "billing", until=T0 + HOUR, reason="first", by="U1", now=T0)
    second = store.silence("prod", "billing", until=T0 + 3 * HOUR, reason="longer", by="U2", now=T0 + 60)

    assert store.active("prod", "billing", T0 + 2 * HOUR) == second
    assert store.all_active(T0 + 120) == [second]


def test_silencing_again_can_shorten_it(store: SilenceStore) -> None:
    store.silence("prod", "billing", until=T0 + 3 * HOUR, reason="", by="U1", now=T0)
    store.silence("prod", "billing", until=T0 + HOUR, reason="", by="U1", now=T0 + 1)

    assert store.active("prod", "billing", T0 + 2 * HOUR) is None


@pytest.mark.parametrize("until", [T0, T0 - 1])
def test_an_until_not_after_now_is_refused_and_changes_nothing(store: SilenceStore, until: float) -> None:
    kept = store.silence("prod", "billing", until=T0 + HOUR, reason="kept", by="U1", now=T0 - 10)

    with pytest.raises(ValueError) as caught:
        store.silence("prod", "billing", until=until, reason="", by="U1", now=T0)

    assert str(caught.value) == f"a silence must end after now: until {until:.0f} is not after {T0:.0f}"
    assert store.active("prod", "billing", T0) == kept


def test_unsilence_removes_an_active_silence(store: SilenceStore) -> None:
    store.silence("prod", "billing", until=T0 + HOUR, reason="", by="U1", now=T0)
    other = store.silence("prod", "orders", until=T0 + HOUR, reason="", by="U1", now=T0)

    assert store.unsilence("prod", "billing", now=T0 + 1) is True
    assert store.active("prod", "billing", T0 + 1) is None
    assert store.all_active(T0 + 1) == [other]
    assert store.unsilence("prod", "billing", now=T0 + 2) is False


def test_unsilence_of_nothing_or_of_an_expired_silence_is_false(store: SilenceStore) -> None:
    assert store.unsilence("prod", "billing", now=T0) is False
    store.silence("prod", "billing", until=T0 + HOUR, reason="", by="U1", now=T0)

    assert store.unsilence("prod", "billing", now=T0 + HOUR) is False
    assert store.active("prod", "billing", T0) is None  # removed all the same


def test_all_active_is_sorted_and_leaves_out_the_expired(store: SilenceStore) -> None:
    store.silence("staging", "audit", until=T0 + 3 * HOUR, reason="", by="U1", now=T0)
    store.silence("prod", "orders", until=T0 + HOUR, reason="", by="U1", now=T0)
    store.silence("prod", "billing", until=T0 + 2 * HOUR, reason="", by="U1", now=T0)

    assert [(s.cluster, s.group) for s in store.all_active(T0)] == [
        ("prod", "billing"),
        ("prod", "orders"),
        ("staging", "audit"),
    ]
    assert [(s.cluster, s.group) for s in store.all_active(T0 + 1.5 * HOUR)] == [
        ("prod", "billing"),
        ("staging", "audit"),
    ]
    assert store.all_active(T0 + 3 * HOUR) == []


def test_names_with_colons_and_unicode_round_trip(store: SilenceStore) -> None:
    stored = store.silence("prod", "team:a:ünïcode", until=T0 + HOUR, reason="ça va", by="U1", now=T0)
    store.silence("prod", "team", until=T0 + HOUR, reason="", by="U1", now=T0)

    assert store.active("prod", "team:a:ünïcode", T0) == stored
    assert [s.group for s in store.all_active(T0)] == ["team", "team:a:ünïcode"]


def test_remaining(store: SilenceStore) -> None:
    stored = store.silence("prod", "billing", until=T0 + HOUR, reason="", by="U1", now=T0)
    assert stored.remaining(T0 + 600) == HOUR - 600
    assert stored.remaining(T0 + 2 * HOUR) == 0.0


# ---------------------------------------------------------------------------------------------------
# Redis only: the stored JSON, the real TTL, the format version
# ---------------------------------------------------------------------------------------------------


def test_redis_stores_versioned_json_with_the_remaining_time_as_ttl(
    redis_store: RedisSilenceStore, redis_client: redis.Redis
) -> None:
    redis_store.silence("prod", "billing", until=T0 + HOUR, reason="deploy", by="U1", now=T0)

    raw = redis_client.get("lagbot:silence:prod:billing")
    assert isinstance(raw, bytes)
    assert json.loads(raw) == {
        "v": FORMAT_VERSION,
        "cluster": "prod",
        "group": "billing",
        "until": T0 + HOUR,
        "reason": "deploy",
        "by": "U1",
        "created_at": T0,
    }
    ttl_ms = redis_client.pttl("lagbot:silence:prod:billing")
    assert isinstance(ttl_ms, int)
    assert HOUR * 1000 - 5_000 < ttl_ms <= HOUR * 1000
    assert redis_client.zrange("lagbot:silences", 0, -1, withscores=True) == [(b'["prod","billing"]', T0 + HOUR)]


def test_redis_forgets_a_silence_when_its_real_ttl_runs_out(
    redis_store: RedisSilenceStore, redis_client: redis.Redis
) -> None:
    now = time.time()
    redis_store.silence("prod", "billing", until=now + 0.3, reason="", by="U1", now=now)
    assert redis_store.active("prod", "billing", now) is not None

    deadline = time.monotonic() + 10
    while redis_client.exists("lagbot:silence:prod:billing") and time.monotonic() < deadline:
        time.sleep(0.05)

    assert redis_client.exists("lagbot:silence:prod:billing") == 0
    # Asked with the silence's own `now`, only Redis's expiry can hide it: it did.
    assert redis_store.active("prod", "billing", now) is None
    assert redis_store.all_active(now) == []


def test_redis_unsilence_deletes_the_key_and_the_index_entry(
    redis_store: RedisSilenceStore, redis_client: redis.Redis
) -> None:
    redis_store.silence("prod", "billing", until=T0 + HOUR, reason="", by="U1", now=T0)

    assert redis_store.unsilence("prod", "billing", now=T0) is True

    assert redis_client.exists("lagbot:silence:prod:billing") == 0
    assert redis_client.zcard("lagbot:silences") == 0


def test_redis_silence_prunes_expired_index_entries(redis_store: RedisSilenceStore, redis_client: redis.Redis) -> None:
    redis_store.silence("prod", "old", until=T0 + 60, reason="", by="U1", now=T0)
    redis_store.silence("prod", "new", until=T0 + 2 * HOUR, reason="", by="U1", now=T0 + HOUR)

    assert redis_client.zrange("lagbot:silences", 0, -1) == [b'["prod","new"]']


def test_redis_store_is_shared_by_replicas(redis_client: redis.Redis) -> None:
    first, second = RedisSilenceStore(redis_client), RedisSilenceStore(redis_client)
    stored = first.silence("prod", "billing", until=T0 + HOUR, reason="", by="U1", now=T0)

    assert second.active("prod", "billing", T0) == stored
    assert second.unsilence("prod", "billing", now=T0) is True
    assert first.active("prod", "billing", T0) is None


@pytest.mark.parametrize(("version", "shown"), [(2, "2"), (None, "None")])
def test_redis_refuses_an_unknown_format_version(
    redis_store: RedisSilenceStore, redis_client: redis.Redis, version: int | None, shown: str
) -> None:
    redis_store.silence("prod", "billing", until=T0 + HOUR, reason="", by="U1", now=T0)
    raw = redis_client.get("lagbot:silence:prod:billing")
    assert isinstance(raw, bytes)
    document = json.loads(raw)
    if version is None:
        del document["v"]
    else:
        document["v"] = version
    redis_client.set("lagbot:silence:prod:billing", json.dumps(document))

    expected = f"silence has format version {shown}; this lagbot reads 1"
    with pytest.raises(StoredFormatError) as caught:
        redis_store.active("prod", "billing", T0)
    assert str(caught.value) == expected
    with pytest.raises(StoredFormatError):
        redis_store.all_active(T0)
    with pytest.raises(StoredFormatError):
        redis_store.unsilence("prod", "billing", now=T0)
    assert redis_client.get("lagbot:silence:prod:billing") == json.dumps(document).encode()  # refused: kept
    assert redis_client.zcard("lagbot:silences") == 1
