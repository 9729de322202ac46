"""The policy model: who may approve which remediation for which consumer groups, within which limits.

A policy is a list of rules and an explicit default. A group gets the first rule whose `match` (cluster and
group regexes, whole-name match) fits it, else the default. A rule says: the thresholds (lagbot.core.config's
Thresholds; None: the configuration's), the Slack channel, the approvers (user ids and user groups), the
remediations allowed with their limits (absent: not allowed), maintenance windows (no automatic actions
then), dry-run (plans are shown, nothing runs), and the workload that runs the group's consumers.

The `remediations:` section is derived from lagbot.remediations.registry: one optional entry per registered
remediation, validated by what every remediation's policy carries (RemediationPolicy) and by what the
remediation itself declares a rule may set (its `Policy` model, with its own limits and messages). Nothing here
names a particular remediation.

Validation rules beyond types, each with a message naming the field:
- each remediation's own rules (its `Policy`: the replica range in order, two approvals where data is lost...);
- `auto_approve` only for low-risk remediations (lagbot.remediations.registry's risk);
- regexes compile; time zones are IANA names; rule names are unique.
Parsing does no I/O; lagbot.policies.loader reads files.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Self
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator, model_validator

from lagbot.core import messages, patterns
from lagbot.core.config import Duration, Thresholds
from lagbot.policies import wording
from lagbot.remediations import registry
from lagbot.remediations.base import PolicyParams, Remediation, Risk
from lagbot.remediations.executors.base import Workload
from lagbot.remediations.verify import VerifyRules

Day = Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
DAYS: tuple[Day, ...] = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_CLOCK = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$|^24:00$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _compiles(pattern: str) -> str:
    try:
        return patterns.check(pattern)
    except patterns.UnsafePattern as exc:
        raise ValueError(messages.refused_regex(pattern, exc)) from None


class Match(_Strict):
    """Which groups a rule covers: both regexes must match the whole name."""

    cluster: str = ".*"
    group: str = ".*"

    @field_validator("cluster", "group")
    @classmethod
    def _regex(cls, pattern: str) -> str:
        return _compiles(pattern)

    def matches(self, cluster: str, group: str) -> bool:
        return patterns.fullmatch(self.cluster, cluster) and patterns.fullmatch(self.group, group)


class Approvers(_Strict):
    """Slack user ids (U..., W...) and user groups (S...), resolved to their members when checked."""

    users: tuple[str, ...] = ()
    usergroups: tuple[str, ...] = ()

    @field_validator("users")
    @classmethod
    def _user_ids(cls, users: tuple[str, ...]) -> tuple[str, ...]:
        for user in users:
            if not re.fullmatch(r"[UW][A-Z0-9]{2,}", user):
                raise ValueError(wording.policy_bad_user_id(user))
        return users

    @field_validator("usergroups")
    @classmethod
    def _usergroup_ids(cls, groups: tuple[str, ...]) -> tuple[str, ...]:
        for group in groups:
            if not re.fullmatch(r"S[A-Z0-9]{2,}", group):
                raise ValueError(wording.policy_bad_usergroup_id(group))
        return groups

    @property
    def configured(self) -> bool:
        return bool(self.users or self.usergroups)

    def mentions(self) -> str:
        """Slack mentions of every approver (users and user groups), for an escalation; '' when none."""
        return wording.approver_mentions(self.users, self.usergroups)


class RemediationPolicy(PolicyParams):
    """What every allowed remediation carries: cooldown, approvals, auto-approval, proposal expiry. Each
    remediation's own policy model adds what it declares (`policy_model`)."""

    action: ClassVar[str]

    cooldown: Duration = Field(default=1800.0, ge=0)
    """After it ran for a group, it is not proposed again for that group for this long."""
    approvals_required: Literal[1, 2] = 1
    auto_approve: bool = False
    """Run without a human's click: only for low-risk remediations, never in a maintenance window or dry-run."""
    proposal_expiry: Duration = Field(default=900.0, gt=0)
    """A proposal (its buttons) expires after this long; approving then is refused."""

    @field_validator("auto_approve")
    @classmethod
    def _only_low_risk(cls, auto: bool) -> bool:
        risk = registry.risk_of(cls.action)
        if auto and risk is not Risk.LOW:
            raise ValueError(wording.policy_auto_approve_risky(cls.action, risk.value if risk else None))
        return auto


