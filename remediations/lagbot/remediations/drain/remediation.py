"""The emergency drain: read a backlog with many Spark tasks, write it somewhere durable, then move the group past it.

For the partition ceiling (one consumer per partition at most): a hot partition is cut into ranges of
`chunk` offsets and read by as many tasks as the cluster has. The order is the contract:

1. plan (pure): `[committed, log_end)` of every lagging partition, from the verdict (the collector read
   them from the broker), cut into ranges; the ETA from the measured task rate; what happens to offsets;
2. execute: pre-flight (offsets not moved back since the plan; the group Empty, or paused through the
   executor when the plan says so) -> the Spark job writes every range -> the manifest is written ->
   only if every range is written and the group is Empty right then, its offsets are advanced to the
   ranges' ends (never backwards) -> the consumers' replica count is restored, whatever happened;
3. verify: later verdicts show the offsets at or past the ends and the lag below the drained backlog.

On any failure nothing is committed and the manifest says what was written. Risk MEDIUM: offsets move,
but no message is lost (each was written first).

`execute` reads from `ExecutionContext`: `admin` (AdminClient of the cluster), `executor` (to pause
consumers), `progress` (lines for the incident thread), and
- `kafka_config` (required): librdkafka settings of the cluster, for the job's readers and producers;
- `settings`: lagbot's settings, whose `drain:` section (spark-submit, archives, manifest_dir) it uses;
- `workload`: the `Workload` to pause when the params name none;
- from a DrainContext (lagbot.remediations.drain.context), given by callers that run it themselves: `spark`, a
  SparkSession to use (local masters; otherwise one is made and stopped), `on_progress`, a callable receiving every
  `JobProgress` (the CLI's progress bar), and `drain_settings` when they have no lagbot settings.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

from pydantic import BaseModel

from lagbot.core import messages
from lagbot.core.model import GroupVerdict, PartitionVerdict, Status
from lagbot.remediations.base import (
    ArgsError,
    ExecutionContext,
    Outcome,
    Plan,
    PolicyParams,
    Progress,
    ProposalContext,
    Remediation,
    Risk,
    Verification,
)
from lagbot.remediations.drain import wording as drain_wording
from lagbot.remediations.drain.context import drain_settings, progress_receiver
from lagbot.remediations.drain.job import JobConfig, JobProgress
from lagbot.remediations.drain.offsets import (
    _NOT_ACTIVE,
    DrainError,
    advance_offsets,
    committed_offsets,
    group_state,
    moved_back,
    wait_until_empty,
)
from lagbot.remediations.drain.params import DrainParams
from lagbot.remediations.drain.plan import (
    DrainLayout,
    Manifest,
    OffsetRange,
    PartitionBacklog,
    PartitionDrain,
    estimate_seconds,
    layout,
    plan_id,
)
from lagbot.remediations.drain.policy import DrainPolicy, sink_refusal
from lagbot.remediations.drain.preflight import java_problem, sink_problem, spark_problem
from lagbot.remediations.drain.run import run_local, submit
from lagbot.remediations.drain.settings import (
    is_connect,
    is_local,
)
from lagbot.remediations.drain.sinks import manifest_url, parse_sink
from lagbot.remediations.executors.base import Executor, Workload
from lagbot.remediations.verify import VerifyRules

log = logging.getLogger(__name__)


def backlogs(verdict: GroupVerdict, topics: Sequence[str] = ()) -> list[PartitionBacklog]:
    """Each partition of the verdict (of `topics`, when given) as the plan's input."""
    wanted = set(topics)
    return [
        PartitionBacklog(p.topic, p.partition, p.committed, p.log_start, p.log_end)
        for p in verdict.partitions
        if not wanted or p.topic in wanted
    ]


def needs_pause(verdict: GroupVerdict) -> bool:
    """True when the group has (or is getting) live consumers: its offsets cannot be moved while they run."""
    return verdict.state.is_active or bool(verdict.members)


