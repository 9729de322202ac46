"""Diagnosis: every cause kind, firing and not firing, on hand-made windows.

Each window goes through the real evaluator (`evaluate_group`) and then `diagnose`, as in production.
Windows are built oldest first; a partition with fewer rows than the group has samples appeared later
(its rows are aligned with the newest samples).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest

from lagbot.core import messages
from lagbot.core.config import Evaluation, Thresholds
from lagbot.core.model import (
    Cause,
    GroupSample,
    GroupSnapshot,
    GroupState,
    GroupVerdict,
    GroupWindow,
    Member,
    PartitionSample,
    Status,
)
from lagbot.engine import wording as engine_wording
from lagbot.engine.capacity import replicas_needed
from lagbot.engine.diagnose import diagnose
from lagbot.engine.evaluate import evaluate_group
from lagbot.service.remedies import remedy

CLUSTER = "prod"
GROUP = "billing"
TOPIC = "orders"
T0 = 1_700_000_000.0

Row = tuple[int | None, int, int]
"""(committed, log_end, log_start) of one partition at one sample time."""


def rows(committed: Sequence[int | None], log_end: Sequence[int], log_start: int = 0) -> list[Row]:
    assert len(committed) == len(log_end)
    return [(c, e, log_start) for c, e in zip(committed, log_end, strict=True)]


def member(n: int, *partitions: int) -> Member:
    return Member(
        member_id=f"m-{n}",
        client_id=f"client-{n}",
        host=f"10.0.0.{n}",
        assignment=tuple((TOPIC, p) for p in partitions),
    )


def make_window(
    parts: dict[int, list[Row]],
    *,
    members: Sequence[Member] = (),
    state: GroupState = GroupState.STABLE,
    step: float = 60.0,
    generation: int = 1,
    group_samples: Sequence[tuple[GroupState, tuple[str, ...], int | None]] | None = None,
) -> GroupWindow:
    n = max(len(r) for r in parts.values())
    times = [T0 + i * step for i in range(n)]
    partitions = {
        (TOPIC, p): tuple(PartitionSample(times[n - len(rs) + i], c, e, s) for i, (c, e, s) in enumerate(rs))
        for p, rs in parts.items()
    }
    if group_samples is None:
        ids = tuple(sorted(m.member_id for m in members))
        samples = tuple(GroupSample(t, state, ids, generation) for t in times)
    else:
        assert len(group_samples) == n
        samples = tuple(GroupSample(t, st, ids, gen) for t, (st, ids, gen) in zip(times, group_samples, strict=True))
    latest = GroupSnapshot(
        group=GROUP,
        state=samples[-1].state,
        members=tuple(members),
        committed={tp: s[-1].committed for tp, s in partitions.items()},
        generation=samples[-1].generation,
    )
    return GroupWindow(cluster=CLUSTER, group=GROUP, samples=samples, partitions=partitions, latest=latest)


def run(window: GroupWindow, rules: Evaluation | None = None) -> tuple[GroupVerdict, tuple[Cause, ...]]:
    rules = rules or Evaluation()
    now = window.samples[-1].at
    verdict = evaluate_group(window, thresholds=Thresholds(), rules=rules, now=now)
    return verdict, diagnose(verdict, window, rules)


def kinds(causes: Sequence[Cause]) -> list[str]:
    return [c.kind for c in causes]


def the(causes: Sequence[Cause], kind: str) -> Cause:
    found = [c for c in causes if c.kind == kind]
    assert len(found) == 1, f"expected one {kind}, got {kinds(causes)}"
    return found[0]


def rated(
    produce: int, consume: float, lag: int, *, samples: int = 3, step: float = 60.0, start: int = 100_000
) -> list[Row]:
    """A partition written at `produce`/s and committed at `consume`/s whose lag ends at `lag`."""
    log_end = [start + round(produce * step * i) for i in range(samples)]
    final = log_end[-1] - lag
    committed = [final - round(consume * step * (samples - 1 - i)) for i in range(samples)]
    return rows(committed, log_end)


# ---------------------------------------------------------------------------------------------------
# Healthy groups
# ---------------------------------------------------------------------------------------------------


def test_healthy_group_caught_up_and_steady_has_no_causes() -> None:
    window = make_window(
        {
            0: rows([1000, 1600, 2200], [1000, 1600, 2200]),
            1: rows([500, 1100, 1700], [500, 1100, 1700]),
        },
        members=[member(1, 0), member(2, 1)],
    )
    verdict, causes = run(window)
    assert verdict.status is Status.OK
    assert verdict.total_lag == 0
    assert causes == ()


def test_a_few_messages_in_flight_state_no_lag_distribution_causes() -> None:
    # Partition 0 holds all the (small) lag, producers just sped up 5x and consumers are behind them:
    # hot_partition, throughput_deficit and producer_burst would all fire were the lag worth explaining.
    window = make_window(
        {
            0: rows([990, 1055, 1100, 1200], [1000, 1060, 1120, 1420]),
            1: rows([500, 500, 500, 500], [500, 500, 500, 500]),
        },
        members=[member(1, 0, 1)],
    )
    verdict, causes = run(window)
    assert verdict.status is Status.OK
    assert verdict.total_lag == 220
    assert verdict.trend == "growing"
    assert causes == ()

    _, low_bar = run(window, Evaluation(diagnose_min_lag=100))
    assert sorted(kinds(low_bar)) == ["hot_partition", "producer_burst", "throughput_deficit"]


# ---------------------------------------------------------------------------------------------------
# data_loss
# ---------------------------------------------------------------------------------------------------


def test_data_loss_fires_when_committed_is_below_log_start() -> None:
    window = make_window(
        {
            0: rows([100, 120, 140], [5000, 5100, 5200], log_start=500),
            1: rows([200, 220, 240], [5000, 5100, 5200], log_start=1040),
        },
        members=[member(1, 0), member(2, 1)],
    )
    _, causes = run(window)
    cause = the(causes, "data_loss")
    # 500 - 140 = 360 and 1040 - 240 = 800 messages deleted unread; the worst is partition 1.
    assert cause.explanation == (
        "1,160 messages on 2 partition(s) were deleted by retention before the group read them "
        "(worst: orders-1); the committed offset is below the log start"
    )
    assert remedy(cause) == "reset_offsets"
    assert cause.confidence == 0.99
    assert cause.evidence == {"partitions": [0, 1], "messages_deleted_unread": 1160}
    assert cause.rank == 1
    assert "retention_risk" not in kinds(causes)


def test_data_loss_does_not_fire_at_the_log_start() -> None:
    window = make_window(
        {0: rows([500, 520, 540], [5000, 5100, 5200], log_start=540)},
        members=[member(1, 0)],
    )
    _, causes = run(window)
    assert "data_loss" not in kinds(causes)


# ---------------------------------------------------------------------------------------------------
# retention_risk
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("final_committed", "fires", "share_text", "share"),
    [
        (10_150, True, "85%", 0.85),
        (10_200, True, "80%", 0.8),  # exactly 80% of the retained messages
        (10_201, False, "", 0.0),
    ],
)
def test_retention_risk(final_committed: int, fires: bool, share_text: str, share: float) -> None:
    # The log retains offsets 10,000..11,000: retention already truncates it.
    window = make_window(
        {0: rows([10_100, 10_130, final_committed], [11_000, 11_000, 11_000], log_start=10_000)},
        members=[member(1, 0)],
    )
    _, causes = run(window)
    if not fires:
        assert "retention_risk" not in kinds(causes)
        return
    cause = the(causes, "retention_risk")
    assert cause.explanation == (
        f"orders-0: lag is {share_text} of the retained messages (1 partition(s) at risk); "
        "retention will delete unread messages soon"
    )
    assert remedy(cause) == "drain"
    assert cause.confidence == 0.9
    assert cause.evidence == {"partition": 0, "topic": TOPIC, "lag_share_of_retained": share}


def test_retention_risk_reports_the_worst_partition_and_counts_all_at_risk() -> None:
    window = make_window(
        {
            0: rows([10_100, 10_130, 10_150], [11_000, 11_000, 11_000], log_start=10_000),  # 85%
            1: rows([20_050, 20_050, 20_050], [21_000, 21_000, 21_000], log_start=20_000),  # 95%
            2: rows([30_900, 30_900, 30_900], [31_000, 31_000, 31_000], log_start=30_000),  # 10%
        },
        members=[member(1, 0, 1, 2)],
    )
    _, causes = run(window)
    cause = the(causes, "retention_risk")
    assert cause.explanation.startswith("orders-1: lag is 95% of the retained messages (2 partition(s) at risk)")
    assert cause.evidence == {"partition": 1, "topic": TOPIC, "lag_share_of_retained": 0.95}


def test_retention_risk_needs_a_log_retention_has_truncated() -> None:
    # 850 of 1,000 messages unread, but the log still starts at 0: retention has deleted nothing yet.
    window = make_window({0: rows([100, 130, 150], [1000, 1000, 1000])}, members=[member(1, 0)])
    _, causes = run(window)
    assert "retention_risk" not in kinds(causes)


# ---------------------------------------------------------------------------------------------------
# stuck_consumer
# ---------------------------------------------------------------------------------------------------


def test_stuck_consumer_names_the_owner() -> None:
    window = make_window(
        {0: rows([4000, 4000, 4000], [5000, 5100, 5200])},
        members=[member(1, 0)],
    )
    verdict, causes = run(window)
    assert verdict.partitions[0].status is Status.STALL
    assert kinds(causes) == ["stuck_consumer"]
    cause = causes[0]
    assert cause.explanation == (
        "partition 0 of orders: committed offset not moving while 1,200 messages wait; "
        "owner: client-1@10.0.0.1 (member m-1)"
    )
    assert "m-1" in cause.explanation and "client-1" in cause.explanation and "10.0.0.1" in cause.explanation
    assert remedy(cause) == "restart"
    assert cause.confidence == 0.9
    assert cause.rank == 1
    assert cause.evidence == {
        "partitions": [0],
        "owners": [{"member_id": "m-1", "client_id": "client-1", "host": "10.0.0.1"}],
    }


def test_stuck_consumer_lists_every_stalled_partition_and_owner() -> None:
    window = make_window(
        {
            0: rows([4000, 4000, 4000], [5000, 5100, 5200]),
            1: rows([3000, 3000, 3000], [5000, 5100, 5200]),
            2: rows([5000, 5100, 5200], [5000, 5100, 5200]),
        },
        members=[member(1, 0), member(2, 1, 2)],
    )
    _, causes = run(window)
    cause = the(causes, "stuck_consumer")
    assert cause.explanation == (
        "partitions 0, 1 of orders: committed offset not moving while 3,400 messages wait; "
        "owner: client-1@10.0.0.1 (member m-1); client-2@10.0.0.2 (member m-2); "
        # m-1 owns only partition 0, which is stuck: the member is named (lagbot.engine.agreement whole_members).
        "every partition of client-1@10.0.0.1 (member m-1) is stuck: that member is stuck, restart it; "
        # The group reads 1.7 msg/s of 5.0 written, lag growing; partition 2 keeps up (100 per 60 s both ways).
        "scaling would not help: the other 1 partition(s) keep up (1.7 msg/s read, 1.7 msg/s written) and the "
        "missing consumption is the 2 stuck partition(s)', which no new member would read"
    )
    assert "throughput_deficit" not in kinds(causes)


def test_stuck_consumer_with_owner_unknown() -> None:
    # Stable but the group reports no members: the owner cannot be known, the partition is still stuck.
    window = make_window({0: rows([4000, 4000, 4000], [5000, 5100, 5200])}, members=[])
    verdict, causes = run(window)
    assert verdict.partitions[0].status is Status.STALL
    assert kinds(causes) == ["stuck_consumer"]
    assert causes[0].explanation == (
        "partition 0 of orders: committed offset not moving while 1,200 messages wait; "
        "owner: unknown (the group reports no members)"
    )
    assert causes[0].evidence["owners"] == [None]
    assert remedy(causes[0]) == "restart"


def test_stuck_consumer_does_not_fire_while_offsets_move() -> None:
    window = make_window(
        {0: rows([4000, 4050, 4100], [5000, 5100, 5200])},
        members=[member(1, 0)],
    )
    verdict, causes = run(window)
    assert verdict.partitions[0].status is Status.WARN
    assert "stuck_consumer" not in kinds(causes)


# ---------------------------------------------------------------------------------------------------
# no_active_members
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("state", [GroupState.EMPTY, GroupState.DEAD])
def test_no_active_members_with_growing_lag(state: GroupState) -> None:
    window = make_window({0: rows([1000, 1000, 1000], [3000, 3500, 4000])}, state=state)
    verdict, causes = run(window)
    assert verdict.trend == "growing"
    assert kinds(causes) == ["no_active_members"]
    cause = causes[0]
    assert cause.explanation == (
        f"the group is {state.value} (no consumers) while 3,000 messages wait and lag is growing"
    )
    assert cause.confidence == 0.95
    assert remedy(cause) == "scale"
    assert cause.evidence == {"state": state.value, "total_lag": 3000, "trend": "growing"}


def test_no_active_members_with_steady_lag_is_less_sure() -> None:
    window = make_window({0: rows([1000, 1000, 1000], [4000, 4000, 4000])}, state=GroupState.EMPTY)
    verdict, causes = run(window)
    assert verdict.trend == "steady"
    cause = the(causes, "no_active_members")
    assert cause.explanation == "the group is Empty (no consumers) while 3,000 messages wait"
    assert cause.confidence == 0.8
    assert remedy(cause) == "scale"


def test_no_active_members_does_not_fire_without_lag_or_when_stable() -> None:
    empty_caught_up = make_window({0: rows([4000, 4000, 4000], [4000, 4000, 4000])}, state=GroupState.EMPTY)
    assert run(empty_caught_up)[1] == ()
    stable_lagging = make_window({0: rows([1000, 1600, 2200], [3000, 3600, 4200])}, members=[member(1, 0)])
    assert "no_active_members" not in kinds(run(stable_lagging)[1])


# ---------------------------------------------------------------------------------------------------
# unassigned_partitions
# ---------------------------------------------------------------------------------------------------


def test_unassigned_partitions_fires_for_a_partition_nobody_owns() -> None:
    window = make_window(
        {
            0: rows([1000, 1600, 2200], [1000, 1600, 2200]),
            1: rows([500, 500, 500], [600, 700, 800]),
        },
        members=[member(1, 0)],
    )
    verdict, causes = run(window)
    assert verdict.partitions[1].status is Status.STOP
    cause = the(causes, "unassigned_partitions")
    assert cause.explanation == "the group is Stable with 1 member(s) but nobody owns orders-1"
    assert remedy(cause) == "restart"
    assert cause.confidence == 0.85
    assert cause.evidence == {"partitions": [[TOPIC, 1]]}


def test_unassigned_partitions_does_not_fire_when_every_partition_is_owned() -> None:
    window = make_window(
        {
            0: rows([1000, 1600, 2200], [1000, 1600, 2200]),
            1: rows([500, 600, 700], [600, 700, 800]),
        },
        members=[member(1, 0, 1)],
    )
    assert "unassigned_partitions" not in kinds(run(window)[1])


def test_unassigned_partitions_does_not_fire_while_rebalancing() -> None:
    window = make_window(
        {0: rows([1000, 1600, 2200], [1000, 1600, 2200]), 1: rows([500, 600, 700], [600, 700, 800])},
        members=[member(1, 0)],
        state=GroupState.PREPARING_REBALANCE,
    )
    assert "unassigned_partitions" not in kinds(run(window)[1])


# ---------------------------------------------------------------------------------------------------
# hot_partition
# ---------------------------------------------------------------------------------------------------


def hot_window(hot_produce: int, hot_consume: float, other_produce: int, other_consume: float) -> GroupWindow:
    """Partition 0 ends with 9,100 of the group's 10,000 messages of lag (91%); 1 and 2 with 450 each."""
    return make_window(
        {
            0: rated(hot_produce, hot_consume, 9100),
            1: rated(other_produce, other_consume, 450),
            2: rated(other_produce, other_consume, 450),
        },
        members=[member(1, 0), member(2, 1), member(3, 2)],
    )