def policy_model(remediation: Remediation) -> type[RemediationPolicy]:
    """The policy model of one remediation: what every remediation's policy carries (RemediationPolicy) and
    what the remediation declares a rule may set for it (its `Policy`, whose fields and validators win: a
    remediation that loses data may insist on two approvals). Named after the remediation: `<Name>Policy`."""
    name = "".join(part.title() for part in remediation.name.split("_")) + "Policy"
    model = create_model(name, __base__=(remediation.Policy, RemediationPolicy), __module__=__name__)
    assert issubclass(model, RemediationPolicy)
    model.action = remediation.name
    return model


class Remediations(_Strict):
    """The remediations allowed for a group; an absent one is not offered. One optional field per registered
    remediation, holding its policy model (`remediations_model` adds them)."""

    def allowed(self) -> dict[str, RemediationPolicy]:
        """name -> its policy, for the allowed ones, in a stable order (the order they were registered in)."""
        found = {name: getattr(self, name) for name in type(self).model_fields}
        return {name: policy for name, policy in found.items() if isinstance(policy, RemediationPolicy)}


def remediations_model(remediations: Iterable[Remediation]) -> type[Remediations]:
    """The `remediations:` section of a rule for these remediations: each an optional field, its policy model."""
    fields: dict[str, Any] = {r.name: (policy_model(r) | None, None) for r in remediations}
    return create_model("Remediations", __base__=Remediations, __module__=__name__, **fields)


if TYPE_CHECKING:
    RegisteredRemediations = Remediations
else:
    RegisteredRemediations = remediations_model(registry.remediations())


def _minutes(clock: str) -> int:
    hours, minutes = clock.split(":")
    return int(hours) * 60 + int(minutes)


class MaintenanceWindow(_Strict):
    """Recurring hours on some days of the week, in a time zone. `end` before `start` crosses midnight
    (22:00 to 06:00 on fri covers Friday 22:00 to Saturday 06:00); `end` may be 24:00."""

    days: tuple[Day, ...] = DAYS
    start: str
    end: str
    timezone: str = "UTC"
    reason: str = ""

    @field_validator("start", "end")
    @classmethod
    def _clock(cls, value: str) -> str:
        if not _CLOCK.match(value):
            raise ValueError(wording.policy_bad_clock(value))
        return value

    @field_validator("timezone")
    @classmethod
    def _iana(cls, name: str) -> str:
        try:
            ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(wording.policy_bad_timezone(name)) from exc
        return name

    @field_validator("days")
    @classmethod
    def _some_day(cls, days: tuple[str, ...]) -> tuple[str, ...]:
        if not days:
            raise ValueError(wording.policy_no_days())
        return days

    @model_validator(mode="after")
    def _not_empty(self) -> Self:
        if self.start == self.end:
            raise ValueError(wording.policy_empty_window(self.start))
        return self

    def covers(self, now: float) -> bool:
        """Whether the moment `now` (epoch seconds) falls inside this window, in its time zone."""
        local = datetime.fromtimestamp(now, tz=UTC).astimezone(ZoneInfo(self.timezone))
        minute = local.hour * 60 + local.minute
        start, end = _minutes(self.start), _minutes(self.end)
        today = DAYS[local.weekday()]
        if start < end:
            return today in self.days and start <= minute < end
        yesterday = DAYS[(local - timedelta(days=1)).weekday()]
        return (today in self.days and minute >= start) or (yesterday in self.days and minute < end)