def build_plan(verdict: GroupVerdict, params: DrainParams, *, now: float) -> Plan:
    """The drain plan approvers see: ranges, messages, ETA, sink, offsets, and the pause when consumers run.

    Raises:
        DrainError: the verdict could not be read (unknown offsets cannot be planned), or a topic asked
            for is not consumed by the group.
    """
    if verdict.error is not None or verdict.status is Status.ERR:
        raise DrainError(drain_wording.drain_unreadable(verdict.group, verdict.error or verdict.status.name))
    missing = sorted(set(params.topics) - {p.topic for p in verdict.partitions})
    if missing:
        raise DrainError(drain_wording.drain_unknown_topics(verdict.group, missing))
    work = layout(backlogs(verdict, params.topics), chunk=params.chunk, uncommitted=params.uncommitted)
    sink = parse_sink(params.sink)
    pid = plan_id(verdict.cluster, verdict.group, sink.url, work.ranges)
    pause = needs_pause(verdict) and params.pause_consumers and bool(work.ranges)
    eta = estimate_seconds(work.ranges, slots=params.slots, task_rate=params.task_rate, startup=params.startup_seconds)
    after: dict[str, Any] = {
        "plan_id": pid,
        "sink": sink.url,
        "sink_kind": sink.kind,
        "manifest": manifest_url(sink, manifest_dir=params.manifest_dir, group=verdict.group, plan_id=pid),
        "ranges": [r.to_list() for r in work.ranges],
        "partitions": [asdict(p) for p in work.partitions],
        "offsets": work.offsets,
        "lost": work.lost,
        "bytes": None,
        "tasks": len(work.ranges),
        "slots": params.slots,
        "eta_seconds": round(eta, 1),
        "pause": pause,
        "commit": {f"{p.topic}/{p.partition}": p.end for p in work.partitions},
    }
    return Plan(
        action=DrainRemediation.name,
        cluster=verdict.cluster,
        group=verdict.group,
        summary=drain_wording.drain_summary(verdict.group, work.offsets, len(work.ranges), eta),
        risk=DrainRemediation.risk,
        params=params.model_dump(mode="json"),
        steps=tuple(_steps(work, params, sink.kind, pause, after["manifest"])),
        before=_before(verdict),
        after=after,
        preflight=tuple(drain_wording.drain_preflight(pause)),
        created_at=now,
        confirm=drain_wording.drain_confirm(sink.url, work.offsets, len(work.partitions)),
    )


def _steps(work: DrainLayout, params: DrainParams, kind: str, pause: bool, manifest: str) -> list[str]:
    steps = []
    workload = params.workload.name if params.workload else None
    if pause:
        steps.append(drain_wording.drain_step_pause(workload))
    steps.append(
        drain_wording.drain_step_read(work.offsets, len(work.ranges), params.chunk, params.slots, params.master)
    )
    steps.append(drain_wording.drain_step_write(kind, params.sink, manifest))
    steps.append(drain_wording.drain_step_commit(len(work.partitions)))
    if pause:
        steps.append(drain_wording.drain_step_restore(workload))
    for p in work.partitions:
        if p.origin != "committed":
            steps.append(drain_wording.drain_note_origin(p.topic, p.partition, p.origin, p.start, p.lost))
    if kind == "replay" and any(p.offsets > params.chunk for p in work.partitions):
        steps.append(drain_wording.drain_note_replay_order(params.chunk))
    return steps


def _before(verdict: GroupVerdict) -> dict[str, Any]:
    return {
        "state": verdict.state.value,
        "total_lag": verdict.total_lag,
        "consume_rate": verdict.consume_rate,
        "produce_rate": verdict.produce_rate,
        "eta_seconds": verdict.eta_seconds,
        "members": len(verdict.members),
        "partitions": [_partition_before(p) for p in verdict.partitions],
    }