@pytest.mark.parametrize(
    ("rates", "why", "remediation", "label"),
    [
        ((100, 99, 10, 10), "key_skew", "drain", "(key skew)"),
        ((30, 30, 10, 10), "key_skew", "drain", "(key skew)"),  # exactly 3x the others' median
        ((29, 29, 10, 10), "unknown", "drain", None),
        ((10, 0.5, 10, 10), "slow_owner", "restart", "(slow owner)"),
        ((10, 2, 10, 6), "slow_owner", "restart", "(slow owner)"),  # exactly a third of the others' median
        ((10, 2.5, 10, 6), "unknown", "drain", None),
        ((10, 10, 10, 10), "unknown", "drain", None),
    ],
)
def test_hot_partition(rates: tuple[int, float, int, float], why: str, remediation: str, label: str | None) -> None:
    hot_produce, hot_consume = rates[0], rates[1]
    verdict, causes = run(hot_window(*rates))
    assert verdict.total_lag == 10_000
    cause = the(causes, "hot_partition")
    assert cause.explanation.startswith("partition 0 of orders holds 91% of the lag;")
    assert "client-1@10.0.0.1 (member m-1)" in cause.explanation
    assert messages.rate(hot_consume) in cause.explanation
    assert messages.rate(hot_produce) in cause.explanation
    if label is None:
        assert "key skew" not in cause.explanation and "slow owner" not in cause.explanation
    else:
        assert label in cause.explanation
    assert remedy(cause) == remediation
    assert cause.confidence == pytest.approx(0.6 + 0.3 * 0.91)
    assert cause.evidence == {
        "topic": TOPIC,
        "partition": 0,
        "lag_share": 0.91,
        "why": why,
        "produce_rate": float(hot_produce),
        "consume_rate": float(hot_consume),
    }


