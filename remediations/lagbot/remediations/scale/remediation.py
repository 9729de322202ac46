"""Scale the consumers' workload to the replicas that would keep up with the producers.

The target is lagbot.engine.capacity.replicas_needed: the produce rate (with headroom) over the per-consumer consume
rate, at most one consumer per partition (more would sit idle), then held inside the policy's
[min_replicas, max_replicas]. An explicit `replicas` must already lie inside those limits.

On a KEDA-managed workload (the policy's workload names a ScaledObject) the autoscaler would undo a plain
scale at its next poll, so the ScaledObject is paused at the target first by setting the annotation
`autoscaling.keda.sh/paused-replicas`; after `hold_for` the lead calls `restore`, which puts the annotation
back as it was (usually: absent, so KEDA resumes). Executors that can do this implement `PausableAutoscaling`.
What it leaves to undo is a `KedaHandBack` (lagbot.remediations.scale.hand_back), kept versioned.

Pre-flight, right before acting: the workload has not reached the target meanwhile, and on KEDA, the executor
can pause the ScaledObject.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field, ValidationInfo, field_validator

from lagbot.core import messages
from lagbot.core.config import Duration
from lagbot.core.model import GroupVerdict
from lagbot.core.stored import StoredFormatError
from lagbot.engine.capacity import replicas_needed
from lagbot.remediations import wording as common
from lagbot.remediations.base import (
    ArgsError,
    CutShort,
    ExecutionContext,
    Outcome,
    Plan,
    PlanError,
    PolicyParams,
    ProposalContext,
    Remediation,
    Risk,
    validate_params,
)
from lagbot.remediations.executors import wording as executor_wording
from lagbot.remediations.executors.base import Executor, ExecutorError, Workload
from lagbot.remediations.scale import wording
from lagbot.remediations.scale.hand_back import KedaHandBack

PAUSED_REPLICAS = "autoscaling.keda.sh/paused-replicas"


@runtime_checkable
class PausableAutoscaling(Protocol):
    """An executor that can pause a workload's KEDA ScaledObject at a replica count and restore it."""

    def set_paused_replicas(self, workload: Workload, replicas: int | None) -> Outcome:
        """Set the ScaledObject's paused-replicas annotation (None removes it); data = {"before": int | None}."""
        ...

    def keda_paused_replicas(self, workload: Workload) -> str | None:
        """The ScaledObject's paused-replicas annotation now (None: not paused)."""
        ...


class ScalePolicy(PolicyParams):
    """The limits a policy rule sets for scaling: the replica range, and on KEDA how long the pause holds."""

    min_replicas: int = Field(default=1, ge=0)
    max_replicas: int = Field(ge=1)
    hold_for: Duration = Field(default=3600.0, gt=0)
    """On KEDA: how long the pause holds before `restore` hands control back to the autoscaler."""

    @field_validator("max_replicas")
    @classmethod
    def _not_below_min(cls, high: int, info: ValidationInfo) -> int:
        low = info.data.get("min_replicas")
        if low is not None and high < low:
            raise ValueError(messages.min_over_max(low, high))
        return high


class ScaleParams(ScalePolicy):
    """The rule's limits, its workload, and `current_replicas`, read from the executor when the plan is
    proposed (plan stays pure)."""

    workload: Workload
    current_replicas: int = Field(ge=0)
    replicas: int | None = Field(default=None, ge=0)
    """An explicit target; when None it is sized from the rates."""


def target_replicas(verdict: GroupVerdict, params: ScaleParams) -> int:
    """The replica count to scale to (see the module doc). Raises PlanError when it cannot be sized."""
    if params.replicas is not None:
        if not params.min_replicas <= params.replicas <= params.max_replicas:
            raise PlanError(wording.scale_outside_limits(params.replicas, params.min_replicas, params.max_replicas))
        return params.replicas
    partitions = len(verdict.partitions)
    produce, consume = verdict.produce_rate, verdict.consume_rate
    if partitions == 0 or produce is None or consume is None:
        raise PlanError(wording.scale_cannot_size(verdict.group))
    # The members Kafka reports are the consumers; when it reports none, the workload's replicas are.
    consumers = len(verdict.members) or params.current_replicas
    wanted = replicas_needed(produce, consume, consumers, partitions)
    target = max(params.min_replicas, min(wanted, params.max_replicas))
    if not verdict.members and target < params.current_replicas:
        # A group with no members (possibly one made by a single offset commit) is no evidence against the fleet.
        raise PlanError(wording.scale_down_without_members(verdict.group, params.current_replicas, target))
    return target