def _partition_before(p: PartitionVerdict) -> dict[str, Any]:
    return {
        "topic": p.topic,
        "partition": p.partition,
        "committed": p.committed,
        "log_start": p.log_start,
        "log_end": p.log_end,
        "lag": p.lag,
    }


def plan_ranges(plan: Plan) -> tuple[OffsetRange, ...]:
    return tuple(OffsetRange.from_list(r) for r in plan.after["ranges"])


def plan_partitions(plan: Plan) -> tuple[PartitionDrain, ...]:
    return tuple(PartitionDrain(**p) for p in plan.after["partitions"])


# ---------------------------------------------------------------------------------------------------
# The group's offsets and state (AdminClient)
# ---------------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------------
# Running the job: in-process (local masters) or through spark-submit
# ---------------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------------
# The remediation
# ---------------------------------------------------------------------------------------------------


@runtime_checkable
class AutoscalerHandBack(Protocol):
    """An executor whose `scale` pauses a KEDA ScaledObject, that reads that pause before, and that can put it back as
    it was (lagbot.remediations.executors.kubernetes)."""

    def keda_paused_replicas(self, workload: Workload) -> str | None: ...

    def restore_autoscaling(self, workload: Workload, *, previous: str | None = None) -> Outcome: ...


@dataclass
class _Paused:
    executor: Executor
    workload: Workload
    replicas: int
    keda: bool = False
    """The pause paused the workload's autoscaler too; `keda_previous` is its paused-replicas before (None: none)."""
    keda_previous: str | None = None

    def held(self) -> dict[str, Any]:
        """What `DrainRemediation.restore` needs to undo the pause after the run died (JSON)."""
        return {
            "workload": self.workload.model_dump(mode="json"),
            "replicas": self.replicas,
            "keda": self.keda,
            "keda_previous": self.keda_previous,
        }

    @classmethod
    def from_held(cls, executor: Executor, held: Mapping[str, Any]) -> _Paused:
        return cls(
            executor,
            Workload.model_validate(held["workload"]),
            int(held["replicas"]),
            bool(held.get("keda", False)),
            held.get("keda_previous"),
        )


