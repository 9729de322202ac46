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


def verify_no_change(checks: int, before: int | None, now: int) -> str:
    return f"no improvement after {checks} checks (lag {count(before)} -> {count(now)})"


MAX_SUMMARY = 75
"""A plan's summary is a button label: Slack's limit."""


def _button(text: str) -> str:
    return text if len(text) <= MAX_SUMMARY else text[: MAX_SUMMARY - 1] + "…"


def preflight_failed(check: str, problem: str) -> str:
    return f"pre-flight check failed, nothing changed: {check}: {problem}"


def preflight_not_rebalancing() -> str:
    return "the group is not rebalancing"


def preflight_members_present() -> str:
    return "each member to restart is still in the group"


def preflight_inactive() -> str:
    return "the group is Empty (no live consumers)"


def preflight_not_at_target(target: int) -> str:
    return f"the workload has not reached {target} replicas meanwhile"


def preflight_can_pause_keda() -> str:
    return "the executor can pause the KEDA ScaledObject"


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


def restart_owners_unknown(group: str) -> str:
    return (
        f"cannot restart the owners of {group}'s stalled partitions: they are not known (no stalled partition, "
        "or the group reports no members); restart the whole workload instead"
    )


def restart_why_rolling(asked: bool, any_stalled: bool) -> str:
    if asked:
        return "as asked"
    if not any_stalled:
        return "no partition is stalled, so no one member is to blame"
    return "the owners of the stalled partitions are not known (the group reports no members)"


def restart_summary_rolling(workload: str) -> str:
    return _button(f"Rolling restart of {workload}")


def restart_summary_members(members: int, group: str) -> str:
    return _button(f"Restart {members} stuck consumer{'s' if members > 1 else ''} of {group}")


def restart_step_rolling(workload: str, why: str) -> str:
    return f"rolling restart of {workload}: {why}"


def restart_step_member(client_id: str, host: str, member_id: str, partitions: Sequence[str]) -> str:
    return f"restart {client_id}@{host} (member {member_id}), owner of stalled {', '.join(partitions)}"


def restart_progress_rolling(workload: str) -> str:
    return f"rolling restart of {workload} ..."


def restart_progress_member(client_id: str, host: str) -> str:
    return f"restarting {client_id}@{host} ..."


def restart_member_failed(member_id: str, detail: str) -> str:
    return f"restarting member {member_id} failed: {detail}"


def restart_done(members: int) -> str:
    return f"restarted {members} member(s); their partitions are being reassigned"


def scale_outside_limits(replicas: int, low: int, high: int) -> str:
    return f"{replicas} replicas is outside the policy's limits ({low} to {high})"


def scale_cannot_size(group: str) -> str:
    return f"cannot size {group}: its produce and consume rates are not known yet; give an explicit replica count"


def scale_down_without_members(group: str, replicas: int, target: int) -> str:
    return (
        f"not scaling down from {replicas} to {target}: {group} has no members, so its rates say nothing about the "
        "workload's consumers (anyone can make such a group by committing an offset); give an explicit replica count"
    )


def scale_nothing_to_do(workload: str, replicas: int) -> str:
    return f"{workload} already runs {replicas} replicas, the count that fits the rates and the policy's limits"


def scale_summary(workload: str, current: int, target: int) -> str:
    return _button(f"Scale {workload} {current} -> {target}")


def scale_step(workload: str, current: int, target: int) -> str:
    return f"scale {workload} from {current} to {target} replicas"


def scale_step_keda_pause(scaled_object: str, annotation: str, target: int) -> str:
    return f"pause KEDA ScaledObject {scaled_object} at {target} replicas ({annotation}={target}) so it keeps them"


def scale_step_keda_restore(scaled_object: str, hold_for: float) -> str:
    return f"after {duration(hold_for)}: restore {scaled_object}'s annotation as it was, so KEDA scales again"


def scale_progress_keda(scaled_object: str, target: int) -> str:
    return f"pausing KEDA ScaledObject {scaled_object} at {target} replicas ..."


def scale_progress(workload: str, target: int) -> str:
    return f"scaling {workload} to {target} replicas ..."


def scale_already(workload: str, replicas: int) -> str:
    return f"{workload} runs {replicas} replicas now"


def scale_nothing_to_restore(workload: str) -> str:
    return f"{workload} is not managed by KEDA: nothing to restore"


def executor_cannot_pause_keda(executor: str) -> str:
    return f"the {executor} executor cannot pause a KEDA ScaledObject; a plain scale would be undone by KEDA"