class Scale(Remediation):
    name = "scale"
    risk = Risk.MEDIUM
    Params = ScaleParams
    Policy = ScalePolicy
    args_usage = "[replicas]"
    needs_workload = True
    settles = True
    Held = KedaHandBack

    def explain_policy(self, policy: PolicyParams, workload: Workload | None) -> list[str]:
        assert isinstance(policy, ScalePolicy)
        keda = workload is not None and workload.keda_scaled_object is not None
        return [wording.explain_replicas(policy.min_replicas, policy.max_replicas, policy.hold_for if keda else None)]

    def parse_args(self, args: Sequence[str]) -> dict[str, Any]:
        if not args:
            return {}
        if len(args) != 1 or not args[0].isdigit():
            raise ArgsError(self.name)
        return {"replicas": int(args[0])}

    def prepare(self, raw: Mapping[str, Any], verdict: GroupVerdict, context: ProposalContext) -> BaseModel:
        """The workload's current replicas are read from the executor now, so that `plan` stays pure."""
        if context.workload is not None and context.executor is not None and "current_replicas" not in raw:
            raw = {**raw, "current_replicas": context.executor().replicas(context.workload)}
        return validate_params(self.name, self.Params, raw)

    def hand_back(self, plan: Plan, outcome: Outcome, *, finished: float) -> tuple[float, KedaHandBack] | None:
        """KEDA was paused: hand it back after the hold (at once when the scale failed)."""
        if "keda_previous" not in outcome.data:
            return None
        hold = float(plan.params.get("hold_for", 0)) if outcome.ok else 0.0
        return finished + hold, KedaHandBack(outcome.data.get("keda_previous"))

    def plan(self, verdict: GroupVerdict, params: BaseModel, *, now: float) -> Plan:
        """Scale from `current_replicas` to the target; on KEDA, pause then restore after `hold_for`."""
        assert isinstance(params, ScaleParams)
        target = target_replicas(verdict, params)
        current, workload = params.current_replicas, params.workload
        if target == current:
            raise PlanError(wording.scale_nothing_to_do(workload.name, current))
        steps = [wording.scale_step(workload.label(), current, target)]
        after: dict[str, object] = {"replicas": target}
        checks = [wording.preflight_not_at_target(target)]
        if workload.keda_scaled_object:
            steps.insert(0, wording.scale_step_keda_pause(workload.keda_scaled_object, PAUSED_REPLICAS, target))
            steps.append(wording.scale_step_keda_restore(workload.keda_scaled_object, params.hold_for))
            after.update({"keda_paused_replicas": target, "restore_at": now + params.hold_for})
            checks.append(wording.preflight_can_pause_keda())
        return Plan(
            action=self.name,
            cluster=verdict.cluster,
            group=verdict.group,
            summary=wording.scale_summary(workload.name, current, target),
            risk=self.risk,
            params=params.model_dump(mode="json"),
            steps=tuple(steps),
            before={
                "replicas": current,
                "members": len(verdict.members),
                "partitions": len(verdict.partitions),
                "produce_rate": verdict.produce_rate,
                "consume_rate": verdict.consume_rate,
                "total_lag": verdict.total_lag,
            },
            after=after,
            preflight=tuple(checks),
            created_at=now,
        )

    def execute(self, plan: Plan, context: ExecutionContext) -> Outcome:
        """Pre-flight, then (KEDA: pause at the target, remembering the old annotation) scale to the target.

        Outcome.data: {"before": n, "after": target} and, on KEDA, {"keda_previous": the annotation before}.
        """
        params = ScaleParams.model_validate(plan.params)
        target = int(plan.after["replicas"])
        executor, workload = context.executor, params.workload
        if not isinstance(executor, Executor):
            return Outcome(False, common.no_executor(plan.action))
        try:
            failed = self._preflight(executor, workload, params.current_replicas, target)
            if failed is not None:
                return Outcome(False, failed)
            data: dict[str, object] = {}
            if workload.keda_scaled_object:
                assert isinstance(executor, PausableAutoscaling)
                context.progress(wording.scale_progress_keda(workload.keda_scaled_object, target))
                # Held before the pause: a run that dies from here on hands the autoscaler back (`restore`).
                context.hold(KedaHandBack(executor.keda_paused_replicas(workload), interrupted=True))
                paused = executor.set_paused_replicas(workload, target)
                if not paused.ok:
                    return Outcome(False, paused.detail)
                data["keda_previous"] = paused.data.get("before")
            context.progress(wording.scale_progress(workload.name, target))
            scaled = executor.scale(workload, target)
            if not scaled.ok and workload.keda_scaled_object:
                assert isinstance(executor, PausableAutoscaling)  # the pause above is not left behind
                handed_back = executor.set_paused_replicas(workload, paused.data.get("before"))
                return Outcome(False, executor_wording.then(scaled.detail, handed_back.detail))
        except ExecutorError as exc:
            return Outcome(False, str(exc))
        return Outcome(scaled.ok, scaled.detail, {**scaled.data, **data})

    def restored(self, outcome: Outcome) -> str:
        if outcome.cut_short is CutShort.INTERRUPTED:
            return wording.restored_after_interruption(outcome.ok, outcome.detail)
        return wording.restored(outcome.ok, outcome.detail)

    def restore(self, plan: Plan, context: ExecutionContext, *, previous: Any) -> Outcome:
        """Hand a KEDA workload back to its autoscaler: the paused-replicas annotation as it was before (`previous`:
        the `KedaHandBack` that `hand_back` left or, for an interrupted run, that `execute` held, as kept).
        The replicas stay as the interrupted run left them: a failed scale does not undo them either. A hand-back
        this lagbot cannot read changes nothing: the detail says so, and what to hand back by hand."""
        params = ScaleParams.model_validate(plan.params)
        try:
            held = self.held(previous)
        except StoredFormatError as exc:
            return Outcome(False, wording.keda_hand_back_unreadable(params.workload.keda_scaled_object, str(exc)))
        assert isinstance(held, KedaHandBack)
        outcome = self._hand_back(params.workload, context.executor, held.keda_previous)
        return Outcome(outcome.ok, outcome.detail, outcome.data, CutShort.INTERRUPTED if held.interrupted else None)

    @staticmethod
    def _hand_back(workload: Workload, executor: Executor | None, before: int | str | None) -> Outcome:
        if not workload.keda_scaled_object:
            return Outcome(True, wording.scale_nothing_to_restore(workload.name))
        if not isinstance(executor, PausableAutoscaling):
            problem = wording.executor_cannot_pause_keda(type(executor).__name__)
            return Outcome(False, wording.keda_restore_by_hand(workload.keda_scaled_object, before, problem))
        try:
            return executor.set_paused_replicas(workload, before)
        except ExecutorError as exc:
            return Outcome(False, wording.keda_restore_by_hand(workload.keda_scaled_object, before, str(exc)))

    @staticmethod
    def _preflight(executor: Executor, workload: Workload, planned_from: int, target: int) -> str | None:
        if workload.keda_scaled_object and not isinstance(executor, PausableAutoscaling):
            problem = wording.executor_cannot_pause_keda(type(executor).__name__)
            return common.preflight_failed(wording.preflight_can_pause_keda(), problem)
        now = executor.replicas(workload)
        up = target > planned_from
        if (up and now >= target) or (not up and now <= target):
            problem = wording.scale_already(workload.name, now)
            return common.preflight_failed(wording.preflight_not_at_target(target), problem)
        return None


REMEDIATION = Scale()
"""What lagbot.remediations.registry registers for this package."""