class DrainRemediation(Remediation):
    """Drain a group's backlog into a sink with Spark, then advance its offsets past it."""

    name: ClassVar[str] = "drain"
    risk: ClassVar[Risk] = Risk.MEDIUM
    Params: ClassVar[type[BaseModel]] = DrainParams
    Policy: ClassVar[type[PolicyParams]] = DrainPolicy
    args_usage: ClassVar[str] = "[sink: a Parquet path or URL, or kafka:TOPIC]"

    def parse_args(self, args: Sequence[str]) -> dict[str, Any]:
        if len(args) > 1:
            raise ArgsError(self.name)
        return {"sink": args[0]} if args else {}

    def prepare(self, raw: Mapping[str, Any], verdict: GroupVerdict, context: ProposalContext) -> BaseModel:
        """The `drain:` settings of lagbot's configuration, the policy's limits and what the user gave; a sink the
        policy does not allow is refused here, before anything is proposed."""
        overrides = {k: v for k, v in raw.items() if k != "sink"}
        sink = raw.get("sink")
        params = DrainParams.from_settings(context.settings.drain, sink=sink, workload=context.workload, **overrides)
        refused = sink_refusal(context.policy, params.sink, named_by_user=sink is not None)
        if refused is not None:
            raise ValueError(refused)
        return params

    def longest_run(self, plan: Plan) -> float:
        """The job's own timeout, and ten minutes to commit and report."""
        return float(plan.params.get("job_timeout", 6 * 3600.0)) + 600.0

    def plan(self, verdict: GroupVerdict, params: BaseModel, *, now: float) -> Plan:
        return build_plan(verdict, DrainParams.model_validate(params.model_dump()), now=now)

    def execute(self, plan: Plan, context: ExecutionContext) -> Outcome:
        params = DrainParams.model_validate(plan.params)
        ranges = plan_ranges(plan)
        if not ranges:
            return Outcome(True, messages.drain_nothing(plan.group))
        paused: _Paused | None = None
        try:
            kafka, admin = self._clients(context)
            problem = (
                spark_problem(params.master)
                or java_problem(params.master)
                or sink_problem(plan.after["sink"], params.master)
            )
            if problem is not None:  # before anything is paused or read
                raise DrainError(problem)
            self._preflight(plan, admin)
            if plan.after["pause"]:
                paused = self._pause(plan, params, context)
            self._check_empty(plan, admin)
            manifest = self._run(plan, params, context, kafka, ranges)
            if not manifest.complete:
                detail = drain_wording.drain_incomplete(len(manifest.written()), len(manifest.ranges), manifest.error)
                return Outcome(False, detail, _data(plan, manifest, {}))
            committed = advance_offsets(admin, plan.group, plan_partitions(plan))
            context.progress(drain_wording.drain_committed(plan.group, committed))
            done = drain_wording.drain_done(plan.group, manifest.messages, len(manifest.ranges), len(committed),
                                       manifest.finished_at - manifest.started_at)  # fmt: skip
            return Outcome(True, done, _data(plan, manifest, committed))
        except DrainError as exc:
            return Outcome(False, str(exc), {"plan_id": plan.after["plan_id"], "committed": {}})
        except Exception as exc:  # one failed drain never stops the bot; nothing was committed
            log.warning("drain failed", extra={"group": plan.group}, exc_info=True)
            return Outcome(False, drain_wording.drain_crashed(plan.group, exc), {"plan_id": plan.after["plan_id"]})
        finally:
            if paused is not None:
                context.progress(self._restore(paused))

    def verify(
        self,
        plan: Plan,
        verdicts: Sequence[GroupVerdict],
        *,
        times: Sequence[float] | None = None,
        rules: VerifyRules | None = None,
    ) -> Verification:
        return verify_drain(plan, verdicts)

    # -- steps ----------------------------------------------------------------------------------

    @staticmethod
    def _clients(context: ExecutionContext) -> tuple[dict[str, Any], Any]:
        kafka = context.kafka_config
        if context.admin is None or kafka is None or not kafka.get("bootstrap.servers"):
            raise DrainError(drain_wording.drain_no_clients())
        return dict(kafka), context.admin

    @staticmethod
    def _preflight(plan: Plan, admin: Any) -> None:
        partitions = plan_partitions(plan)
        current = committed_offsets(admin, plan.group, [(p.topic, p.partition) for p in partitions])
        behind = moved_back(partitions, current)
        if behind:
            raise DrainError(drain_wording.drain_moved_back(plan.group, behind))

    @staticmethod
    def _pause(plan: Plan, params: DrainParams, context: ExecutionContext) -> _Paused:
        executor = context.executor
        workload = params.workload or context.workload
        if not isinstance(executor, Executor) or not isinstance(workload, Workload):
            raise DrainError(drain_wording.drain_cannot_pause(plan.group))
        replicas = executor.replicas(workload)
        keda = bool(workload.keda_scaled_object) and isinstance(executor, AutoscalerHandBack)
        before = executor.keda_paused_replicas(workload) if isinstance(executor, AutoscalerHandBack) and keda else None
        paused = _Paused(executor, workload, replicas, keda, before)
        context.hold(paused.held())  # before the change: a run that dies from here on is restored
        outcome = executor.scale(workload, 0)
        if not outcome.ok:
            context.progress(DrainRemediation._restore(paused))
            raise DrainError(drain_wording.drain_pause_failed(workload.name, outcome.detail))
        context.progress(drain_wording.drain_paused(workload.name, replicas))
        admin = context.admin
        state = wait_until_empty(admin, plan.group, timeout=params.empty_timeout)
        if state not in _NOT_ACTIVE:
            context.progress(DrainRemediation._restore(paused))
            raise DrainError(drain_wording.drain_not_empty_after_pause(plan.group, state.value, params.empty_timeout))
        return paused

    @staticmethod
    def _check_empty(plan: Plan, admin: Any) -> None:
        state = group_state(admin, plan.group)
        if state not in _NOT_ACTIVE:
            raise DrainError(drain_wording.drain_group_active(plan.group, state.value))

    @staticmethod
    def _restore(paused: _Paused) -> str:
        return DrainRemediation._undo_pause(paused).detail

    @staticmethod
    def _undo_pause(paused: _Paused) -> Outcome:
        """The workload back at its replicas, and its autoscaler's pause as it was; the detail says what was
        restored, or exactly what a human must restore."""
        name, replicas = paused.workload.name, paused.replicas
        scaled = DrainRemediation._scale_back(paused)
        if scaled is not None:
            failed = drain_wording.drain_restore_failed(name, replicas, scaled)
            if paused.keda:  # the autoscaler's pause is left as the drain set it: say what it was
                keda = drain_wording.drain_keda_restore_failed(
                    paused.workload.keda_scaled_object or name, paused.keda_previous, scaled
                )
                failed = f"{failed}; {keda}"
            return Outcome(False, failed)
        restored = drain_wording.drain_restored(name, replicas)
        if not paused.keda:
            return Outcome(True, restored)
        scaled_object = paused.workload.keda_scaled_object or name
        problem = DrainRemediation._hand_back(paused)
        if problem is not None:
            failed = drain_wording.drain_keda_restore_failed(scaled_object, paused.keda_previous, problem)
            return Outcome(False, f"{restored}; {failed}")
        return Outcome(True, drain_wording.drain_restored_keda(name, replicas, scaled_object, paused.keda_previous))

    @staticmethod
    def _scale_back(paused: _Paused) -> str | None:
        """Scale the workload back to its replicas: None when done, else what went wrong."""
        if paused.replicas == 0:
            return None
        try:
            outcome = paused.executor.scale(paused.workload, paused.replicas)
        except Exception as exc:  # reported: a human must restore the consumers
            return str(exc)
        return None if outcome.ok else outcome.detail

    @staticmethod
    def _hand_back(paused: _Paused) -> str | None:
        """Put the autoscaler's pause back as it was: None when done, else what went wrong."""
        if not isinstance(paused.executor, AutoscalerHandBack):
            return drain_wording.drain_cannot_hand_back(type(paused.executor).__name__)
        try:
            handed = paused.executor.restore_autoscaling(paused.workload, previous=paused.keda_previous)
        except Exception as exc:  # reported: a human must put the annotation back
            return str(exc)
        return None if handed.ok else handed.detail

    def restore(self, plan: Plan, context: ExecutionContext, *, previous: Any) -> Outcome:
        """Undo the pause of a run that died before undoing it (`previous`: what `_pause` held)."""
        held = previous if isinstance(previous, Mapping) else {}
        try:
            workload = Workload.model_validate(held.get("workload"))
            replicas = int(held["replicas"])
        except (ValueError, TypeError, KeyError):
            return Outcome(False, drain_wording.drain_restore_lost(plan.group, str(previous)[:200]))
        if not isinstance(context.executor, Executor):
            failed = drain_wording.drain_restore_failed(workload.name, replicas, drain_wording.drain_no_executor())
            if held.get("keda"):
                scaled_object = workload.keda_scaled_object or workload.name
                keda = drain_wording.drain_keda_restore_failed(scaled_object, held.get("keda_previous"), "")
                failed = f"{failed}; {keda}"
            return Outcome(False, failed)
        return self._undo_pause(_Paused.from_held(context.executor, held))

    def restored(self, outcome: Outcome) -> str:
        return drain_wording.drain_restored_after_interruption(outcome.ok, outcome.detail)

    @staticmethod
    def _run(
        plan: Plan,
        params: DrainParams,
        context: ExecutionContext,
        kafka: dict[str, Any],
        ranges: tuple[OffsetRange, ...],
    ) -> Manifest:
        config = JobConfig(
            plan_id=plan.after["plan_id"],
            cluster=plan.cluster,
            group=plan.group,
            sink=plan.after["sink"],
            manifest_url=plan.after["manifest"],
            kafka=kafka,
            ranges=ranges,
            idle_timeout=params.idle_timeout,
            fail_after=params.fail_after,
            writer=params.writer,
        )
        report = _progress_reporter(plan, params, context)
        context.progress(drain_wording.drain_started(plan.group, len(ranges), plan.after["offsets"], params.master))
        if is_local(params.master):
            return run_local(config, params, context, report)
        if is_connect(params.master):  # the driver is the Connect server's: no JVM in this process
            from lagbot.remediations.drain.connect import run_connect

            return run_connect(config, params.master, on_progress=report, timeout=params.job_timeout)
        settings = drain_settings(context)
        return submit(config, settings.model_copy(update={"master": params.master}), on_progress=report,
                      timeout=params.job_timeout)  # fmt: skip