def reset_needs(field: str, mode: str) -> str:
    wanted = {"shift": "shift", "to_datetime": "datetime"}[field]
    return f"{field!r} is required with mode {wanted!r} and not allowed otherwise (mode is {mode!r})"


def reset_zero_shift() -> str:
    return "a shift of 0 changes nothing"


def reset_shift_no_commit(topic: str, partition: int) -> str:
    return f"cannot shift {topic}-{partition}: the group has no committed offset there"


def reset_time_unresolved(topic: str, partition: int) -> str:
    return f"the offset of {topic}-{partition} for the chosen time was not looked up (resolve_times)"


def reset_no_partitions(group: str, topics: Sequence[str]) -> str:
    which = f" of topics {', '.join(topics)}" if topics else ""
    return f"{group} has no partitions{which} to reset"


def reset_nothing_to_do(group: str) -> str:
    return f"every partition of {group} is already where the reset would put it"


def reset_how(mode: str, shift: int | None, when: object | None) -> str:
    if mode == "shift":
        return f"by {shift:+d}"
    if mode == "datetime":
        return f"to {when}"
    return f"to {mode}"


def reset_summary(group: str, how: str) -> str:
    return _button(f"Reset offsets of {group} {how}")


def reset_step_check() -> str:
    return "check the group is Empty right before resetting (its consumers must be stopped)"


def reset_step_alter(partitions: int, how: str, skipped: int, reread: int) -> str:
    return (
        f"reset {partitions} partition(s) {how}: {count(skipped)} messages skipped, {count(reread)} read again "
        "(targets recomputed from the offsets at that moment)"
    )


def reset_step_read_back() -> str:
    return "read the committed offsets back and compare"


def reset_confirm(group: str, how: str, skipped: int, unknown: int, reread: int) -> str:
    if not skipped and not unknown:
        return (
            f"Re-processing: resetting {group} {how} makes this group process {count(reread)} messages again; "
            "downstream may see duplicates. This cannot be undone."
        )
    text = f"Data loss: resetting {group} {how} skips {count(skipped)} messages; this group will never process them."
    if unknown:
        text += f" {unknown} partition(s) had no committed offset: more may be skipped."
    if reread:
        text += f" {count(reread)} messages will be processed again."
    return text + " This cannot be undone."


def reset_group_active(state: str) -> str:
    return f"the group is {state}: stop its consumers first (offsets are only reset on an Empty group)"


def reset_progress(group: str, partitions: int) -> str:
    return f"resetting {partitions} partition(s) of {group} ..."


def reset_read_back_differs(partitions: Sequence[str], unanswered: str | None = None) -> str:
    differs = f"the committed offsets read back differ from the targets on {', '.join(partitions)}"
    return differs if unanswered is None else f"{unanswered}; {differs}"


def reset_refused_by_broker(refusal: str, moved: Sequence[str]) -> str:
    if not moved:
        return f"{refusal}; nothing changed (offsets read back as before): stop its consumers, then propose again"
    return f"{refusal}; the committed offsets read back differ from before on {', '.join(moved)}: check them"


def reset_done(group: str, partitions: int, skipped: int, reread: int) -> str:
    return f"reset {partitions} partition(s) of {group}: {count(skipped)} messages skipped, {count(reread)} to re-read"


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


def registry_unknown(name: str, known: Sequence[str]) -> str:
    return f"no remediation named {name!r}; registered: {', '.join(known) or 'none'}"


def params_error(name: str, field: str, problem: str) -> str:
    return f"{name}: {field or '(parameters)'}: {problem}"


# -- what a policy rule sets for a remediation (its Policy model, `lagbot policy explain`) --------------------


def policy_reset_needs_two() -> str:
    return "reset_offsets loses data: it needs 2 approvals, by two different people"


def policy_no_modes() -> str:
    return "at least one mode is needed (latest, earliest, shift, datetime); to forbid resets, remove reset_offsets"


def policy_mode_not_allowed(rule: str, mode: str, modes: Sequence[str]) -> str:
    return f"rule {rule!r} does not allow resetting offsets {mode!r}; allowed: {', '.join(modes)}"


def explain_replicas(low: int, high: int, keda_hold: float | None) -> str:
    text = f"replicas {low} to {high} (and at most one per partition)"
    return text + (f", KEDA paused for {duration(keda_hold)} then restored" if keda_hold is not None else "")


def explain_modes(modes: Sequence[str]) -> str:
    return f"modes {', '.join(modes)}, only while the group is Empty"


def explain_scope(scope: str) -> str:
    return {
        "auto": "the stuck member, else a rolling restart",
        "members": "only the stuck members",
        "workload": "always a rolling restart",
    }[scope]
