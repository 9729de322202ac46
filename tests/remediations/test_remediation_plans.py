"""Plans are pure: a verdict and parameters in, exactly what will change out. Hand-made verdicts."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import BaseModel

from lagbot.core.model import GroupState, Status
from lagbot.engine.capacity import replicas_needed
from lagbot.remediations import packages, registry
from lagbot.remediations.base import Plan, PlanError, Risk
from lagbot.remediations.executors.base import Workload
from lagbot.remediations.reset_offsets.remediation import ResetOffsets, ResetParams
from lagbot.remediations.restart.remediation import Restart, RestartParams
from lagbot.remediations.scale.remediation import Scale, ScaleParams
from tests.support.verdicts import member, partition, verdict

NOW = 1_800_000_000.0
WORKLOAD = Workload(executor="kubernetes", name="orders-consumer", namespace="shop")
KEDA = WORKLOAD.model_copy(update={"keda_scaled_object": "orders-scaler"})


def restart_plan(v: Any, **params: Any) -> Plan:
    return Restart().plan(v, RestartParams(workload=WORKLOAD, **params), now=NOW)


# -- restart ---------------------------------------------------------------------------------------


def test_restart_names_the_members_owning_stalled_partitions() -> None:
    m1, m2, m3 = member(1, 0), member(2, 1, 3), member(3, 2)
    v = verdict(
        [
            partition(0, committed=100, log_end=100, owner=m1),
            partition(1, committed=50, log_end=900, status=Status.STALL, owner=m2),
            partition(2, committed=80, log_end=90, owner=m3),
            partition(3, committed=10, log_end=510, status=Status.STALL, owner=m2),
        ],
        members=[m1, m2, m3],
    )
    plan = restart_plan(v)
    assert plan.summary == "Restart 1 stuck consumer of orders-consumer"
    assert plan.steps == ("restart client-2@10.0.0.2 (member m-2), owner of stalled orders-1, orders-3",)
    assert plan.before["stalled"] == [["orders", 1, 50, 850], ["orders", 3, 10, 500]]
    assert plan.before["members"] == [
        {"member_id": "m-2", "client_id": "client-2", "host": "10.0.0.2", "assignment": [["orders", 1], ["orders", 3]]}
    ]
    assert plan.after == {"restart": "members", "members": ["m-2"]}
    assert plan.preflight == ("the group is not rebalancing", "each member to restart is still in the group")
    assert (plan.risk, plan.created_at, plan.params["scope"]) == (Risk.LOW, NOW, "auto")
    assert Plan.from_json(plan.to_json()) == plan


def test_restart_falls_back_to_a_rolling_restart_when_owners_are_unknown() -> None:
    # A group described without members (Empty: its consumers are gone) gives stalled partitions no owner.
    v = verdict([partition(0, committed=5, log_end=500, status=Status.STALL)])
    plan = restart_plan(v)
    assert plan.summary == "Rolling restart of orders-consumer"
    assert plan.steps == (
        "rolling restart of deployment shop/orders-consumer: the owners of the stalled partitions are not known "
        "(the group reports no members)",
    )
    assert plan.before["members"] == []
    assert plan.after == {"restart": "workload", "workload": "orders-consumer"}
    assert plan.preflight == ("the group is not rebalancing",)


def test_restart_scope_members_refuses_when_owners_are_unknown() -> None:
    v = verdict([partition(0, committed=5, log_end=500, status=Status.STALL)])
    with pytest.raises(PlanError, match="restart the whole workload instead"):
        restart_plan(v, scope="members")


def test_restart_scope_workload_is_rolling_even_with_known_owners() -> None:
    m = member(1, 0)
    v = verdict([partition(0, committed=5, log_end=500, status=Status.STALL, owner=m)], members=[m])
    assert restart_plan(v, scope="workload").steps == ("rolling restart of deployment shop/orders-consumer: as asked",)


# -- scale -----------------------------------------------------------------------------------------


def scale_plan(v: Any, **params: Any) -> Plan:
    values = {"workload": WORKLOAD, "current_replicas": 2, "min_replicas": 1, "max_replicas": 10, **params}
    return Scale().plan(v, ScaleParams(**values), now=NOW)


def six_partitions(**kw: Any) -> Any:
    return verdict([partition(p, committed=0, log_end=1000) for p in range(6)], **kw)


def test_scale_target_is_replicas_needed_from_the_rates() -> None:
    # 2 members commit 1,000 msg/s (500 each); producers write 1,600: 1,600 x 1.2 / 500 = 3.84 -> 4.
    v = six_partitions(members=[member(1, 0, 1, 2), member(2, 3, 4, 5)], produce=1_600.0, consume=1_000.0)
    assert replicas_needed(1_600.0, 1_000.0, 2, 6) == 4
    plan = scale_plan(v)
    assert plan.summary == "Scale orders-consumer 2 -> 4"
    assert plan.steps == ("scale deployment shop/orders-consumer from 2 to 4 replicas",)
    assert plan.before == {
        "replicas": 2,
        "members": 2,
        "partitions": 6,
        "produce_rate": 1_600.0,
        "consume_rate": 1_000.0,
        "total_lag": 6_000,
    }
    assert plan.after == {"replicas": 4}
    assert plan.preflight == ("the workload has not reached 4 replicas meanwhile",)
    assert plan.risk is Risk.MEDIUM


@pytest.mark.parametrize(
    ("produce", "max_replicas", "min_replicas", "target", "why"),
    [
        (10_000.0, 10, 1, 6, "capped at the partition count (replicas_needed caps at 6)"),
        (10_000.0, 3, 1, 3, "capped at the policy maximum"),
        (600.0, 10, 5, 5, "at least the policy minimum (2 would do)"),
    ],
)
def test_scale_target_limits(produce: float, max_replicas: int, min_replicas: int, target: int, why: str) -> None:
    v = six_partitions(members=[member(1, 0, 1, 2), member(2, 3, 4, 5)], produce=produce, consume=1_000.0)
    plan = scale_plan(v, max_replicas=max_replicas, min_replicas=min_replicas)
    assert plan.after["replicas"] == target, why


def test_scale_counts_the_workload_replicas_when_the_group_reports_no_members() -> None:
    # No members described (the group is Empty, or a broker that does not report members): the workload's
    # 3 replicas are the consumers, 300 msg/s each.
    v = six_partitions(produce=1_000.0, consume=900.0)
    assert scale_plan(v, current_replicas=3).after["replicas"] == 4  # 1,000 x 1.2 / 300 = 4


def test_scale_never_offers_a_scale_down_for_a_group_with_no_members() -> None:
    """A fake group (one offset commit, no members) matched by a rule naming the fleet was offered 4 -> 3."""
    v = six_partitions(produce=100.0, consume=900.0)
    with pytest.raises(PlanError) as refused:
        scale_plan(v, current_replicas=4)
    assert str(refused.value) == (
        "not scaling down from 4 to 1: orders-consumer has no members, so its rates say nothing about the workload's "
        "consumers (anyone can make such a group by committing an offset); give an explicit replica count"
    )
    assert scale_plan(v, current_replicas=4, replicas=3).after["replicas"] == 3  # a person may still say so
    members = six_partitions(members=[member(1, 0, 1, 2), member(2, 3, 4, 5)], produce=100.0, consume=900.0)
    assert scale_plan(members, current_replicas=4).after["replicas"] == 1


def test_scale_on_keda_pauses_then_restores() -> None:
    v = six_partitions(members=[member(1, 0, 1, 2), member(2, 3, 4, 5)], produce=1_600.0, consume=1_000.0)
    plan = scale_plan(v, workload=KEDA, hold_for="30m")
    assert plan.steps == (
        "pause KEDA ScaledObject orders-scaler at 4 replicas (autoscaling.keda.sh/paused-replicas=4) so it keeps them",
        "scale deployment shop/orders-consumer from 2 to 4 replicas",
        "after 30 min: restore orders-scaler's annotation as it was, so KEDA scales again",
    )
    assert plan.after == {"replicas": 4, "keda_paused_replicas": 4, "restore_at": NOW + 1800}
    assert plan.preflight[-1] == "the executor can pause the KEDA ScaledObject"


def test_scale_explicit_replicas_must_be_within_the_limits() -> None:
    v = six_partitions()
    assert scale_plan(v, replicas=7).after["replicas"] == 7
    with pytest.raises(PlanError, match="11 replicas is outside the policy's limits \\(1 to 10\\)"):
        scale_plan(v, replicas=11)


@pytest.mark.parametrize(
    ("v", "params", "problem"),
    [
        (six_partitions(), {}, "rates are not known yet"),
        (verdict([], produce=1.0, consume=1.0), {}, "rates are not known yet"),
        (
            six_partitions(members=[member(1, 0, 1, 2, 3, 4, 5)], produce=100.0, consume=100.0),
            {"current_replicas": 2},
            "already runs 2 replicas",
        ),
    ],
    ids=["no-rates", "no-partitions", "already-there"],
)
def test_scale_refuses_to_plan(v: Any, params: dict[str, Any], problem: str) -> None:
    with pytest.raises(PlanError, match=problem):
        scale_plan(v, **params)


# -- reset offsets ---------------------------------------------------------------------------------


def three_partitions(**kw: Any) -> Any:
    return verdict(
        [
            partition(0, committed=100, log_end=1_000, log_start=0),
            partition(1, committed=None, log_end=500, log_start=0),
            partition(2, committed=20, log_end=300, log_start=50),  # 30 messages already deleted unread
        ],
        state=GroupState.EMPTY,
        **kw,
    )


def table(plan: Plan) -> list[tuple[Any, ...]]:
    return [
        (r["topic"], r["partition"], r["before"], r["after"], r["skipped"], r["reread"]) for r in plan.after["table"]
    ]


def test_reset_to_latest_dry_run_table() -> None:
    plan = ResetOffsets().plan(three_partitions(), ResetParams(mode="latest"), now=NOW)
    assert table(plan) == [
        ("orders", 0, 100, 1_000, 900, 0),
        ("orders", 1, None, 500, None, 0),  # nothing committed: how much is skipped is not known
        ("orders", 2, 20, 300, 250, 0),  # 50..300: the 30 below the log start were already gone
    ]
    assert (plan.after["skipped"], plan.after["reread"], plan.after["skipped_unknown"]) == (1_150, 0, 1)
    assert plan.confirm == (
        "Data loss: resetting orders-consumer to latest skips 1,150 messages; this group will never process them. "
        "1 partition(s) had no committed offset: more may be skipped. This cannot be undone."
    )
    assert plan.summary == "Reset offsets of orders-consumer to latest"
    assert plan.preflight == ("the group is Empty (no live consumers)",)
    assert plan.risk is Risk.HIGH
    assert len(plan.confirm) <= 300  # Slack's confirm dialog text limit
    assert Plan.from_json(plan.to_json()) == plan


def test_reset_shift_clamps_to_the_log_like_the_kafka_tool() -> None:
    v = verdict(
        [
            partition(0, committed=100, log_end=1_000),
            partition(1, committed=450, log_end=500),  # +200 would pass the log end: clamped to 500
            partition(2, committed=60, log_end=300, log_start=50),
        ],
        state=GroupState.EMPTY,
    )
    plan = ResetOffsets().plan(v, ResetParams(mode="shift", shift=200), now=NOW)
    assert table(plan) == [
        ("orders", 0, 100, 300, 200, 0),
        ("orders", 1, 450, 500, 50, 0),
        ("orders", 2, 60, 260, 200, 0),
    ]
    back = ResetOffsets().plan(v, ResetParams(mode="shift", shift=-100), now=NOW)
    # 60 - 100 is below the log start (50): clamped there; 10 messages are read again.
    assert table(back) == [("orders", 0, 100, 0, 0, 100), ("orders", 1, 450, 350, 0, 100), ("orders", 2, 60, 50, 0, 10)]
    assert back.confirm == (
        "Re-processing: resetting orders-consumer by -100 makes this group process 210 messages again; "
        "downstream may see duplicates. This cannot be undone."
    )
    assert back.summary == "Reset offsets of orders-consumer by -100"


def test_reset_shift_needs_a_committed_offset() -> None:
    with pytest.raises(PlanError, match="cannot shift orders-1: the group has no committed offset there"):
        ResetOffsets().plan(three_partitions(), ResetParams(mode="shift", shift=5), now=NOW)


def test_reset_to_datetime_uses_the_offsets_looked_up_at_proposal() -> None:
    when = datetime(2027, 1, 1, 12, 0, tzinfo=UTC)
    at_time = (("orders", 0, 400), ("orders", 1, -1), ("orders", 2, 10))
    plan = ResetOffsets().plan(
        three_partitions(), ResetParams(mode="datetime", to_datetime=when, at_time=at_time), now=NOW
    )
    # -1: no message that recent -> the log end, as the Kafka tool does; 10 is below the log start -> 50.
    assert table(plan) == [
        ("orders", 0, 100, 400, 300, 0),
        ("orders", 1, None, 500, None, 0),
        ("orders", 2, 20, 50, 0, 0),
    ]
    assert plan.summary == "Reset offsets of orders-consumer to 2027-01-01 12:00:00+00:00"
    with pytest.raises(PlanError, match="resolve_times"):
        ResetOffsets().plan(three_partitions(), ResetParams(mode="datetime", to_datetime=when), now=NOW)


def test_reset_only_chosen_topics_and_refuses_a_no_op() -> None:
    v = verdict([partition(0, committed=100, log_end=100), partition(0, committed=0, log_end=9, topic="other")])
    plan = ResetOffsets().plan(v, ResetParams(mode="latest", topics=("other",)), now=NOW)
    assert table(plan) == [("other", 0, 0, 9, 9, 0)]
    with pytest.raises(PlanError, match="already where the reset would put it"):
        ResetOffsets().plan(v, ResetParams(mode="latest", topics=("orders",)), now=NOW)
    with pytest.raises(PlanError, match="has no partitions of topics nope"):
        ResetOffsets().plan(v, ResetParams(mode="latest", topics=("nope",)), now=NOW)


# -- registry --------------------------------------------------------------------------------------


def test_every_remediation_that_answers_a_cause_is_registered() -> None:
    assert {a.name for a in packages.declared() if a.addresses} <= set(registry.names())
    assert registry.names_in_order() == packages.PACKAGES  # the registry's one list, in its order
    assert packages.PACKAGES[:4] == ("restart", "scale", "drain", "reset_offsets")


def test_registry_maps_names_to_instances_and_validates_params() -> None:
    assert registry.names() == tuple(sorted(packages.PACKAGES))
    assert isinstance(registry.get("scale"), Scale)
    assert registry.risk_of("reset_offsets") is Risk.HIGH and registry.risk_of("drain") is Risk.MEDIUM
    good = registry.params("reset_offsets", {"mode": "shift", "shift": -10})
    assert isinstance(good, ResetParams) and good.shift == -10
    with pytest.raises(registry.ParamsError) as bad:
        registry.params("reset_offsets", {"mode": "sideways", "shift": 1, "color": "red"})
    assert str(bad.value).splitlines() == [
        "reset_offsets: mode: Input should be 'latest', 'earliest', 'shift' or 'datetime'",
        "reset_offsets: color: Extra inputs are not permitted",
    ]
    with pytest.raises(registry.ParamsError, match="'shift' is required with mode 'shift'"):
        registry.params("reset_offsets", {"mode": "shift"})
    with pytest.raises(registry.ParamsError, match="min_replicas \\(5\\) is above max_replicas \\(2\\)"):
        registry.params(
            "scale", {"workload": WORKLOAD.model_dump(), "current_replicas": 1, "min_replicas": 5, "max_replicas": 2}
        )
    with pytest.raises(registry.RegistryError) as unknown:
        registry.get("reboot")
    assert str(unknown.value) == f"no remediation named 'reboot'; registered: {', '.join(registry.names())}"


def test_registry_refuses_malformed_or_repeated_remediations() -> None:
    with pytest.raises(registry.RegistryError, match="'scale' is already registered"):
        registry.register(Scale())

    class Misnamed(Restart):
        name = "Re boot"

    with pytest.raises(
        registry.RegistryError,
        match="its name 'Re boot' is not a lowercase word of letters, digits and underscores \\(at most 32\\)",
    ):
        registry.register(Misnamed())

    class Untyped(Restart):
        name = "drain"
        Params = dict  # type: ignore[assignment]

    with pytest.raises(registry.RegistryError, match="its Params is not a pydantic model"):
        registry.register(Untyped())

    class LooseParams(BaseModel):
        replicas: int = 1

    class Loose(Restart):
        name = "drain"
        Params = LooseParams

    with pytest.raises(registry.RegistryError, match="must forbid unknown fields"):
        registry.register(Loose())
    assert registry.names() == tuple(sorted(packages.PACKAGES))  # nothing was added