def _progress_reporter(plan: Plan, params: DrainParams, context: ExecutionContext) -> Callable[[JobProgress], None]:
    """Every progress goes to a DrainContext's `on_progress`; a line to the thread at most every `progress_every` s."""
    forward = progress_receiver(context)
    last = [float("-inf")]

    def report(progress: JobProgress) -> None:
        if forward is not None:
            forward(progress)
        now = time.monotonic()
        final = progress.ranges_done == progress.ranges_total
        if final or now - last[0] >= params.progress_every:
            last[0] = now
            context.progress(drain_wording.drain_progress(plan.group, progress.ranges_done, progress.ranges_total,
                                                     progress.messages, progress.rate))  # fmt: skip

    return report


def _data(plan: Plan, manifest: Manifest, committed: dict[tuple[str, int], int]) -> dict[str, Any]:
    return {
        "plan_id": plan.after["plan_id"],
        "manifest": plan.after["manifest"],
        "messages": manifest.messages,
        "bytes": manifest.total_bytes,
        "ranges_written": len(manifest.written()),
        "ranges": len(manifest.ranges),
        "seconds": round(manifest.finished_at - manifest.started_at, 1),
        "committed": {f"{t}/{p}": o for (t, p), o in sorted(committed.items())},
    }


def _below(committed: int | None, end: int) -> bool:
    return committed is None or committed < end


