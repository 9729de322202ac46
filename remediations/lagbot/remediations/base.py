"""The contract every remediation keeps: a name, a risk, a parameter model, `plan`, `execute`, `verify`,
and the hooks the coordinator (lagbot.service.remediate) calls without knowing which remediation it runs:
`parse_args` (its `/lag remediate` arguments), `prepare` (parameters at proposal time), `longest_run`,
`hand_back` and `restore` (something to undo later, e.g. a paused autoscaler, or what an interrupted run changed:
`ExecutionContext.hold`). What it leaves to undo is its `Held` type, kept in Redis through lagbot.core.codec.

Data flows one way: a verdict (from the lag engine) and validated parameters -> `plan` (pure: what will
change, before and after, the pre-flight checks) -> approvers see the plan -> `execute(plan, context)`
runs it once -> `verify(plan, later verdicts)` judges whether lag drains.

A new remediation is one package (its `remediation` module holds a subclass of `Remediation`; its `answers` module the
causes it answers) and one line in lagbot.remediations.packages; what a policy rule may set for it is its `Policy`
model, from which lagbot.policies.model derives the policy's schema.

A `Plan` is plain data and round-trips through versioned JSON (lagbot.core.codec), because it is stored in Redis
between the proposal and the click that approves it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, is_dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError

from lagbot.core import codec
from lagbot.core.model import GroupVerdict
from lagbot.remediations import wording

if TYPE_CHECKING:
    from lagbot.core.config import Settings
    from lagbot.remediations.executors.base import Executor, Workload
    from lagbot.remediations.verify import VerifyRules

PLAN_VERSION = 1


class Risk(StrEnum):
    """How much harm a wrong approval can do. HIGH loses data (offset reset) and needs two approvers."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"


class PlanError(ValueError):
    """This remediation has nothing sensible to do for this verdict and these parameters (the message says why).

    Raised by `plan`; the caller does not offer the action.
    """


class EvidenceRefusal(PlanError):
    """The live system shows that this remediation cannot help (a container OOM-killed again and again will be
    killed again after a restart): the message is that evidence, and what to do instead.

    Raised by `prepare`. The service says it in the incident's thread (once per incident), where a PlanError is
    only ever said to `/lag remediate`.
    """


@dataclass(frozen=True)
class Plan:
    """What a remediation will do, as the approvers see it."""

    action: str
    """The remediation's name: restart, scale, drain, reset_offsets."""
    cluster: str
    group: str
    summary: str
    """One line, fit for a button (<= 75 characters): "Scale orders-consumer 2 -> 4"."""
    risk: Risk
    params: dict[str, Any]
    """The validated parameters, as JSON."""
    steps: tuple[str, ...] = ()
    """What will change, in order, in words."""
    before: dict[str, Any] = field(default_factory=dict)
    after: dict[str, Any] = field(default_factory=dict)
    preflight: tuple[str, ...] = ()
    """Checks run right before executing; any failing one stops the execution."""
    created_at: float = 0.0
    confirm: str | None = None
    """Wording the confirm dialog must show before approving (data loss); None: no dialog needed."""

    def to_json(self) -> str:
        return PLAN_CODEC.encode(self)

    @classmethod
    def from_json(cls, raw: str | bytes) -> Plan:
        """Raises StoredFormatError (lagbot.core.stored) when it is not a plan lagbot wrote."""
        return PLAN_CODEC.decode(raw)


PLAN_CODEC = codec.register(codec.Codec("stored plan", Plan, PLAN_VERSION))


class CutShort(StrEnum):
    """How a run ended before it could finish on its own (and undo what it held itself)."""

    INTERRUPTED = "interrupted"
    """Its process went down mid-run, or it stopped beating or ran past its longest duration (reaped); for a
    restore, the change it undid was one an interrupted run held."""
    CRASHED = "crashed"
    """The remediation raised: a bug, or a failure it did not expect."""


@dataclass(frozen=True)
class Outcome:
    """What executing (a step of) a plan did. `detail` is short enough for a Slack thread reply."""

    ok: bool
    detail: str
    data: dict[str, Any] = field(default_factory=dict)
    """What the remediation reports of its run (its own keys: a scale's "keda_previous", a reset's table)."""
    cut_short: CutShort | None = None
    """Set when the run did not end on its own (the service sets it; a restore of an interrupted run's hold too)."""

    @property
    def recorded(self) -> dict[str, object]:
        """`data` as the audit keeps it: a run cut short adds its flag ({"interrupted": true} or {"crashed": true}),
        the form every audit entry has had, so the audit's stored format is unchanged."""
        return self.data if self.cut_short is None else {**self.data, self.cut_short.value: True}


class Progress(StrEnum):
    """Verification's judgement of the checks that followed an execution."""

    PENDING = "pending"
    """Too few checks since the execution to judge."""
    IMPROVING = "improving"
    NO_CHANGE = "no_change"
    WORSE = "worse"
    RESOLVED = "resolved"


@dataclass(frozen=True)
class Verification:
    progress: Progress
    detail: str
    drain_rate: float | None = None
    eta_seconds: float | None = None


