"""Reset a group's committed offsets, as `kafka-consumer-groups.sh --reset-offsets` does. Loses data.

Modes: `latest` (skip the whole backlog), `earliest`, `shift` by N (negative: back), `datetime` (the first
message at or after a moment). Every target is clamped to [log start, log end] as the Kafka tool does; a
shift needs a committed offset (the tool refuses otherwise); a moment after every message of a partition
resets it to its log end (as the tool does).

The plan is the tool's dry run: per partition the committed offset before, the offset after, and the messages
skipped (those between the old position, or the log start if that is later, and the new one: never read by
this group) or re-read. Apache Kafka only lets an inactive group's offsets be altered, but not every
Kafka-compatible broker enforces it, so `execute` checks the group is Empty (or Dead: it does not exist)
itself, right before altering, recomputes the targets from fresh offsets, and reads the result back. When a
consumer joins between that check and the call, Apache Kafka refuses the change (UNKNOWN_MEMBER_ID): the
outcome says so, and whether anything changed, read back.
HIGH risk: two approvals and a confirm dialog whose wording states the data loss (`Plan.confirm`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal, Self

from pydantic import AwareDatetime, BaseModel, ConfigDict, field_validator, model_validator

from lagbot.core.model import GroupState, GroupVerdict, TopicPartition
from lagbot.remediations import kafka
from lagbot.remediations import wording as common
from lagbot.remediations.base import (
    ArgsError,
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
from lagbot.remediations.executors.base import Workload
from lagbot.remediations.reset_offsets import wording

Mode = Literal["latest", "earliest", "shift", "datetime"]
INACTIVE = (GroupState.EMPTY, GroupState.DEAD)


class ResetPolicy(PolicyParams):
    """What a policy rule sets for resetting offsets: the modes it allows. It loses data, so it always needs
    two approvals (the default here, and nothing else is accepted)."""

    approvals_required: Literal[1, 2] = 2
    modes: tuple[Mode, ...] = ("latest", "shift", "datetime")

    @field_validator("approvals_required")
    @classmethod
    def _two_people(cls, approvals: int) -> int:
        if approvals != 2:
            raise ValueError(wording.policy_reset_needs_two())
        return approvals

    @field_validator("modes")
    @classmethod
    def _some_mode(cls, modes: tuple[str, ...]) -> tuple[str, ...]:
        if not modes:
            raise ValueError(wording.policy_no_modes())
        return modes


class ResetParams(BaseModel):
    """`topics`: only these of the group's topics (all when empty). `at_time`: for mode datetime, the offset
    of each partition for `to_datetime` as (topic, partition, offset), looked up at proposal time
    (`resolve_times`) so that `plan` stays pure; -1 where no message is that recent."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Mode
    shift: int | None = None
    to_datetime: AwareDatetime | None = None
    topics: tuple[str, ...] = ()
    at_time: tuple[tuple[str, int, int], ...] = ()

    @model_validator(mode="after")
    def _mode_has_its_argument(self) -> Self:
        if (self.mode == "shift") != (self.shift is not None):
            raise ValueError(wording.reset_needs("shift", self.mode))
        if self.shift == 0:
            raise ValueError(wording.reset_zero_shift())
        if (self.mode == "datetime") != (self.to_datetime is not None):
            raise ValueError(wording.reset_needs("to_datetime", self.mode))
        return self

    @property
    def at_time_ms(self) -> int | None:
        return None if self.to_datetime is None else int(self.to_datetime.timestamp() * 1000)


@dataclass(frozen=True, slots=True)
class Offsets:
    """What is known of one partition when the targets are computed."""

    topic: str
    partition: int
    committed: int | None
    log_start: int
    log_end: int
    at_time: int | None = None


@dataclass(frozen=True, slots=True)
class ResetRow:
    """One line of the dry-run table. `skipped` is None when nothing was committed (the start is unknown)."""

    topic: str
    partition: int
    before: int | None
    after: int
    skipped: int | None
    reread: int


def target_offset(row: Offsets, params: ResetParams) -> int:
    """Where `params` moves this partition, clamped to [log start, log end]. PlanError when it cannot."""
    if params.mode == "latest":
        wanted = row.log_end
    elif params.mode == "earliest":
        wanted = row.log_start
    elif params.mode == "shift":
        if row.committed is None:
            raise PlanError(wording.reset_shift_no_commit(row.topic, row.partition))
        wanted = row.committed + (params.shift or 0)
    else:
        if row.at_time is None:
            raise PlanError(wording.reset_time_unresolved(row.topic, row.partition))
        wanted = row.log_end if row.at_time == kafka.NO_OFFSET else row.at_time
    return min(max(wanted, row.log_start), row.log_end)