def test_hot_partition_key_skew_wording_carries_the_rates() -> None:
    _, causes = run(hot_window(100, 99, 10, 10))
    explanation = the(causes, "hot_partition").explanation
    assert "91%" in explanation and "99.0 msg/s" in explanation and "100 msg/s" in explanation


@pytest.mark.parametrize(("hot_lag", "fires"), [(600, True), (599, False)])
def test_hot_partition_needs_sixty_percent_of_the_lag(hot_lag: int, fires: bool) -> None:
    window = make_window(
        {0: rated(10, 10, hot_lag), 1: rated(10, 10, 1000 - hot_lag)},
        members=[member(1, 0), member(2, 1)],
    )
    _, causes = run(window)
    if fires:
        assert the(causes, "hot_partition").explanation.startswith("partition 0 of orders holds 60% of the lag;")
    else:
        assert "hot_partition" not in kinds(causes)


def test_hot_partition_claims_no_share_beside_a_partition_of_unknown_lag() -> None:
    """Partition 1 has no committed offset (its lag unknown, 10,100 messages written): partition 0's 5,000 are
    100% of the known lag only, and partition 1 may hold more. No hot partition is claimed."""
    window = make_window(
        {0: rated(10, 10, 5000), 1: rows([None, None, None], [9000, 9500, 10_100])},
        members=[member(1, 0), member(2, 1)],
    )
    verdict, causes = run(window)
    assert (verdict.total_lag, verdict.partitions[1].lag) == (5000, None)
    assert "hot_partition" not in kinds(causes)


