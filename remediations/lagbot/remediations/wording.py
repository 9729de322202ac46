"""The wording of the remediations: plans, preflight refusals, outcomes, verification.

Tiny functions, one per message (see lagbot.core.messages for the shared ones and the number formats).
"""

from __future__ import annotations

from collections.abc import Sequence

from lagbot.core.messages import count, duration, rate


def verify_pending(checks: int, needed: int) -> str:
    if checks == 0:
        return "waiting for the first check after the action"
    return f"{checks} of {needed} checks since the action: too early to judge"


def verify_lag_unknown() -> str:
    return "lag unknown"


def verify_cannot_judge(reason: str) -> str:
    return f"cannot judge the last check: {reason}"


def verify_unknown_for(checks: int, reason: str) -> str:
    return f"no improvement seen after {checks} checks: {reason}"


def verify_resolved(lag: int) -> str:
    return f"back to normal: lag {count(lag)}, every partition OK"


def verify_worse(before: int, now: int) -> str:
    return f"getting worse: lag {count(before)} -> {count(now)} since the action and still rising"


def verify_worse_severity(before: str, now: str, lag: int | None) -> str:
    return f"getting worse: severity {before} -> {now} since the action (lag {count(lag)})"


def verify_improving(drain_rate: float | None, eta: float | None, before: int, now: int) -> str:
    lag = f"lag {count(before)} -> {count(now)}"
    if drain_rate is None:
        return f"draining: {lag}"
    return f"draining at {rate(drain_rate)}, ETA {duration(eta)} ({lag})"


def verify_fell_not_draining(before: int, now: int, trend: str) -> str:
    return f"lag {count(before)} -> {count(now)} since the peak, but {trend} at the latest check: no ETA yet"


def verify_no_change(checks: int, before: int | None, now: int) -> str:
    return f"no improvement after {checks} checks (lag {count(before)} -> {count(now)})"


MAX_SUMMARY = 75
"""A plan's summary is a button label: Slack's limit."""


def button(text: str) -> str:
    return text if len(text) <= MAX_SUMMARY else text[: MAX_SUMMARY - 1] + "…"


def preflight_failed(check: str, problem: str) -> str:
    return f"pre-flight check failed, nothing changed: {check}: {problem}"


def no_executor(action: str) -> str:
    return f"{action}: no executor is configured for this group's workload"


def no_admin() -> str:
    return "no Kafka admin client for the group's cluster"


def group_is(state: str) -> str:
    return f"the group is {state}"


def members_left(member_ids: Sequence[str]) -> str:
    return f"member(s) {', '.join(member_ids)} left the group since the proposal"


def doing_describe(group: str) -> str:
    return f"describing group {group!r}"


def doing_fetch_offsets(group: str) -> str:
    return f"fetching the committed offsets of group {group!r}"


def doing_list_offsets(topic: str, partition: int) -> str:
    return f"listing offsets of {topic}-{partition}"


def doing_alter_offsets(group: str) -> str:
    return f"altering the committed offsets of group {group!r}"


def broker_refused_active_group(group: str) -> str:
    return (
        f"the broker refused to alter the committed offsets of group {group!r}: the group has live consumers "
        "now (one joined after lagbot found it Empty)"
    )


def kafka_action_failed(doing: str, problem: str) -> str:
    return f"{doing} failed: {problem}"


def kafka_action_unknown(doing: str, problem: str) -> str:
    return f"{doing} got no answer ({problem}): the broker may or may not have stored the offsets"


def restored(name: str, ok: bool, detail: str) -> str:
    if ok:
        return f"What {name} left to undo is undone: {detail}"
    return f"Undoing what {name} left to undo failed: {detail}"


def registry_malformed(name: str, problem: str) -> str:
    return f"remediation {name!r} cannot be registered: {problem}"


def registry_bad_name(name: object) -> str:
    return f"its name {name!r} is not a lowercase word of letters, digits and underscores (at most 32)"


def registry_no_risk() -> str:
    return "it has no Risk"


def registry_no_params() -> str:
    return "its Params is not a pydantic model"


def registry_params_not_strict(model: str) -> str:
    return f"its Params model {model} must forbid unknown fields (extra='forbid')"


def registry_twice(name: str) -> str:
    return f"a remediation named {name!r} is already registered"


def registry_not_its_package(package: str) -> str:
    return f"lagbot.remediations.{package}.remediation has no REMEDIATION named {package!r}"


def answers_malformed(package: str) -> str:
    return (
        f"lagbot.remediations.{package}.answers: ADDRESSES must be a frozenset of CauseKind and `answers`, if given, "
        "a function of the cause"
    )


def registry_unknown(name: str, known: Sequence[str]) -> str:
    return f"no remediation named {name!r}; registered: {', '.join(known) or 'none'}"


def params_error(name: str, field: str, problem: str) -> str:
    return f"{name}: {field or '(parameters)'}: {problem}"