def reset_rows(rows: Iterable[Offsets], params: ResetParams) -> list[ResetRow]:
    """The dry-run table: before, after, skipped and re-read per partition, in the order given."""
    table = []
    for row in rows:
        after = target_offset(row, params)
        before = row.committed
        skipped = None if before is None else max(0, after - max(before, row.log_start))
        reread = 0 if before is None else max(0, before - after)
        table.append(ResetRow(row.topic, row.partition, before, after, skipped, reread))
    return table


def rows_from_verdict(verdict: GroupVerdict, params: ResetParams) -> list[Offsets]:
    """The partitions to reset (the chosen topics of the group), with what the verdict knows of them."""
    at_time = {(t, p): o for t, p, o in params.at_time}
    chosen = [p for p in verdict.partitions if not params.topics or p.topic in params.topics]
    return [
        Offsets(p.topic, p.partition, p.committed, p.log_start, p.log_end, at_time.get(p.tp))
        for p in sorted(chosen, key=lambda p: p.tp)
    ]


def resolve_times(params: ResetParams, partitions: Iterable[TopicPartition], admin: Any, timeout: float) -> ResetParams:
    """For mode datetime: look up each partition's offset for `to_datetime` (I/O, at proposal time)."""
    at_ms = params.at_time_ms
    if at_ms is None:
        return params
    found = kafka.offsets_for_time(admin, partitions, at_ms, timeout)
    return params.model_copy(update={"at_time": tuple((t, p, o) for (t, p), o in sorted(found.items()))})


def totals(table: Sequence[ResetRow]) -> dict[str, int]:
    return {
        "skipped": sum(r.skipped or 0 for r in table),
        "reread": sum(r.reread for r in table),
        "skipped_unknown": sum(1 for r in table if r.skipped is None),
        "changed": sum(1 for r in table if r.before != r.after),
    }


