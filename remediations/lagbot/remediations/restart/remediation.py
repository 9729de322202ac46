"""Restart the stuck consumer: the member(s) owning the stalled partitions, else a rolling restart.

A partition is stalled (status STALL) when its group is live but its committed offset does not move while
it lags: the consumer that owns it is stuck (a blocked poll loop, a hung downstream call). Restarting that
one member makes the group reassign its partitions to a fresh consumer. When Kafka does not say who owns
them (the group reports no members), the whole workload gets a rolling restart instead, and the plan says so.

Pre-flight, right before acting: the group is not mid-rebalance (restarting then only prolongs it), and for
a member restart, each member is still in the group (a member that left needs no restart).

The owner's pod as evidence, when the executor can read pods (Kubernetes, with the evidence Role): when the restart
is proposed, each stuck owner's pod is read. What it shows (restarts and the last termination, CrashLoopBackOff, not
Ready, a rollout, the limits) goes into that member's step of the plan, for the approver to see; a container
OOM-killed again and again is not offered a restart at all (it brings back the same limit): the proposal is refused
with the evidence, naming the limit to raise. A pod that cannot be read (no evidence Role) leaves the plan as it was.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from lagbot.core.model import GroupState, GroupVerdict, Member, PartitionVerdict, Status
from lagbot.remediations import kafka
from lagbot.remediations import wording as common
from lagbot.remediations.base import (
    EvidenceRefusal,
    ExecutionContext,
    Outcome,
    Plan,
    PlanError,
    PolicyParams,
    ProposalContext,
    Remediation,
    Risk,
)
from lagbot.remediations.executors.base import Executor, ExecutorError, NotFound, Workload
from lagbot.remediations.executors.pod_evidence import (
    RECENT,
    PodReader,
    PodReadings,
    ReadRound,
    escalation,
    findings,
)
from lagbot.remediations.restart import wording


class RestartPolicy(PolicyParams):
    """What a policy rule sets for a restart: `scope`: 'auto' restarts the owners of stalled partitions when
    known, else the workload; 'members' insists on the owners; 'workload' always does a rolling restart."""

    scope: Literal["auto", "members", "workload"] = "auto"


class RestartParams(RestartPolicy):
    """The rule's scope, the workload it names, and what the stuck owners' pods showed when it was proposed."""

    workload: Workload
    owner_pods: dict[str, list[str]] = Field(default_factory=dict)
    """Member id -> what its pod shows (lagbot.remediations.executors.pod_evidence `findings`), read at proposal."""


def member_json(member: Member) -> dict[str, object]:
    return {**member.owner_json(), "assignment": [[t, p] for t, p in member.assignment]}


def member_from_json(data: dict[str, object]) -> Member:
    assignment = data.get("assignment") or []
    assert isinstance(assignment, list)
    return Member(
        member_id=str(data["member_id"]),
        client_id=str(data["client_id"]),
        host=str(data["host"]),
        assignment=tuple((str(t), int(p)) for t, p in assignment),
    )


def stuck_owners(verdict: GroupVerdict) -> tuple[list[Member], bool]:
    """The members owning stalled partitions (by member id, in partition order), and whether every stalled
    partition's owner is known."""
    owners: dict[str, Member] = {}
    all_known = True
    for p in verdict.partitions:
        if p.status is not Status.STALL:
            continue
        if p.owner is None:
            all_known = False
        else:
            owners.setdefault(p.owner.member_id, p.owner)
    return list(owners.values()), all_known