@dataclass
class ExecutionContext:
    """What `execute` may use. Anything a remediation needs beyond its plan comes from here.

    `executor` acts on the workload that runs the group's consumers (None when the policy names no
    workload); `admin` is the group's cluster's admin (offset operations: lagbot.engine.collector's ClusterAdmin);
    `progress` posts a line into the incident's thread; `clock` is time.time or a test's clock. A remediation that
    needs more has a context of its own, a subclass given by the callers that run it themselves (the drain's
    DrainContext); from the service it gets this one.
    """

    executor: Executor | None = None
    admin: Any = None
    progress: Callable[[str], None] = lambda _line: None
    clock: Callable[[], float] | None = None
    timeout: float = 10.0
    """Seconds any one broker request (describe, list offsets, alter) may take."""
    kafka_config: Mapping[str, Any] | None = None
    """librdkafka settings of the group's cluster, for a job's own consumers and producers."""
    workload: Workload | None = None
    """The policy rule's workload (what the executor acts on when the parameters name none)."""
    settings: Settings | None = None
    """lagbot's settings (the drain reads its `drain:` section); None: each remediation's defaults."""
    hold_restore: Callable[[Any], None] = lambda _previous: None
    """Keeps what `restore` needs (JSON data, as `restore_document` makes it) in Redis, so that a run whose process
    dies is restored by the replica that reaps it. Raises when it cannot be kept: the run then changes nothing.
    A remediation calls `hold`."""

    def hold(self, payload: object) -> None:
        """Keep `payload` (the remediation's `Held`, or plain JSON data) for `restore`, right before the run changes
        the workload in a way it must undo (the drain's pause, KEDA paused). Raises when it cannot be kept."""
        self.hold_restore(restore_document(payload))


def restore_document(payload: object) -> Any:
    """What the restore queue keeps of what a remediation leaves to undo (`ExecutionContext.hold`, `hand_back`): a
    frozen dataclass (a remediation's `Held`, registered with lagbot.core.codec) as its versioned document, so that
    `Remediation.held` reads it back, upgraded; plain JSON data as it is."""
    if is_dataclass(payload) and not isinstance(payload, type):
        return codec.codec_of(type(payload)).versioned(payload)
    return payload


DEFAULT_LONGEST_RUN = 3_600.0
"""How long a run may hold its group before it counts as interrupted, unless the remediation says otherwise."""


class ParamsError(ValueError):
    """Parameters do not fit a remediation's Params model; the message names the remediation and fields."""


class ArgsError(ValueError):
    """The arguments after the action in `/lag remediate` do not parse (the Slack layer answers the usage)."""


def validate_params(name: str, model: type[BaseModel], raw: Mapping[str, Any]) -> BaseModel:
    """`raw` validated by `model`. Raises ParamsError, one line per bad field: "<name>: <field>: <problem>"."""
    try:
        return model.model_validate(dict(raw))
    except ValidationError as exc:
        lines = [
            wording.params_error(name, ".".join(str(p) for p in e["loc"]), e["msg"].removeprefix("Value error, "))
            for e in exc.errors(include_url=False)
        ]
        raise ParamsError("\n".join(lines)) from None


class PolicyParams(BaseModel):
    """What a policy rule may set for one remediation, beyond what every remediation's policy carries (cooldown,
    approvals, auto-approval, proposal expiry: lagbot.policies.model.RemediationPolicy).

    Each remediation declares its own subclass once (`Remediation.Policy`); lagbot.policies.model derives
    the remediation's policy model from it, so a policy file's `remediations.<name>:` section is validated by it
    and its instances are the rule's policy for that remediation. Its validators' messages are what a user
    with a bad policy file reads.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass
class ProposalContext:
    """What `prepare` may use: the live system, read when a proposal is made.

    `executor()` gives the executor acting on the policy rule's `workload` (both None without one); `admin()` an
    AdminClient of the group's cluster (both made only when called); `settings` are lagbot's settings (the
    `drain:` section); `policy` is what the policy rule sets for this remediation (an instance of its
    `Policy`; None when the rule does not allow it).
    """

    executor: Callable[[], Any] | None = None
    workload: Any = None
    admin: Callable[[], Any] | None = None
    settings: Any = None
    policy: PolicyParams | None = None
    timeout: float = 10.0
    now: float | None = None
    """When the proposal is made (epoch seconds); None: read the clock when needed."""
    pod_readings: Any = None
    """The service's lagbot.remediations.executors.pod_evidence.PodReadings: each owner's pod read at most once in
    its time (None: read each time)."""
    pod_round: Any = None
    """The check cycle's lagbot.remediations.executors.pod_evidence.ReadRound, for a proposal made on the check's
    thread: its pod reads share the cycle's bound (None: a person's request, with the executor's own timeout)."""


