"""The WindowStore contract, run against both stores: what `MemoryWindowStore` does, `RedisWindowStore` does.

The Redis store runs on the real redis-server of the `redis_client` fixture (flushed per test).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest
import redis

from lagbot.core.model import (
    ClusterSnapshot,
    GroupSample,
    GroupSnapshot,
    GroupState,
    Member,
    PartitionSample,
    TopicPartition,
)
from lagbot.core.stored import StoredFormatError
from lagbot.engine.window import MemoryWindowStore, RedisWindowStore, WindowStore
from lagbot.engine.window_entries import FORMAT_VERSION

SAMPLES = 5
TTL = 600.0
CLUSTER = "prod"
T0 = 1_700_000_000.0
STEP = 60.0

P0: TopicPartition = ("orders", 0)
P1: TopicPartition = ("orders", 1)
Q0: TopicPartition = ("payments", 0)


@pytest.fixture(params=["memory", "memory-no-arrays", pytest.param("redis", marks=pytest.mark.integration)])
def store(request: pytest.FixtureRequest) -> WindowStore:
    if request.param == "memory":
        return MemoryWindowStore(samples=SAMPLES, ttl=TTL)
    if request.param == "memory-no-arrays":  # as `lagbot check` keeps it
        return MemoryWindowStore(samples=SAMPLES, ttl=TTL, arrays=False)
    client: redis.Redis = request.getfixturevalue("redis_client")
    return RedisWindowStore(client, samples=SAMPLES, ttl=TTL)


@pytest.fixture
def redis_store(redis_client: redis.Redis) -> RedisWindowStore:
    return RedisWindowStore(redis_client, samples=SAMPLES, ttl=TTL)


def member(n: int, *assignment: TopicPartition) -> Member:
    return Member(member_id=f"m-{n}", client_id=f"client-{n}", host=f"10.0.0.{n}", assignment=assignment)


def group(
    name: str,
    committed: dict[TopicPartition, int | None],
    *,
    members: Sequence[Member] = (),
    state: GroupState = GroupState.STABLE,
    generation: int | None = 1,
    error: str | None = None,
) -> GroupSnapshot:
    return GroupSnapshot(
        group=name,
        state=state,
        members=tuple(members),
        committed=committed,
        generation=generation,
        error=error,
    )


def snapshot(
    at: float,
    groups: Sequence[GroupSnapshot],
    log_end: dict[TopicPartition, int],
    log_start: dict[TopicPartition, int] | None = None,
    *,
    cluster: str = CLUSTER,
    error: str | None = None,
) -> ClusterSnapshot:
    return ClusterSnapshot(
        cluster=cluster,
        taken_at=at,
        groups={g.group: g for g in groups},
        log_end=log_end,
        log_start=log_start if log_start is not None else {tp: 0 for tp in log_end},
        error=error,
    )


def at(i: int) -> float:
    return T0 + i * STEP


def simple(i: int, name: str = "billing", cluster: str = CLUSTER) -> ClusterSnapshot:
    """Cycle `i` of a one-partition group: committed 1,000 + 10i, log end 1,100 + 20i, log start 5i."""
    return snapshot(
        at(i),
        [group(name, {P0: 1000 + 10 * i}, members=[member(1, P0)])],
        {P0: 1100 + 20 * i},
        {P0: 5 * i},
        cluster=cluster,
    )


# ---------------------------------------------------------------------------------------------------
# Append and read back
# ---------------------------------------------------------------------------------------------------


def test_append_then_window_returns_exact_samples_oldest_first(store: WindowStore) -> None:
    for i in range(3):
        store.append(
            snapshot(
                at(i),
                [group("billing", {P0: 100 + 50 * i, Q0: 7 + i}, members=[member(1, P0, Q0)])],
                {P0: 150 + 100 * i, Q0: 9 + i, P1: 999},
                {P0: 10 * i, Q0: 2},
            )
        )
    window = store.window(CLUSTER, "billing")
    assert window is not None
    assert (window.cluster, window.group) == (CLUSTER, "billing")
    assert list(window.partitions) == [P0, Q0]  # only the group's partitions, sorted
    assert window.partitions[P0] == (
        PartitionSample(at(0), 100, 150, 0),
        PartitionSample(at(1), 150, 250, 10),
        PartitionSample(at(2), 200, 350, 20),
    )
    assert [s.lag for s in window.partitions[P0]] == [50, 100, 150]
    assert window.partitions[Q0] == (
        PartitionSample(at(0), 7, 9, 2),
        PartitionSample(at(1), 8, 10, 2),
        PartitionSample(at(2), 9, 11, 2),
    )
    assert [s.lag for s in window.partitions[Q0]] == [2, 2, 2]
    assert [s.at for s in window.samples] == [at(0), at(1), at(2)]


def test_at_most_samples_entries_are_kept(store: WindowStore) -> None:
    for i in range(SAMPLES + 3):
        store.append(simple(i))
    window = store.window(CLUSTER, "billing")
    assert window is not None
    kept = range(3, SAMPLES + 3)
    assert window.partitions[P0] == tuple(PartitionSample(at(i), 1000 + 10 * i, 1100 + 20 * i, 5 * i) for i in kept)
    assert [s.at for s in window.samples] == [at(i) for i in kept]


def test_a_snapshot_with_an_error_records_nothing(store: WindowStore) -> None:
    failed = snapshot(at(0), [group("billing", {P0: 10})], {P0: 20}, error="cluster unreachable")
    store.append(failed)
    assert store.window(CLUSTER, "billing") is None
    assert store.groups(CLUSTER) == []

    store.append(simple(1))
    store.append(snapshot(at(2), [group("billing", {P0: 10})], {P0: 20}, error="cluster unreachable"))
    window = store.window(CLUSTER, "billing")
    assert window is not None
    assert [s.at for s in window.samples] == [at(1)]


def test_a_group_with_an_error_records_nothing(store: WindowStore) -> None:
    store.append(
        snapshot(
            at(0),
            [group("billing", {P0: 10}), group("broken", {P0: 5}, error="coordinator not available")],
            {P0: 20},
        )
    )
    assert store.window(CLUSTER, "broken") is None
    assert store.groups(CLUSTER) == ["billing"]

    store.append(snapshot(at(1), [group("billing", {P0: 15}, error="coordinator not available")], {P0: 25}))
    window = store.window(CLUSTER, "billing")
    assert window is not None
    assert window.partitions[P0] == (PartitionSample(at(0), 10, 20, 0),)


def test_unknown_group_or_cluster_has_no_window(store: WindowStore) -> None:
    assert store.window(CLUSTER, "billing") is None
    store.append(simple(0))
    assert store.window(CLUSTER, "nobody") is None
    assert store.window("staging", "billing") is None
    assert store.windows(CLUSTER, ["nobody"]) == {}


def test_a_partition_appearing_later_has_fewer_samples(store: WindowStore) -> None:
    for i in range(3):
        committed: dict[TopicPartition, int | None] = {P0: 100 + i}
        log_end = {P0: 200 + i}
        if i == 2:
            committed[P1] = 40
            log_end[P1] = 70
        store.append(snapshot(at(i), [group("billing", committed)], log_end))
    window = store.window(CLUSTER, "billing")
    assert window is not None
    assert len(window.partitions[P0]) == 3
    assert window.partitions[P1] == (PartitionSample(at(2), 40, 70, 0),)


def test_a_partition_gone_from_the_newest_entry_is_gone_from_the_window(store: WindowStore) -> None:
    for i in range(3):
        committed: dict[TopicPartition, int | None] = {P0: 100 + i}
        log_end = {P0: 200 + i}
        if i < 2:
            committed[P1] = 40 + i
            log_end[P1] = 70 + i
        store.append(snapshot(at(i), [group("billing", committed)], log_end))
    window = store.window(CLUSTER, "billing")
    assert window is not None
    assert list(window.partitions) == [P0]
    assert window.latest is not None
    assert window.latest.committed == {P0: 102}


def test_committed_none_round_trips(store: WindowStore) -> None:
    store.append(snapshot(at(0), [group("billing", {P0: None, P1: 5})], {P0: 30, P1: 8}, {P0: 3, P1: 0}))
    store.append(snapshot(at(1), [group("billing", {P0: 12, P1: 6})], {P0: 31, P1: 9}, {P0: 3, P1: 0}))
    store.append(snapshot(at(2), [group("billing", {P0: 13, P1: None})], {P0: 32, P1: 9}, {P0: 3, P1: 0}))
    window = store.window(CLUSTER, "billing")
    assert window is not None
    assert window.partitions[P0] == (
        PartitionSample(at(0), None, 30, 3),
        PartitionSample(at(1), 12, 31, 3),
        PartitionSample(at(2), 13, 32, 3),
    )
    assert [s.lag for s in window.partitions[P0]] == [None, 19, 19]
    assert window.partitions[P1][-1] == PartitionSample(at(2), None, 9, 0)
    assert window.partitions[P1][-1].lag is None
    assert window.latest is not None
    assert window.latest.committed == {P0: 13, P1: None}


def test_members_round_trip_in_latest(store: WindowStore) -> None:
    members = [
        Member("consumer-1-6f1c", "billing-svc", "/10.1.2.3", ((P0[0], P0[1]), (Q0[0], Q0[1]))),
        Member("consumer-2-a07e", "billing-svc", "/10.1.2.4", (P1,)),
        Member("consumer-3-ffff", "billing-svc-ünïcode", "/10.1.2.5", ()),
    ]
    store.append(snapshot(at(0), [group("billing", {P0: 1, P1: 1, Q0: 1}, members=members[:1])], {P0: 2, P1: 2, Q0: 2}))
    store.append(
        snapshot(
            at(1),
            [group("billing", {P0: 1, P1: 1, Q0: 1}, members=members, state=GroupState.STABLE, generation=7)],
            {P0: 2, P1: 2, Q0: 2},
        )
    )
    window = store.window(CLUSTER, "billing")
    assert window is not None
    latest = window.latest
    assert latest is not None
    assert latest.group == "billing"
    assert latest.state is GroupState.STABLE
    assert latest.generation == 7
    assert latest.members == tuple(members)
    assert latest.members[0].assignment == (P0, Q0)
    assert latest.owner_of(P1) == members[1]
    assert latest.committed == {P0: 1, P1: 1, Q0: 1}


def test_group_samples_round_trip(store: WindowStore) -> None:
    history = [
        (GroupState.STABLE, [member(2, P0), member(1, P1)], 4),
        (GroupState.PREPARING_REBALANCE, [member(1, P0, P1)], 5),
        (GroupState.COMPLETING_REBALANCE, [], None),
        (GroupState.EMPTY, [], 6),
    ]
    for i, (state, members, generation) in enumerate(history):
        store.append(
            snapshot(at(i), [group("billing", {P0: 1}, members=members, state=state, generation=generation)], {P0: 2})
        )
    window = store.window(CLUSTER, "billing")
    assert window is not None
    assert window.samples == (
        GroupSample(at(0), GroupState.STABLE, ("m-1", "m-2"), 4),  # member ids sorted
        GroupSample(at(1), GroupState.PREPARING_REBALANCE, ("m-1",), 5),
        GroupSample(at(2), GroupState.COMPLETING_REBALANCE, (), None),
        GroupSample(at(3), GroupState.EMPTY, (), 6),
    )
    assert window.latest is not None
    assert window.latest.state is GroupState.EMPTY


def test_groups_lists_the_groups_of_a_cluster(store: WindowStore) -> None:
    assert store.groups(CLUSTER) == []
    store.append(
        snapshot(at(0), [group("orders", {P0: 1}), group("billing", {P0: 1}), group("audit", {Q0: 1})], {P0: 2, Q0: 2})
    )
    store.append(simple(0, "other-cluster-group", cluster="staging"))
    assert store.groups(CLUSTER) == ["audit", "billing", "orders"]
    assert store.groups("staging") == ["other-cluster-group"]
    assert store.groups("nowhere") == []


def test_windows_of_several_groups_at_once(store: WindowStore) -> None:
    for i in range(2):
        store.append(
            snapshot(
                at(i),
                [group("billing", {P0: 10 + i}), group("orders", {P1: 20 + i}), group("audit", {Q0: 30 + i})],
                {P0: 100, P1: 200, Q0: 300},
            )
        )
    windows = store.windows(CLUSTER, ["orders", "billing", "missing"])
    assert sorted(windows) == ["billing", "orders"]
    assert windows["billing"].partitions == {
        P0: (PartitionSample(at(0), 10, 100, 0), PartitionSample(at(1), 11, 100, 0))
    }
    assert windows["orders"].partitions == {
        P1: (PartitionSample(at(0), 20, 200, 0), PartitionSample(at(1), 21, 200, 0))
    }
    assert windows["orders"].group == "orders"
    assert store.windows(CLUSTER, []) == {}


# ---------------------------------------------------------------------------------------------------
# Expiry (snapshot time)
# ---------------------------------------------------------------------------------------------------


def test_a_group_not_appended_for_ttl_seconds_expires(store: WindowStore) -> None:
    store.append(snapshot(at(0), [group("billing", {P0: 1}), group("orders", {P0: 1})], {P0: 2}))
    store.append(snapshot(at(0) + TTL + 1, [group("orders", {P0: 2})], {P0: 3}))
    assert store.groups(CLUSTER) == ["orders"]
    assert store.window(CLUSTER, "billing") is None
    assert store.windows(CLUSTER, ["billing", "orders"]).keys() == {"orders"}
    orders = store.window(CLUSTER, "orders")
    assert orders is not None
    assert [s.at for s in orders.samples] == [at(0), at(0) + TTL + 1]


@pytest.mark.parametrize(("elapsed", "expired"), [(TTL - 1, False), (TTL, True)])
def test_expiry_boundary(store: WindowStore, elapsed: float, expired: bool) -> None:
    store.append(snapshot(at(0), [group("billing", {P0: 1}), group("orders", {P0: 1})], {P0: 2}))
    store.append(snapshot(at(0) + elapsed, [group("orders", {P0: 2})], {P0: 3}))
    assert (store.window(CLUSTER, "billing") is None) is expired
    assert store.groups(CLUSTER) == (["orders"] if expired else ["billing", "orders"])


def test_an_expired_group_seen_again_starts_a_fresh_window(store: WindowStore) -> None:
    store.append(snapshot(at(0), [group("billing", {P0: 1}), group("orders", {P0: 1})], {P0: 2}))
    store.append(snapshot(at(0) + TTL + 1, [group("orders", {P0: 2})], {P0: 3}))
    store.append(snapshot(at(0) + TTL + 2, [group("billing", {P0: 3}), group("orders", {P0: 3})], {P0: 4}))
    billing = store.window(CLUSTER, "billing")
    assert billing is not None
    assert billing.partitions[P0] == (PartitionSample(at(0) + TTL + 2, 3, 4, 0),)


def test_expiry_is_per_cluster(store: WindowStore) -> None:
    store.append(simple(0, "billing", cluster=CLUSTER))
    store.append(snapshot(at(0) + TTL + 1, [group("billing", {P0: 1})], {P0: 2}, cluster="staging"))
    assert store.groups(CLUSTER) == ["billing"]
    assert store.window(CLUSTER, "billing") is not None


# ---------------------------------------------------------------------------------------------------
# Redis only: real TTL, format version
# ---------------------------------------------------------------------------------------------------


def list_key(group_name: str, cluster: str = CLUSTER) -> str:
    return f"lagbot:window:{cluster}:{group_name}"


def test_redis_list_key_has_a_real_ttl(redis_store: RedisWindowStore, redis_client: redis.Redis) -> None:
    redis_store.append(simple(0))
    ttl = redis_client.ttl(list_key("billing"))
    assert isinstance(ttl, int)
    assert 0 < ttl <= TTL


def test_redis_stored_json_is_versioned(redis_store: RedisWindowStore, redis_client: redis.Redis) -> None:
    redis_store.append(
        snapshot(
            at(0),
            [group("billing", {P0: 10, Q0: None}, members=[member(1, P0, Q0)], generation=3)],
            {P0: 20, Q0: 5},
            {P0: 1, Q0: 0},
        )
    )
    raw = redis_client.lindex(list_key("billing"), 0)
    assert isinstance(raw, bytes)
    document = json.loads(raw)
    assert document["v"] == 1 == FORMAT_VERSION
    assert document == {
        "v": 1,
        "at": at(0),
        "state": "Stable",
        "generation": 3,
        "members": [["m-1", "client-1", "10.0.0.1", [["orders", 0], ["payments", 0]]]],
        "topics": {"orders": [[0, 10, 20, 1]], "payments": [[0, None, 5, 0]]},
    }


def test_redis_entry_of_another_format_version_is_refused(
    redis_store: RedisWindowStore, redis_client: redis.Redis
) -> None:
    redis_store.append(simple(0))
    redis_store.append(simple(1))
    raw = redis_client.lindex(list_key("billing"), 0)
    assert isinstance(raw, bytes)
    document = json.loads(raw)
    document["v"] = 99
    redis_client.lset(list_key("billing"), 0, json.dumps(document))
    # Entries are append-only, so a store reading this list afresh (a restarted bot) must refuse it.
    restarted = RedisWindowStore(redis_client, samples=SAMPLES, ttl=TTL)
    with pytest.raises(StoredFormatError) as caught:
        restarted.window(CLUSTER, "billing")
    assert str(caught.value) == "window entry has format version 99; this lagbot reads 1"
    with pytest.raises(StoredFormatError):
        restarted.windows(CLUSTER, ["billing"])


def test_redis_store_notices_an_entry_appended_by_another_writer(
    redis_store: RedisWindowStore, redis_client: redis.Redis
) -> None:
    # The store keeps a decoded copy of what it wrote; a newer lagbot appending a v2 entry must not be
    # hidden by it: the newest raw entry differs, so the list is read again and refused.
    redis_store.append(simple(0))
    assert redis_store.window(CLUSTER, "billing") is not None
    document = json.loads(redis_client.lindex(list_key("billing"), -1) or b"{}")
    document["v"] = 2
    # Another writer follows the append protocol of every lagbot: RPUSH and INCR of the list's sequence.
    redis_client.rpush(list_key("billing"), json.dumps(document))
    redis_client.incr(list_key("billing") + ":seq")
    with pytest.raises(StoredFormatError):
        redis_store.window(CLUSTER, "billing")


def test_redis_entry_without_a_version_is_refused(redis_store: RedisWindowStore, redis_client: redis.Redis) -> None:
    redis_client.rpush(list_key("billing"), json.dumps({"at": at(0), "state": "Stable"}))
    with pytest.raises(StoredFormatError) as caught:
        redis_store.window(CLUSTER, "billing")
    assert str(caught.value) == "window entry has format version None; this lagbot reads 1"


def test_redis_store_is_shared_by_replicas(redis_client: redis.Redis) -> None:
    first = RedisWindowStore(redis_client, samples=SAMPLES, ttl=TTL)
    second = RedisWindowStore(redis_client, samples=SAMPLES, ttl=TTL)
    first.append(simple(0))
    second.append(simple(1))
    window = first.window(CLUSTER, "billing")
    assert window is not None
    assert [s.at for s in window.samples] == [at(0), at(1)]


def test_samples_must_be_positive() -> None:
    with pytest.raises(ValueError, match="samples must be >= 1"):
        MemoryWindowStore(samples=0)


def test_redis_replicas_interleaving_on_a_full_list_read_what_redis_holds(redis_client: redis.Redis) -> None:
    # Two replicas share one Redis; the list is full (3 samples) and they append in turn. Each must read
    # exactly what Redis holds, never its own stale copy extended by its own append.
    a = RedisWindowStore(redis_client, samples=3, ttl=TTL)
    b = RedisWindowStore(redis_client, samples=3, ttl=TTL)

    def committed_seen(store: RedisWindowStore) -> list[int | None]:
        window = store.window(CLUSTER, "billing")
        assert window is not None
        return [s.committed for s in window.partitions[("orders", 0)]]

    def snapshot(i: int, committed: int) -> ClusterSnapshot:
        group = GroupSnapshot("billing", GroupState.STABLE, (), {("orders", 0): committed})
        return ClusterSnapshot(CLUSTER, at(i), {"billing": group}, {("orders", 0): 100}, {("orders", 0): 0})

    for i in range(3):
        a.append(snapshot(i, i))
    assert committed_seen(a) == [0, 1, 2]
    b.append(snapshot(3, 3))  # A does not read in between: its copy is now one behind Redis
    a.append(snapshot(4, 4))
    assert redis_client.llen(list_key("billing")) == 3
    assert committed_seen(a) == [2, 3, 4]
    assert committed_seen(b) == [2, 3, 4]
    b.append(snapshot(5, 5))
    b.append(snapshot(6, 6))
    a.append(snapshot(7, 7))
    assert committed_seen(a) == [5, 6, 7]
    assert committed_seen(b) == [5, 6, 7]


def test_redis_append_leaves_list_sequence_and_index_as_the_append_protocol_says(
    redis_store: RedisWindowStore, redis_client: redis.Redis
) -> None:
    # A cycle's appends run as one script; what it leaves must be what every lagbot's append leaves: per group
    # the list trimmed to `samples`, its sequence number counting the appends, both with the TTL, and the
    # group in the cluster's index scored with the exact snapshot time. A group with an error writes nothing.
    taken_at = T0 + 0.123456789
    for i in range(SAMPLES + 2):
        failed = group("audit", {P0: 1}, error="coordinator not available")
        redis_store.append(
            snapshot(taken_at + i, [group("billing", {P0: i}), group("search", {Q0: i}), failed], {P0: 9, Q0: 9})
        )
    for name in ("billing", "search"):
        key = list_key(name)
        assert redis_client.llen(key) == SAMPLES
        assert redis_client.get(key + ":seq") == str(SAMPLES + 2).encode()
        for ttl in (redis_client.ttl(key), redis_client.ttl(key + ":seq")):
            assert isinstance(ttl, int) and 0 < ttl <= TTL
        assert redis_client.zscore(f"lagbot:window-groups:{CLUSTER}", name) == taken_at + SAMPLES + 1
    assert not redis_client.exists(list_key("audit"), list_key("audit") + ":seq")
    assert redis_store.groups(CLUSTER) == ["billing", "search"]