def verify_drain(plan: Plan, verdicts: Sequence[GroupVerdict]) -> Verification:
    """Judge the checks after a drain: offsets at or past the drained ends, and the lag since.

    PENDING without a check; NO_CHANGE when some drained partition is still behind its end (nothing was
    committed); RESOLVED when committed everywhere and the severity is back to OK; WORSE when the lag
    is above the backlog the drain took; IMPROVING otherwise (new messages arrived since the snapshot).
    """
    if not verdicts:
        return Verification(Progress.PENDING, drain_wording.drain_verify_pending())
    latest = verdicts[-1]
    committed = {p.tp: p.committed for p in latest.partitions}
    behind = [p for p in plan_partitions(plan) if _below(committed.get((p.topic, p.partition)), p.end)]
    if behind:
        return Verification(Progress.NO_CHANGE, drain_wording.drain_verify_behind(len(behind)))
    lag = latest.total_lag or 0
    if latest.severity.value == 0:
        return Verification(Progress.RESOLVED, drain_wording.drain_verify_resolved(lag), latest.consume_rate, 0.0)
    if lag > plan.after["offsets"]:
        return Verification(Progress.WORSE, drain_wording.drain_verify_worse(lag, plan.after["offsets"]))
    return Verification(Progress.IMPROVING, drain_wording.drain_verify_improving(lag), latest.consume_rate,
                        latest.eta_seconds)  # fmt: skip


REMEDIATION = DrainRemediation()
"""What lagbot.remediations.registry registers for this package."""
