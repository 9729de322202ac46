"""Restart and scale executed: the exact executor calls, and pre-flight checks that stop them.

The executor is a small recording one written here (the real local fleet executor is built elsewhere); the
group's state for restart's pre-flight is read from Apache Kafka, through a real AdminClient.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from lagbot.core.model import GroupState, Member, Status
from lagbot.remediations.base import CutShort, ExecutionContext, Outcome, Plan
from lagbot.remediations.executors.base import Executor, Workload
from lagbot.remediations.restart.remediation import Restart, RestartParams, preflight_problem, restart_members
from lagbot.remediations.scale.remediation import Scale
from tests.conftest import Kafka, Names
from tests.support.remediation_rig import scale_plan
from tests.support.verdicts import member, partition, verdict

pytestmark = pytest.mark.integration

NOW = 1_800_000_000.0
WORKLOAD = Workload(executor="local", name="orders-fleet")
KEDA = Workload(executor="kubernetes", name="orders-consumer", keda_scaled_object="orders-scaler")


class RecordingExecutor(Executor):
    """Keeps a replica count and records every call, in order; a member can be made to fail."""

    name = "recording"

    def __init__(self, replicas: int = 2, fail_member: str | None = None) -> None:
        self.count = replicas
        self.fail_member = fail_member
        self.calls: list[tuple[Any, ...]] = []

    def replicas(self, workload: Workload) -> int:
        self.calls.append(("replicas", workload.name))
        return self.count

    def scale(self, workload: Workload, replicas: int) -> Outcome:
        self.calls.append(("scale", workload.name, replicas))
        before, self.count = self.count, replicas
        return Outcome(True, f"scaled {workload.name} {before} -> {replicas}", {"before": before, "after": replicas})

    def restart(self, workload: Workload) -> Outcome:
        self.calls.append(("restart", workload.name))
        return Outcome(True, f"rolled {workload.name}")

    def restart_member(self, workload: Workload, member: Member) -> Outcome:
        self.calls.append(("restart_member", workload.name, member.member_id, member.host))
        if member.member_id == self.fail_member:
            return Outcome(False, "no such pod")
        return Outcome(True, f"restarted {member.host}")


class KedaExecutor(RecordingExecutor):
    """Also pauses a ScaledObject (PausableAutoscaling), starting from an annotation already set or not."""

    def __init__(self, replicas: int = 2, paused: int | None = None) -> None:
        super().__init__(replicas)
        self.paused = paused

    def set_paused_replicas(self, workload: Workload, replicas: int | None) -> Outcome:
        self.calls.append(("paused_replicas", workload.keda_scaled_object, replicas))
        before, self.paused = self.paused, replicas
        return Outcome(True, "annotated", {"before": before, "after": replicas})

    def keda_paused_replicas(self, workload: Workload) -> str | None:
        return None if self.paused is None else str(self.paused)


def context(executor: Any, admin: Any = None) -> tuple[ExecutionContext, list[str]]:
    lines: list[str] = []
    return ExecutionContext(executor=executor, admin=admin, progress=lines.append, timeout=10.0), lines


# -- restart ---------------------------------------------------------------------------------------


@pytest.fixture
def live_group(kafka: Kafka, names: Names) -> Iterator[str]:
    """A group with one real consumer, Stable: not rebalancing."""
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 2)
    consumer = kafka.consumer(group)
    consumer.subscribe([topic])
    kafka.wait_assigned(consumer)
    yield group
    consumer.close()


@pytest.mark.integration
def test_rolling_restart_runs_when_the_group_is_not_rebalancing(kafka: Kafka, live_group: str) -> None:
    v = verdict([partition(0, committed=5, log_end=500, status=Status.STALL)], group=live_group)
    plan = Restart().plan(v, RestartParams(workload=WORKLOAD), now=NOW)
    executor = RecordingExecutor()
    ctx, lines = context(executor, kafka.admin)
    outcome = Restart().execute(plan, ctx)
    assert (outcome.ok, outcome.detail) == (True, "rolled orders-fleet")
    assert executor.calls == [("restart", "orders-fleet")]
    assert lines == ["rolling restart of orders-fleet ..."]


@pytest.mark.integration
def test_member_restart_refused_when_the_member_is_not_in_the_group(kafka: Kafka, live_group: str) -> None:
    # Apache Kafka describes the live group with its one real consumer, which is not m-2: restarting a member
    # that is not there is refused, and nothing is touched.
    [described] = kafka.admin.describe_consumer_groups([live_group])[live_group].result(15).members
    assert described.member_id != "m-2"
    m2 = member(2, 0)
    v = verdict([partition(0, committed=5, log_end=500, status=Status.STALL, owner=m2)], members=[m2], group=live_group)
    plan = Restart().plan(v, RestartParams(workload=WORKLOAD), now=NOW)
    executor = RecordingExecutor()
    outcome = Restart().execute(plan, context(executor, kafka.admin)[0])
    assert not outcome.ok
    assert outcome.detail == (
        "pre-flight check failed, nothing changed: each member to restart is still in the group: "
        "member(s) m-2 left the group since the proposal"
    )
    assert executor.calls == []


def test_restart_needs_an_executor_and_an_admin() -> None:
    plan = Restart().plan(verdict([partition(0, status=Status.STALL)]), RestartParams(workload=WORKLOAD), now=NOW)
    assert Restart().execute(plan, context(None)[0]).detail == (
        "restart: no executor is configured for this group's workload"
    )
    executor = RecordingExecutor()
    assert Restart().execute(plan, context(executor)[0]).detail == (
        "pre-flight check failed, nothing changed: the group is not rebalancing: "
        "no Kafka admin client for the group's cluster"
    )
    assert executor.calls == []


@pytest.mark.parametrize(
    ("state", "live", "problem"),
    [
        (GroupState.STABLE, [member(1), member(2)], None),
        (
            GroupState.PREPARING_REBALANCE,
            [member(1), member(2)],
            "the group is not rebalancing: the group is PreparingRebalance",
        ),
        (GroupState.COMPLETING_REBALANCE, [], "the group is not rebalancing: the group is CompletingRebalance"),
        (GroupState.STABLE, [member(1)], "each member to restart is still in the group: member(s) m-2 left"),
    ],
    ids=["ok", "preparing", "completing", "member-gone"],
)
def test_restart_preflight_rules(state: GroupState, live: list[Member], problem: str | None) -> None:
    found = preflight_problem(state, live, [member(1), member(2)])
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found


def test_member_restarts_go_one_by_one_and_stop_at_the_first_failure() -> None:
    executor = RecordingExecutor(fail_member="m-2")
    ctx, lines = context(executor)
    outcome = restart_members(executor, WORKLOAD, [member(1), member(2), member(3)], ctx)
    assert (outcome.ok, outcome.detail, outcome.data) == (
        False,
        "restarting member m-2 failed: no such pod",
        {"restarted": ["m-1"]},
    )
    assert executor.calls == [
        ("restart_member", "orders-fleet", "m-1", "10.0.0.1"),
        ("restart_member", "orders-fleet", "m-2", "10.0.0.2"),
    ]
    assert lines == ["restarting client-1@10.0.0.1 ...", "restarting client-2@10.0.0.2 ..."]
    ok = restart_members(RecordingExecutor(), WORKLOAD, [member(1), member(3)], ctx)
    assert (ok.ok, ok.detail, ok.data) == (
        True,
        "restarted 2 member(s); their partitions are being reassigned",
        {"restarted": ["m-1", "m-3"]},
    )


# -- scale -----------------------------------------------------------------------------------------


def test_scale_sets_the_target() -> None:
    plan = Plan.from_json(scale_plan(WORKLOAD).to_json())  # as stored in Redis until approved
    executor = RecordingExecutor(replicas=2)
    ctx, lines = context(executor)
    outcome = Scale().execute(plan, ctx)
    assert (outcome.ok, outcome.detail, outcome.data) == (True, "scaled orders-fleet 2 -> 4", {"before": 2, "after": 4})
    assert executor.calls == [("replicas", "orders-fleet"), ("scale", "orders-fleet", 4)]
    assert lines == ["scaling orders-fleet to 4 replicas ..."]


def test_scale_preflight_stops_when_the_target_was_reached_meanwhile() -> None:
    executor = RecordingExecutor(replicas=5)  # someone scaled to 5 since the proposal (2 -> 4)
    outcome = Scale().execute(scale_plan(WORKLOAD), context(executor)[0])
    assert outcome.detail == (
        "pre-flight check failed, nothing changed: the workload has not reached 4 replicas meanwhile: "
        "orders-fleet runs 5 replicas now"
    )
    assert executor.calls == [("replicas", "orders-fleet")]


def test_scale_on_keda_pauses_first_and_restore_puts_the_annotation_back() -> None:
    plan = scale_plan(KEDA)
    executor = KedaExecutor(replicas=2, paused=None)
    ctx, lines = context(executor)
    outcome = Scale().execute(plan, ctx)
    assert outcome.ok and outcome.data == {"before": 2, "after": 4, "keda_previous": None}
    assert executor.calls == [
        ("replicas", "orders-consumer"),
        ("paused_replicas", "orders-scaler", 4),
        ("scale", "orders-consumer", 4),
    ]
    assert lines == [
        "pausing KEDA ScaledObject orders-scaler at 4 replicas ...",
        "scaling orders-consumer to 4 replicas ...",
    ]
    restored = Scale().restore(plan, ctx, previous=outcome.data["keda_previous"])
    assert (
        restored.ok and restored.cut_short is None and executor.calls[-1] == ("paused_replicas", "orders-scaler", None)
    )
    assert executor.paused is None  # KEDA scales again


def test_scale_on_keda_holds_the_pause_it_found_before_pausing_and_restores_it_when_interrupted() -> None:
    plan = scale_plan(KEDA)
    executor = KedaExecutor(replicas=2, paused=7)
    ctx, _ = context(executor)
    ctx.hold_restore = lambda previous: executor.calls.append(("held", previous))
    assert Scale().execute(plan, ctx).ok
    held = {"v": 1, "interrupted": True, "keda_previous": "7"}  # a KedaHandBack, versioned through its codec
    pause = ("paused_replicas", "orders-scaler", 4)
    assert executor.calls[:3] == [("replicas", "orders-consumer"), ("held", held), pause]  # held, then paused
    restored = Scale().restore(plan, ctx, previous=held)  # what the reaper runs when the run died after the pause
    assert restored.ok and restored.cut_short is CutShort.INTERRUPTED and executor.paused == "7"
    assert Scale().restored(restored) == "The interrupted scale is handed back to the autoscaler: annotated"


def test_scale_on_keda_refused_when_the_executor_cannot_pause_it() -> None:
    executor = RecordingExecutor(replicas=2)
    outcome = Scale().execute(scale_plan(KEDA), context(executor)[0])
    assert outcome.detail == (
        "pre-flight check failed, nothing changed: the executor can pause the KEDA ScaledObject: the "
        "RecordingExecutor executor cannot pause a KEDA ScaledObject; a plain scale would be undone by KEDA"
    )
    assert executor.calls == []