class Restart(Remediation):
    name = "restart"
    risk = Risk.LOW
    Params = RestartParams
    Policy = RestartPolicy
    needs_workload = True
    settles = True

    def explain_policy(self, policy: PolicyParams, workload: Workload | None) -> list[str]:
        assert isinstance(policy, RestartPolicy)
        return [wording.explain_scope(policy.scope)]

    def prepare(self, raw: Mapping[str, Any], verdict: GroupVerdict, context: ProposalContext) -> BaseModel:
        """The parameters, with what each stuck owner's pod shows. Raises EvidenceRefusal when a pod says a restart
        cannot help (a container OOM-killed again and again)."""
        params = super().prepare(raw, verdict, context)
        assert isinstance(params, RestartParams)
        owners, _ = stuck_owners(verdict)
        reader = context.executor() if context.executor is not None and owners else None
        if not isinstance(reader, PodReader):
            return params
        now = context.now if context.now is not None else time.time()
        readings = context.pod_readings if isinstance(context.pod_readings, PodReadings) else None
        round = context.pod_round if isinstance(context.pod_round, ReadRound) else None
        shown = owner_pods(reader, params.workload, owners, now=now, readings=readings, round=round)
        return params.model_copy(update={"owner_pods": shown})

    def plan(self, verdict: GroupVerdict, params: BaseModel, *, now: float) -> Plan:
        """Restart the owners of the stalled partitions, or (owners unknown, or asked) the whole workload."""
        assert isinstance(params, RestartParams)
        stalled = [p for p in verdict.partitions if p.status is Status.STALL]
        owners, all_known = stuck_owners(verdict)
        rolling = params.scope == "workload" or not stalled or not all_known
        if rolling and params.scope == "members":
            raise PlanError(wording.restart_owners_unknown(verdict.group))
        before = {
            "state": verdict.state.value,
            "total_lag": verdict.total_lag,
            "stalled": [[p.topic, p.partition, p.committed, p.lag] for p in stalled],
            "members": [member_json(m) for m in owners] if not rolling else [],
        }
        workload = params.workload
        if rolling:
            why = wording.restart_why_rolling(params.scope == "workload", bool(stalled))
            summary = wording.restart_summary_rolling(workload.name)
            steps: tuple[str, ...] = (wording.restart_step_rolling(workload.label(), why),)
            after: dict[str, object] = {"restart": "workload", "workload": workload.name}
            checks: tuple[str, ...] = (wording.preflight_not_rebalancing(),)
        else:
            summary = wording.restart_summary_members(len(owners), verdict.group)
            steps = tuple(
                wording.restart_step_member(
                    m.client_id, m.host, m.member_id, _stalled_of(m, stalled), params.owner_pods.get(m.member_id, [])
                )
                for m in owners
            )
            after = {"restart": "members", "members": [m.member_id for m in owners]}
            checks = (wording.preflight_not_rebalancing(), wording.preflight_members_present())
        return Plan(
            action=self.name,
            cluster=verdict.cluster,
            group=verdict.group,
            summary=summary,
            risk=self.risk,
            params=params.model_dump(mode="json"),
            steps=steps,
            before=before,
            after=after,
            preflight=checks,
            created_at=now,
        )

    def execute(self, plan: Plan, context: ExecutionContext) -> Outcome:
        """Pre-flight (not rebalancing; members still present), then restart the members or the workload."""
        params = RestartParams.model_validate(plan.params)
        executor = context.executor
        if not isinstance(executor, Executor):
            return Outcome(False, common.no_executor(plan.action))
        members = [member_from_json(m) for m in plan.before.get("members", [])]
        failed = preflight(plan.group, members, context)
        if failed is not None:
            return Outcome(False, failed)
        try:
            if not members:
                context.progress(wording.restart_progress_rolling(params.workload.name))
                return executor.restart(params.workload)
            return restart_members(executor, params.workload, members, context)
        except ExecutorError as exc:
            return Outcome(False, str(exc))


def owner_pods(
    reader: PodReader,
    workload: Workload,
    owners: Sequence[Member],
    *,
    now: float,
    readings: PodReadings | None = None,
    round: ReadRound | None = None,
) -> dict[str, list[str]]:
    """What each owner's pod shows (member id -> lines; a healthy pod adds nothing, and the first pod that cannot be
    read ends the reading: the others would most often meet the same refusal or the same slow API server; a pod not
    found is its owner's fact, and the next owner is read). `readings`: each owner's reading kept a while (a refused
    restart is proposed again at every check); `round`: the check cycle's bound on its reads (with `readings`).

    Raises:
        EvidenceRefusal: a pod shows that a restart cannot help, with that evidence.
    """
    shown: dict[str, list[str]] = {}
    for member in owners:
        try:
            if readings is not None:
                evidence = readings.read(reader, workload, member, now=now, round=round)
            else:
                evidence = reader.owner_pod_evidence(workload, member)
        except NotFound:  # gone, or never had this address: another owner's pod may still say a restart cannot help
            continue
        except ExecutorError:  # evidence is optional: the evidence Role may not be granted, the API may be slow;
            break  # the rest would meet the same (a proposal, made on the check's thread, never waits on each)
        refused = escalation(evidence, now, RECENT)
        if refused is not None:
            raise EvidenceRefusal(refused)
        lines = findings(evidence, now, RECENT)
        if lines:
            shown[member.member_id] = lines
    return shown


def preflight(group: str, members: Sequence[Member], context: ExecutionContext) -> str | None:
    """None when restarting is safe now; else what failed (the check named). Describes the group once."""
    if context.admin is None:
        return common.preflight_failed(wording.preflight_not_rebalancing(), common.no_admin())
    try:
        state, live = kafka.describe_group(context.admin, group, context.timeout)
    except kafka.KafkaActionError as exc:
        return common.preflight_failed(wording.preflight_not_rebalancing(), str(exc))
    return preflight_problem(state, live, members)


def preflight_problem(state: GroupState, live: Sequence[Member], planned: Sequence[Member]) -> str | None:
    """Pure: the group must not be rebalancing, and each planned member must still be in it."""
    if state.is_rebalancing:
        return common.preflight_failed(wording.preflight_not_rebalancing(), common.group_is(state.value))
    live_ids = {m.member_id for m in live}
    gone = [m.member_id for m in planned if m.member_id not in live_ids]
    if gone:
        return common.preflight_failed(wording.preflight_members_present(), common.members_left(gone))
    return None


def restart_members(
    executor: Executor, workload: Workload, members: Sequence[Member], context: ExecutionContext
) -> Outcome:
    """Restart each member in turn; stop at the first failure (the rest are left as they are)."""
    done: list[str] = []
    for member in members:
        context.progress(wording.restart_progress_member(member.client_id, member.host))
        outcome = executor.restart_member(workload, member)
        if not outcome.ok:
            return Outcome(False, wording.restart_member_failed(member.member_id, outcome.detail), {"restarted": done})
        done.append(member.member_id)
    return Outcome(True, wording.restart_done(len(done)), {"restarted": done})


def _stalled_of(member: Member, stalled: Sequence[PartitionVerdict]) -> list[str]:
    return [
        f"{p.topic}-{p.partition}" for p in stalled if p.owner is not None and p.owner.member_id == member.member_id
    ]


REMEDIATION = Restart()
"""What lagbot.remediations.registry registers for this package."""