class Rule(_Strict):
    """Everything a policy says about a group. The default rule is a Rule; matched rules add `match`."""

    name: str = Field(default="default", min_length=1, max_length=80)
    thresholds: Thresholds | None = None
    """None: the thresholds of lagbot's configuration."""
    channel: str | None = None
    approvers: Approvers = Field(default_factory=Approvers)
    silencers: Approvers | None = None
    """Who may `/lag silence` and `/lag unsilence` the rule's groups; None: its approvers."""
    remediations: RegisteredRemediations = Field(default_factory=RegisteredRemediations)
    maintenance: tuple[MaintenanceWindow, ...] = ()
    dry_run: bool = False
    workload: Workload | None = None
    verification: VerifyRules = Field(default_factory=VerifyRules)

    @field_validator("channel")
    @classmethod
    def _channel(cls, channel: str | None) -> str | None:
        if channel is not None and not re.fullmatch(r"#[a-z0-9][a-z0-9_-]{0,79}|[CGD][A-Z0-9]{2,}", channel):
            raise ValueError(wording.policy_bad_channel(channel))
        return channel

    def may_silence(self) -> Approvers:
        """Who may silence (and unsilence) the rule's groups."""
        return self.silencers if self.silencers is not None else self.approvers

    def in_maintenance(self, now: float) -> MaintenanceWindow | None:
        """The maintenance window covering `now`, if any (pure)."""
        return next((w for w in self.maintenance if w.covers(now)), None)

    def allows(self, action: str) -> RemediationPolicy | None:
        """The policy of `action` when this rule allows it; None when it does not."""
        return self.remediations.allowed().get(action)

    def auto_approves(self, action: str, now: float) -> bool:
        """Whether `action` may run without a human now: allowed with auto_approve, not dry-run, no maintenance."""
        policy = self.allows(action)
        return policy is not None and policy.auto_approve and not self.dry_run and self.in_maintenance(now) is None


class MatchRule(Rule):
    """A rule that applies to the groups its `match` covers."""

    match: Match


class Policy(_Strict):
    """Rules, first match wins, then the explicit default."""

    version: Literal[1] = 1
    rules: tuple[MatchRule, ...] = ()
    default: Rule

    @field_validator("rules")
    @classmethod
    def _unique_names(cls, rules: tuple[MatchRule, ...]) -> tuple[MatchRule, ...]:
        first: dict[str, int] = {}
        for index, rule in enumerate(rules):
            if rule.name in first:
                raise ValueError(wording.policy_duplicate_rule(rule.name, first[rule.name], index))
            first[rule.name] = index
        return rules

    def match(self, cluster: str, group: str) -> Rule:
        """The first rule whose match covers (cluster, group), else the default."""
        return next((r for r in self.rules if r.match.matches(cluster, group)), self.default)

    def match_index(self, cluster: str, group: str) -> int | None:
        """Index of the rule `match` returns; None for the default."""
        return next((i for i, r in enumerate(self.rules) if r.match.matches(cluster, group)), None)


def remediation_params(rule: Rule, action: str, **given: Any) -> dict[str, Any]:
    """Raw parameters for `action` with the rule's limits and workload filled in, for registry.params.

    `given` adds what only the caller knows (current_replicas read from the executor, a reset mode, an
    explicit replica count). Raises ValueError when the rule does not allow `action` (or what was asked of it),
    or names no workload that it needs.
    """
    policy = rule.allows(action)
    if policy is None:
        raise ValueError(messages.policy_not_allowed(rule.name, action))
    remediation = registry.get(action)
    raw: dict[str, Any] = dict(given)
    if remediation.needs_workload:
        if rule.workload is None:
            raise ValueError(wording.policy_no_workload(rule.name, action))
        raw["workload"] = rule.workload.model_dump()
    return remediation.policy_params(policy, raw, rule=rule.name)