class ResetOffsets(Remediation):
    name = "reset_offsets"
    risk = Risk.HIGH
    Params = ResetParams
    Policy = ResetPolicy
    args_usage = "latest | shift <n> | datetime <ISO 8601 with zone>"

    def parse_args(self, args: Sequence[str]) -> dict[str, Any]:
        mode = args[0] if args else ""
        if mode == "latest" and len(args) == 1:
            return {"mode": mode}
        if mode == "shift" and len(args) == 2 and args[1].lstrip("-").isdigit():
            return {"mode": mode, "shift": int(args[1])}
        if mode == "datetime" and len(args) == 2:
            return {"mode": mode, "to_datetime": args[1]}
        raise ArgsError(self.name)

    def policy_params(self, policy: PolicyParams, raw: Mapping[str, Any], *, rule: str) -> dict[str, Any]:
        """The mode asked for must be one the rule allows."""
        assert isinstance(policy, ResetPolicy)
        if raw.get("mode") not in policy.modes:
            raise ValueError(wording.policy_mode_not_allowed(rule, str(raw.get("mode")), policy.modes))
        return super().policy_params(policy, raw, rule=rule)

    def explain_policy(self, policy: PolicyParams, workload: Workload | None) -> list[str]:
        assert isinstance(policy, ResetPolicy)
        return [wording.explain_modes(policy.modes)]

    def prepare(self, raw: Mapping[str, Any], verdict: GroupVerdict, context: ProposalContext) -> BaseModel:
        """A reset to a datetime is turned into offsets now (the broker's time index), so `plan` stays pure."""
        params = validate_params(self.name, self.Params, raw)
        if isinstance(params, ResetParams) and params.mode == "datetime" and context.admin is not None:
            partitions = [p.tp for p in verdict.partitions]
            params = resolve_times(params, partitions, context.admin(), timeout=context.timeout)
        return params

    def plan(self, verdict: GroupVerdict, params: BaseModel, *, now: float) -> Plan:
        """The dry run: the table of before/after offsets and the messages skipped, and the confirm wording."""
        assert isinstance(params, ResetParams)
        rows = rows_from_verdict(verdict, params)
        if not rows:
            raise PlanError(wording.reset_no_partitions(verdict.group, params.topics))
        table = reset_rows(rows, params)
        sums = totals(table)
        if sums["changed"] == 0:
            raise PlanError(wording.reset_nothing_to_do(verdict.group))
        how = wording.reset_how(params.mode, params.shift, params.to_datetime)
        return Plan(
            action=self.name,
            cluster=verdict.cluster,
            group=verdict.group,
            summary=wording.reset_summary(verdict.group, how),
            risk=self.risk,
            params=params.model_dump(mode="json"),
            steps=(
                wording.reset_step_check(),
                wording.reset_step_alter(len(table), how, sums["skipped"], sums["reread"]),
                wording.reset_step_read_back(),
            ),
            before={
                "state": verdict.state.value,
                "total_lag": verdict.total_lag,
                "offsets": [[r.topic, r.partition, r.before] for r in table],
            },
            after={
                "offsets": [[r.topic, r.partition, r.after] for r in table],
                "table": [asdict(r) for r in table],
                **sums,
            },
            preflight=(wording.preflight_inactive(),),
            created_at=now,
            confirm=wording.reset_confirm(verdict.group, how, sums["skipped"], sums["skipped_unknown"], sums["reread"]),
        )

    def execute(self, plan: Plan, context: ExecutionContext) -> Outcome:
        """Check the group is inactive, recompute the targets from fresh offsets, alter, read back.

        Outcome.data: {"table": [the rows as applied], "skipped", "reread", "skipped_unknown", "changed"}.
        """
        params = ResetParams.model_validate(plan.params)
        partitions = [(str(t), int(p)) for t, p, _ in plan.after["offsets"]]
        admin = context.admin
        if admin is None:
            return Outcome(False, common.preflight_failed(wording.preflight_inactive(), common.no_admin()))
        try:
            state, _ = kafka.describe_group(admin, plan.group, context.timeout)
            if state not in INACTIVE:
                return Outcome(
                    False,
                    common.preflight_failed(wording.preflight_inactive(), wording.reset_group_active(state.value)),
                )
            table = reset_rows(fresh_offsets(admin, plan.group, partitions, params, context.timeout), params)
            context.progress(wording.reset_progress(plan.group, len(table)))
            try:
                kafka.alter_offsets(
                    admin, plan.group, {(r.topic, r.partition): r.after for r in table}, context.timeout
                )
            except kafka.GroupActiveError as refused:
                return refused_outcome(admin, plan.group, table, str(refused), context.timeout)
            except kafka.AlterOutcomeUnknown as unanswered:
                unknown: str | None = str(unanswered)  # the read back below tells whether it was stored
            else:
                unknown = None
            read_back = kafka.committed_offsets(admin, plan.group, partitions, context.timeout)
        except (kafka.KafkaActionError, PlanError) as exc:
            return Outcome(False, str(exc))
        wrong = [f"{r.topic}-{r.partition}" for r in table if read_back.get((r.topic, r.partition)) != r.after]
        if wrong:
            return Outcome(False, wording.reset_read_back_differs(wrong, unknown))
        sums = totals(table)
        detail = wording.reset_done(plan.group, len(table), sums["skipped"], sums["reread"])
        return Outcome(True, detail, {"table": [asdict(r) for r in table], **sums})


def refused_outcome(admin: Any, group: str, table: Sequence[ResetRow], refusal: str, timeout: float) -> Outcome:
    """The broker refused the reset (the group became active): say so, and whether anything changed, read back.

    Raises:
        KafkaActionError: the committed offsets could not be read back.
    """
    read_back = kafka.committed_offsets(admin, group, [(r.topic, r.partition) for r in table], timeout)
    moved = [f"{r.topic}-{r.partition}" for r in table if read_back.get((r.topic, r.partition)) != r.before]
    return Outcome(False, wording.reset_refused_by_broker(refusal, moved))


def fresh_offsets(
    admin: Any, group: str, partitions: Sequence[TopicPartition], params: ResetParams, timeout: float
) -> list[Offsets]:
    """The partitions' committed offsets, log bounds and (datetime) offsets for the time, read now."""
    committed = kafka.committed_offsets(admin, group, partitions, timeout)
    start, end = kafka.log_bounds(admin, partitions, timeout)
    at_ms = params.at_time_ms
    at_time = kafka.offsets_for_time(admin, partitions, at_ms, timeout) if at_ms is not None else {}
    return [
        Offsets(t, p, committed.get((t, p)), start[(t, p)], end[(t, p)], at_time.get((t, p))) for t, p in partitions
    ]


REMEDIATION = ResetOffsets()
"""What lagbot.remediations.registry registers for this package."""