def test_hot_partition_does_not_fire_for_evenly_spread_lag() -> None:
    window = make_window(
        {p: rated(10, 10, 1000) for p in range(3)},
        members=[member(1, 0), member(2, 1), member(3, 2)],
    )
    verdict, causes = run(window)
    assert verdict.total_lag == 3000
    assert causes == ()


def test_hot_partition_owned_by_nobody_does_not_claim_the_group_reports_no_members() -> None:
    window = make_window(
        {0: rows([1000, 1000, 1000], [9000, 9500, 10_100]), 1: rated(10, 10, 900)},
        members=[member(1, 1)],
    )
    verdict, causes = run(window)
    assert verdict.members and verdict.partitions[0].owner is None
    cause = the(causes, "hot_partition")
    assert cause.explanation.startswith("partition 0 of orders holds 91% of the lag;")
    assert "reports no members" not in cause.explanation
    assert "nobody owns the partition" in cause.explanation


# ---------------------------------------------------------------------------------------------------
# throughput_deficit and partition_ceiling
# ---------------------------------------------------------------------------------------------------


def deficit_window(partitions: int, members: Sequence[Member], consume: float) -> GroupWindow:
    """Every partition written at 10/s and committed at `consume`/s over 100 s: lag grows."""
    return make_window(
        {p: rated(10, consume, 1500, step=50.0) for p in range(partitions)},
        members=members,
        step=50.0,
    )


def test_throughput_deficit_sizes_the_replicas() -> None:
    window = deficit_window(6, [member(1, 0, 1, 2), member(2, 3, 4, 5)], consume=5)
    verdict, causes = run(window)
    assert (verdict.produce_rate, verdict.consume_rate, verdict.trend) == (60.0, 30.0, "growing")
    assert kinds(causes) == ["throughput_deficit"]
    cause = causes[0]
    # 15 msg/s per member; 60 msg/s x 1.2 headroom = 72 msg/s -> ceil(4.8) = 5 replicas.
    assert cause.explanation == (
        "consumers commit 30.0 msg/s while producers write 60.0 msg/s; "
        "2 member(s) now, 5 would keep up (at most 6, one per partition)"
    )
    assert remedy(cause) == "scale"
    assert cause.confidence == 0.75
    assert cause.evidence == {
        "produce_rate": 60.0,
        "consume_rate": 30.0,
        "members": 2,
        "replicas_needed": 5,
        "partitions": 6,
    }