class Remediation(ABC):
    """One action lagbot can take. Subclasses live one per module in `remediations/`."""

    name: ClassVar[str]
    risk: ClassVar[Risk]
    Params: ClassVar[type[BaseModel]]
    Policy: ClassVar[type[PolicyParams]] = PolicyParams
    """What a policy rule may set for it, declared once here (by default nothing beyond what every remediation's
    policy carries); lagbot.policies.model derives the remediation's policy model from it."""
    args_usage: ClassVar[str] = ""
    """What may follow the action in `/lag remediate <group> <action>` (empty: nothing)."""
    needs_workload: ClassVar[bool] = False
    """Whether it acts on the workload the policy rule names (an executor), so cannot run without one."""
    Held: ClassVar[type[Any] | None] = None
    """What it leaves to undo (`ExecutionContext.hold`, `hand_back`; `restore` reads it back with `held`): a frozen
    dataclass registered with lagbot.core.codec, so that the restore queue keeps it versioned and a payload written
    by an older lagbot is upgraded. None: plain JSON data, kept as it is."""
    settles: ClassVar[bool] = False
    """Whether its run rebalances the group (members restarted, added or removed): the membership changes and the
    rates of its settle period are its own, expected (lagbot.engine.agreement `own_rebalance`, `settling`). The
    causes it answers are its package's `answers` module's (lagbot.remediations.packages)."""

    def parse_args(self, args: Sequence[str]) -> dict[str, Any]:
        """The parameters a user gave after the action in `/lag remediate`. Raises ArgsError."""
        if args:
            raise ArgsError(self.name)
        return {}

    def policy_params(self, policy: PolicyParams, raw: Mapping[str, Any], *, rule: str) -> dict[str, Any]:
        """`raw` (what the user gave) with what the policy rule sets for this remediation: each field of its
        `Policy` that `Params` has too, the rule's value winning (a user cannot widen a limit).
        Raises ValueError when the rule forbids what the user asked for (`rule`: the rule's name)."""
        shared = [name for name in self.Policy.model_fields if name in self.Params.model_fields]
        return {**raw, **{name: getattr(policy, name) for name in shared}}

    def explain_policy(self, policy: PolicyParams, workload: Workload | None) -> list[str]:
        """What the policy rule's settings mean, in phrases for `lagbot policy explain` (none by default)."""
        return []

    def prepare(self, raw: Mapping[str, Any], verdict: GroupVerdict, context: ProposalContext) -> BaseModel:
        """The parameters of a proposal: `raw` (the policy's limits and what the user gave) validated, completed
        with what only the live system knows. Raises ParamsError (or ValueError naming the problem)."""
        return validate_params(self.name, self.Params, raw)

    def longest_run(self, plan: Plan) -> float:
        """How long a run of `plan` may hold its group before it counts as interrupted."""
        return DEFAULT_LONGEST_RUN

    def hand_back(self, plan: Plan, outcome: Outcome, *, finished: float) -> tuple[float, Any] | None:
        """Something the run must undo later: (when, what `restore` needs: its `Held`), or None (the default)."""
        return None

    def held(self, previous: Any) -> Any:
        """What the restore queue kept (`restore`'s `previous`) read back as this remediation's `Held`, through its
        codec (an older version upgraded); plain JSON data as it is when it declares none.

        Raises:
            StoredFormatError: (lagbot.core.stored) not one this lagbot reads, a newer version for one.
        """
        if self.Held is None:
            return previous
        return codec.codec_of(self.Held).from_document(previous)

    def restore(self, plan: Plan, context: ExecutionContext, *, previous: Any) -> Outcome:
        """Undo what `hand_back` left to undo, or what an interrupted run held with `context.hold` (only called with
        one of those, as the restore queue kept it: `held` reads it). When it cannot, its detail says exactly what to
        restore by hand."""
        raise NotImplementedError(self.name)

    def restored(self, outcome: Outcome) -> str:
        """What the incident's thread is told once `restore` ran: the remediation's own words for what was undone."""
        return wording.restored(self.name, outcome.ok, outcome.detail)

    @abstractmethod
    def plan(self, verdict: GroupVerdict, params: BaseModel, *, now: float) -> Plan:
        """Pure: what will change for this group, given its verdict. No I/O."""

    @abstractmethod
    def execute(self, plan: Plan, context: ExecutionContext) -> Outcome:
        """Run the plan once: pre-flight checks first; any failing one stops it with ok=False."""

    def verify(
        self,
        plan: Plan,
        verdicts: Sequence[GroupVerdict],
        *,
        times: Sequence[float] | None = None,
        rules: VerifyRules | None = None,
    ) -> Verification:
        """Judge the checks taken since the execution (oldest first).

        `verdicts[0]` is the check taken when the plan was executed (the baseline), the rest every check
        since. `times` (same length) says when each was taken, for the drain rate; without it the rate is
        the evaluator's own (consume - produce) of the newest verdict. `rules`: lagbot.remediations.verify's
        defaults unless the policy rule sets its own. The default is lagbot.remediations.verify's `assess`;
        a remediation with its own notion of success (the drain) overrides it.
        """
        from lagbot.remediations.verify import assess, checks_of  # verify imports this module

        return assess(checks_of(verdicts, times), rules)