def test_throughput_deficit_replicas_are_capped_at_the_partition_count() -> None:
    window = deficit_window(6, [member(1, 0, 1, 2), member(2, 3, 4, 5)], consume=1)
    _, causes = run(window)
    cause = the(causes, "throughput_deficit")
    # 3 msg/s per member would need ceil(72 / 3) = 24 replicas; only 6 can own a partition.
    assert cause.evidence["replicas_needed"] == 6
    assert cause.explanation == (
        "consumers commit 6.0 msg/s while producers write 60.0 msg/s; "
        "2 member(s) now, 6 would keep up (at most 6, one per partition)"
    )


def test_throughput_deficit_without_members_cannot_size_replicas() -> None:
    window = deficit_window(2, [], consume=5)
    _, causes = run(window)
    cause = the(causes, "throughput_deficit")
    assert cause.explanation == (
        "consumers commit 10.0 msg/s while producers write 20.0 msg/s; "
        "the broker reports no members for the group (some brokers never do), so its consumers are not counted "
        "here: a scale proposal counts the workload's current replicas as its consumers"
    )
    assert cause.evidence["replicas_needed"] is None
    assert remedy(cause) == "scale"


def test_throughput_deficit_does_not_fire_when_consumers_keep_up() -> None:
    window = deficit_window(6, [member(1, 0, 1, 2), member(2, 3, 4, 5)], consume=10)
    verdict, causes = run(window)
    assert verdict.trend == "steady"
    assert "throughput_deficit" not in kinds(causes)
    assert "partition_ceiling" not in kinds(causes)


def test_throughput_deficit_does_not_fire_when_lag_is_not_growing() -> None:
    # 9.9 msg/s against 10: lag grows by 10 over 100 s on 60,000, well within 1%: steady.
    window = make_window(
        {0: rated(10, 9.9, 60_000, step=50.0), 1: rated(10, 10, 0, step=50.0)},
        members=[member(1, 0, 1)],
        step=50.0,
    )
    verdict, causes = run(window)
    assert verdict.trend == "steady"
    assert "throughput_deficit" not in kinds(causes)


@pytest.mark.parametrize("extra_members", [0, 1])
def test_partition_ceiling_replaces_throughput_deficit(extra_members: int) -> None:
    members = [member(1, 0), member(2, 1)] + [member(3 + i) for i in range(extra_members)]
    verdict, causes = run(deficit_window(2, members, consume=5))
    assert (verdict.produce_rate, verdict.consume_rate, verdict.trend) == (20.0, 10.0, "growing")
    assert "throughput_deficit" not in kinds(causes)
    cause = the(causes, "partition_ceiling")
    assert cause.explanation == (
        "consumers commit 10.0 msg/s while producers write 20.0 msg/s, with one member per partition already (2): "
        "more replicas would sit idle; drain the backlog or add partitions"
    )
    assert remedy(cause) == "drain"
    assert cause.confidence == 0.8
    assert cause.evidence == {"produce_rate": 20.0, "consume_rate": 10.0, "partitions": 2}


def test_partition_ceiling_needs_every_partition_to_have_its_own_member() -> None:
    # As many members as partitions, but partition 1 is owned by nobody: not a ceiling, the partition is
    # unassigned (and scaling is not the answer either, so no throughput_deficit).
    window = deficit_window(2, [member(1, 0), member(2)], consume=5)
    verdict, causes = run(window)
    assert verdict.trend == "growing"
    assert "partition_ceiling" not in kinds(causes)
    assert "throughput_deficit" not in kinds(causes)
    assert the(causes, "unassigned_partitions").evidence == {"partitions": [[TOPIC, 1]]}
    # One member owns both partitions while the other idles: not one member per partition either.
    _, uneven = run(deficit_window(2, [member(1, 0, 1), member(2)], consume=5))
    assert "partition_ceiling" not in kinds(uneven)


def test_partition_ceiling_does_not_fire_with_fewer_members_than_partitions() -> None:
    _, causes = run(deficit_window(3, [member(1, 0, 1), member(2, 2)], consume=5))
    assert "partition_ceiling" not in kinds(causes)
    assert the(causes, "throughput_deficit").evidence["replicas_needed"] == 3


# ---------------------------------------------------------------------------------------------------
# replicas_needed
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("produce", "consume", "members", "partitions", "expected"),
    [
        (60.0, 30.0, 2, 6, 5),  # 15/member: 72 / 15 = 4.8 -> 5
        (100.0, 10.0, 1, 1000, 12),  # 120 / 10 = 12 exactly: no extra replica
        (120.0, 40.0, 4, 100, 15),  # 144 / 10 = 14.4 -> 15
        (195.0, 13.0, 3, 100, 54),  # 234 / (13/3) = 54 exactly (floating point gives 54.000000000000007)
        (255.0, 17.0, 7, 200, 126),  # 306 / (17/7) = 126 exactly
        (100.0, 10.0, 2, 6, 6),  # 24 wanted, capped at the partition count
        (10.0, 12.0, 1, 4, 1),  # already keeps up: 12 / 12 = 1
        (0.0, 5.0, 1, 4, 1),  # never fewer than one
        (10.0, 0.0, 2, 8, 8),  # nothing consumed: as many as partitions
        (10.0, 5.0, 0, 8, 3),  # no members counts as one: 12 / 5 = 2.4 -> 3
    ],
)
def test_replicas_needed(produce: float, consume: float, members: int, partitions: int, expected: int) -> None:
    assert replicas_needed(produce, consume, members, partitions) == expected


# ---------------------------------------------------------------------------------------------------
# producer_burst
# ---------------------------------------------------------------------------------------------------


def burst_window(newest_log_end: int, *, late_partition: bool = False, spare: bool = True) -> GroupWindow:
    """Partition 0 written at 10/s for 120 s, then up to `newest_log_end` in the last 60 s. `spare`: the member also
    owns an idle partition 2 (nothing written, nothing behind), so a second replica would have work: scaling can
    help."""
    parts = {0: rows([9000, 9600, 10_200, 10_800], [10_000, 10_600, 11_200, newest_log_end])}
    assignment = [0]
    if spare:
        parts[2] = rows([500, 500, 500, 500], [500, 500, 500, 500])
        assignment.append(2)
    if late_partition:
        parts[1] = rows([45_000], [50_000])  # appears at the newest sample only
        assignment.append(1)
    return make_window(parts, members=[member(1, *assignment)])


@pytest.mark.parametrize(
    ("newest_log_end", "explanation"),
    [
        (17_200, "producers write 100 msg/s now, 10.0x their trailing average of 10.0 msg/s"),
        (13_000, "producers write 30.0 msg/s now, 3.0x their trailing average of 10.0 msg/s"),  # exactly 3x
    ],
)
def test_producer_burst_fires(newest_log_end: int, explanation: str) -> None:
    _, causes = run(burst_window(newest_log_end))
    cause = the(causes, "producer_burst")
    assert cause.explanation == explanation
    assert remedy(cause) == "scale"
    assert cause.confidence == 0.7
    recent = (newest_log_end - 11_200) / 60
    assert cause.evidence == {"recent_rate": round(recent, 2), "trailing_rate": 10.0}


def test_a_burst_on_a_group_with_a_consumer_per_partition_offers_no_scale() -> None:
    """One partition, one member of its own: more replicas would idle, so the burst is named without a remedy."""
    _, causes = run(burst_window(17_200, spare=False))
    cause = the(causes, "producer_burst")
    assert cause.explanation == "producers write 100 msg/s now, 10.0x their trailing average of 10.0 msg/s"
    assert (remedy(cause), cause.confidence) == (None, 0.7)


def test_producer_burst_does_not_fire_below_three_times_the_trailing_rate() -> None:
    _, causes = run(burst_window(12_940))  # 29 msg/s against 10
    assert "producer_burst" not in kinds(causes)


def test_a_partition_appearing_mid_window_is_not_a_burst() -> None:
    window = burst_window(11_800, late_partition=True)
    assert len(window.partitions[(TOPIC, 1)]) == 1
    verdict, causes = run(window)
    assert verdict.total_lag == 6000
    assert "producer_burst" not in kinds(causes)


def test_a_real_burst_is_still_seen_next_to_a_partition_appearing_mid_window() -> None:
    _, causes = run(burst_window(17_200, late_partition=True))
    assert the(causes, "producer_burst").evidence == {"recent_rate": 100.0, "trailing_rate": 10.0}


# ---------------------------------------------------------------------------------------------------
# rebalance_churn
# ---------------------------------------------------------------------------------------------------

STABLE, PREPARING = GroupState.STABLE, GroupState.PREPARING_REBALANCE


@pytest.mark.parametrize(
    ("samples", "changes", "rebalancing"),
    [
        ([(STABLE, ("m-1", "m-2"), 1), (STABLE, ("m-1",), 1), (STABLE, ("m-1", "m-3"), 1)], 2, 0),
        ([(STABLE, ("m-1",), 1), (PREPARING, ("m-1",), 1), (STABLE, ("m-1",), 1)], 2, 1),
        ([(STABLE, ("m-1",), 1), (STABLE, ("m-1",), 2), (STABLE, ("m-1",), 3)], 2, 0),
        ([(STABLE, ("m-1",), 1), (STABLE, ("m-2",), 2), (STABLE, ("m-1",), 3), (STABLE, ("m-3",), 4)], 3, 0),
    ],
    ids=["member-ids", "state", "generation", "three-changes"],
)
def test_rebalance_churn_fires(
    samples: list[tuple[GroupState, tuple[str, ...], int]], changes: int, rebalancing: int
) -> None:
    caught_up = [1000 + 100 * i for i in range(len(samples))]
    window = make_window({0: rows(caught_up, caught_up)}, members=[member(1, 0)], group_samples=samples)
    _, causes = run(window)
    assert kinds(causes) == ["rebalance_churn"]
    cause = causes[0]
    span = "2 min" if len(samples) == 3 else "3 min"
    assert cause.explanation == (
        f"membership changed {changes} times and the group was rebalancing in {rebalancing} of {len(samples)} "
        f"snapshots over {span}; check max.poll.interval.ms and session.timeout.ms"
    )
    assert remedy(cause) is None
    assert cause.confidence == pytest.approx(min(0.9, 0.5 + 0.1 * changes))
    times = [T0 + 60.0 * i for i in range(len(samples))]
    changed_at = [times[i] for i in range(1, len(samples)) if samples[i] != samples[i - 1]]
    assert cause.evidence == {
        "changes": changes,
        "rebalancing_samples": rebalancing,
        "samples": len(samples),
        # When each change and rebalancing snapshot was seen: what tells our own scale's rebalance apart.
        "changed_at": changed_at,
        "rebalancing_at": [t for t, s in zip(times, samples, strict=True) if s[0] is PREPARING],
    }
    assert len(changed_at) == changes


def test_rebalance_churn_does_not_fire_for_a_single_change() -> None:
    samples = [(STABLE, ("m-1",), 1), (STABLE, ("m-1",), 1), (STABLE, ("m-1", "m-2"), 2)]
    caught_up = [1000, 1100, 1200]
    window = make_window({0: rows(caught_up, caught_up)}, members=[member(1, 0)], group_samples=samples)
    assert run(window)[1] == ()


# ---------------------------------------------------------------------------------------------------
# idle_members
# ---------------------------------------------------------------------------------------------------


def test_idle_members_is_no_cause_of_a_group_that_keeps_up() -> None:
    # More members than partitions in a group that has read everything: no trouble, no cause, no button.
    caught_up = [1000, 1100, 1200]
    window = make_window(
        {0: rows(caught_up, caught_up), 1: rows(caught_up, caught_up)},
        members=[member(1, 0), member(2, 1), member(3)],
    )
    assert run(window)[1] == ()


def test_idle_members_fires_for_a_group_behind_and_never_offers_scale() -> None:
    # The same members, behind: partition 0's offset is stuck while 300 -> 500 wait. The idle member is named, and
    # no cause offers to scale: more members would own nothing too (one member per partition at most).
    caught_up = [1000, 1100, 1200]
    window = make_window(
        {0: rows([700, 700, 700], caught_up), 1: rows(caught_up, caught_up)},
        members=[member(1, 0), member(2, 1), member(3)],
    )
    _, causes = run(window)
    assert kinds(causes) == ["stuck_consumer", "hot_partition", "idle_members"]
    cause = the(causes, "idle_members")
    assert cause.explanation == (
        "3 members for 2 partitions: 1 own nothing (client-3); more members cannot read faster (one member per"
        " partition at most)"
    )
    assert remedy(cause) is None
    assert cause.confidence == 0.5
    assert cause.evidence == {"members": 3, "partitions": 2, "idle": ["client-3"]}
    assert "scale" not in [remedy(c) for c in causes]


def test_idle_members_does_not_fire_with_one_member_per_partition() -> None:
    caught_up = [1000, 1100, 1200]
    window = make_window(
        {0: rows(caught_up, caught_up), 1: rows(caught_up, caught_up)},
        members=[member(1, 0), member(2, 1)],
    )
    assert run(window)[1] == ()


# ---------------------------------------------------------------------------------------------------
# Ranking and the shape of every cause
# ---------------------------------------------------------------------------------------------------

REMEDIATIONS = {
    "data_loss": "reset_offsets",
    "retention_risk": "drain",
    "stuck_consumer": "restart",
    "no_active_members": "scale",
    "unassigned_partitions": "restart",
    "partition_ceiling": "drain",
    "throughput_deficit": "scale",
    "producer_burst": "scale",
    "rebalance_churn": None,
    "idle_members": None,
}


def test_causes_are_ranked_one_to_n_by_confidence() -> None:
    window = make_window(
        {
            0: rows([100, 100, 100], [5000, 5100, 5200], log_start=500),  # deleted unread, stuck
            1: rows([4000, 4000, 4000], [5000, 5100, 5200]),  # nobody owns it
            2: rows([5000, 5100, 5200], [5000, 5100, 5200]),
        },
        members=[member(1, 0), member(2, 2), member(3), member(4)],
        # members joining twice (a scale-up): churn without a member that left, so no mechanism is claimed
        group_samples=[(STABLE, ("m-1",), 1), (STABLE, ("m-1", "m-2"), 2), (STABLE, ("m-1", "m-2", "m-3", "m-4"), 3)],
    )
    _, causes = run(window)
    assert kinds(causes) == [
        "data_loss",  # 0.99
        "stuck_consumer",  # 0.9
        "unassigned_partitions",  # 0.85
        "hot_partition",  # 0.6 + 0.3 x 5,100 / 6,300 = 0.843
        "rebalance_churn",  # 0.7
        "idle_members",  # 0.5
    ]
    assert [c.rank for c in causes] == [1, 2, 3, 4, 5, 6]
    confidences = [c.confidence for c in causes]
    assert confidences == sorted(confidences, reverse=True)
    for cause in causes:
        assert cause.explanation
        if cause.kind in REMEDIATIONS:
            assert remedy(cause) == REMEDIATIONS[cause.kind]
    # Partition 0 commits nothing while the others' median is 0.83 msg/s: a slow owner.
    assert remedy(the(causes, "hot_partition")) == "restart"


def test_no_causes_for_an_errored_verdict_or_without_partitions() -> None:
    window = make_window({0: rows([4000, 4000, 4000], [5000, 5100, 5200])}, members=[member(1, 0)])
    verdict, causes = run(window)
    assert causes
    assert diagnose(replace(verdict, error="coordinator unavailable"), window, Evaluation()) == ()
    assert diagnose(replace(verdict, partitions=()), window, Evaluation()) == ()


def test_unassigned_ignores_topics_the_group_no_longer_reads() -> None:
    # The group commits on `orders` (both partitions owned) and still has an old commit on `legacy`, which
    # no member is assigned: that is a topic it stopped reading, not an unassigned partition.
    legacy = ("legacy", 0)

    def at(i: int) -> float:
        return T0 + 10.0 * i

    samples = tuple(PartitionSample(at(i), 5, 10, 0) for i in range(4))
    caught_up = tuple(PartitionSample(at(i), 10, 10, 0) for i in range(4))
    window = GroupWindow(
        cluster=CLUSTER,
        group=GROUP,
        samples=tuple(GroupSample(at(i), GroupState.STABLE, ("m1",)) for i in range(4)),
        partitions={(TOPIC, 0): caught_up, (TOPIC, 1): caught_up, legacy: samples},
        latest=GroupSnapshot(
            GROUP,
            GroupState.STABLE,
            (Member("m1", "c1", "/10.0.0.1", ((TOPIC, 0), (TOPIC, 1))),),
            {(TOPIC, 0): 10, (TOPIC, 1): 10, legacy: 5},
        ),
    )
    _, causes = run(window)
    assert "unassigned_partitions" not in kinds(causes)


# ---------------------------------------------------------------------------------------------------
# Churn with a mechanism: a crash loop, poll-interval kick-outs (issue 22, section 3)
# ---------------------------------------------------------------------------------------------------

CHURNING = [(STABLE, ("m-1",), 1), (STABLE, ("m-5",), 2), (STABLE, ("m-6",), 3), (STABLE, ("m-1",), 4)]
"""The one member's id changes at every snapshot: it leaves and a new member joins, three times."""


def test_a_crash_loop_is_churn_the_member_keeps_dying_not_restart() -> None:
    # The member reads a few messages, dies before committing, comes back: its partition's offset never moves while
    # 300 -> 600 wait, and its member id changes at every snapshot. STALL, but the cause is the churn, first, saying
    # the member keeps dying; restarting it is what already happens, so no cause offers a restart (or a scale).
    window = make_window(
        {0: rows([700, 700, 700, 700], [1000, 1100, 1200, 1300])}, members=[member(1, 0)], group_samples=CHURNING
    )
    verdict, causes = run(window)
    assert verdict.status is Status.STALL
    assert kinds(causes) == ["rebalance_churn", "stuck_consumer"]
    churn = causes[0]
    assert churn.evidence["mechanism"] == "crash_loop"
    assert churn.explanation.endswith(engine_wording.churn_crash_loop(600))
    assert churn.confidence == 0.95
    assert [remedy(c) for c in causes] == [None, None]
    assert the(causes, "stuck_consumer").explanation.endswith("a restart would not help")


def test_poll_interval_kick_outs_are_churn_with_a_configuration_fix() -> None:
    # The member commits some batches (700 -> 760 -> 820 -> 880) while the producer writes faster, and its member id
    # changes at every snapshot: it is kicked out (a batch outlasts max.poll.interval.ms) and rejoins. The churn
    # names the configuration fix, first; nothing offers a restart or a scale.
    window = make_window(
        {
            0: rows([700, 760, 820, 880], [1000, 1100, 1200, 1300]),
            1: rows([1000, 1100, 1200, 1300], [1000, 1100, 1200, 1300]),
        },
        members=[member(1, 0, 1)],
        group_samples=CHURNING,
    )
    _, causes = run(window)
    assert causes[0].kind == "rebalance_churn"
    assert causes[0].evidence["mechanism"] == "kicked_out"
    assert causes[0].explanation.endswith(engine_wording.churn_kicked_out(420))
    assert "restart" not in [remedy(c) for c in causes] and "scale" not in [remedy(c) for c in causes]


def test_churn_without_lag_names_no_mechanism() -> None:
    caught_up = [1000, 1100, 1200, 1300]
    window = make_window({0: rows(caught_up, caught_up)}, members=[member(1, 0)], group_samples=CHURNING)
    _, causes = run(window)
    assert kinds(causes) == ["rebalance_churn"]
    assert "mechanism" not in causes[0].evidence and causes[0].confidence == 0.8


def test_a_poison_message_is_a_partition_stuck_at_one_record_not_scale_or_restart() -> None:
    # One member owns partitions 0 and 1. It reads partition 1 as it comes (100 msg/s) and retries one record of
    # partition 0 forever: its offset stays at 700 while 300 -> 600 wait, over 9 s (--samples 4 --every 3). Its own
    # other partition commits at every step, so the member is alive: partition 0 is stuck at one record. No restart,
    # no scale: both would meet the same record.
    window = make_window(
        {
            0: rows([700, 700, 700, 700], [1000, 1100, 1200, 1300]),
            1: rows([1000, 1300, 1600, 1900], [1000, 1300, 1600, 1900]),
        },
        members=[member(1, 0, 1)],
        step=3.0,
    )
    verdict, causes = run(window)
    assert [p.status for p in verdict.partitions] == [Status.STALL, Status.OK]
    stuck = the(causes, "stuck_consumer")
    assert stuck.rank == 1 and remedy(stuck) is None
    assert stuck.evidence["poison"] is True and stuck.evidence["stuck_at"] == [700]
    assert stuck.explanation.endswith(engine_wording.poison_record([(0, 700)], 100.0))
    assert "restart" not in [remedy(c) for c in causes] and "scale" not in [remedy(c) for c in causes]
