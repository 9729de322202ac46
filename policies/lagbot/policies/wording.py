"""The wording for policy authors: every problem of a policy file, named; `lagbot policy explain`.

Tiny functions, one per message (see lagbot.core.messages for the shared ones and the number formats).
"""

from __future__ import annotations

from collections.abc import Sequence

from lagbot.core.messages import count, duration


def policy_bad_user_id(user: str) -> str:
    return f"{user!r} is not a Slack user id (U... or W...); find it in the user's profile, 'Copy member ID'"


def policy_bad_usergroup_id(group: str) -> str:
    return f"{group!r} is not a Slack user group id (S...); a handle like @oncall is not an id"


def policy_bad_channel(channel: str) -> str:
    return f"{channel!r} is not a Slack channel: use #name (lowercase) or a channel id (C...)"


def policy_auto_approve_risky(action: str, risk: str | None) -> str:
    what = f"{risk} risk" if risk else "of unknown risk (not registered)"
    return f"auto_approve is only allowed for low-risk remediations; {action} is {what}"


def policy_bad_clock(value: str) -> str:
    return f"{value!r} is not a time of day: use HH:MM, 24-hour (00:00 to 24:00)"


def policy_bad_timezone(name: str) -> str:
    return f"{name!r} is not an IANA time zone name (like Europe/Paris, America/New_York, UTC)"


def policy_no_days() -> str:
    return "a maintenance window needs at least one day"


def policy_empty_window(clock: str) -> str:
    return f"start and end are both {clock}: for a whole day use 00:00 to 24:00"


def policy_duplicate_rule(name: str, first: int, again: int) -> str:
    return f"rule names must be unique: {name!r} is used by rules[{first}] and rules[{again}]"


def policy_no_workload(rule: str, action: str) -> str:
    return f"rule {rule!r} names no workload, so {action} has nothing to act on"


def policy_rule_location(index: int, name: str | None) -> str:
    return f"rules[{index}]" + (f" (name {name!r})" if name is not None else "")


def policy_error(source: str, where: str | None, field: str, problem: str, value: object) -> str:
    shown = "" if isinstance(value, dict | list | tuple) or value is None else f" (got {value!r})"
    parts = [source, *([where] if where else []), field or ("(the rule itself)" if where else "(top level)")]
    return f"{': '.join(parts)}: {problem}{shown}"


def usergroup_lookup_failed(usergroup: str, problem: str) -> str:
    return f"cannot tell who may approve: looking up the members of Slack user group {usergroup} failed: {problem}"


def policy_valid(path: str, rules: int) -> str:
    return f"{path}: valid: {rules} rules (and the default)"


def explain_rule(cluster: str, group: str, rule: str, index: int, cluster_re: str, group_re: str) -> str:
    return f"{group} on {cluster}: rule {rule!r} (rules[{index}], match cluster {cluster_re!r}, group {group_re!r})"


def explain_default(cluster: str, group: str, rule: str, rules: int) -> str:
    return f"{group} on {cluster}: the default rule {rule!r} (none of the {rules} rules matches)"


def explain_field(name: str, value: str) -> str:
    return f"{name}: {value}".rstrip()


def explain_item(name: str, value: str) -> str:
    return f"  {name}: {value}"


def explain_no_channel() -> str:
    return "none (alerts go to the bot's default channel)"


def explain_thresholds_from_config() -> str:
    return "those of lagbot's configuration (the rule sets none)"


def explain_over_messages(limit: int) -> str:
    return f"lag > {count(limit)} messages"


def explain_over_seconds(limit: float) -> str:
    return f"lag > {duration(limit)}"


def explain_and_growing() -> str:
    return " and growing"


def explain_sustained(held: float) -> str:
    return f" for {duration(held)}"


def explain_doubling(within: float, min_lag: int) -> str:
    return f"lag doubled within {duration(within)} (above {count(min_lag)})"


def explain_nobody_can_approve() -> str:
    return "NONE configured: nobody can approve any remediation until approvers (users or usergroups) are set"


def explain_approvers(users: Sequence[str], usergroups: Sequence[str]) -> str:
    parts = []
    if users:
        parts.append(f"users {', '.join(users)}")
    if usergroups:
        parts.append(f"members of user groups {', '.join(usergroups)} (looked up in Slack, cached)")
    return "; ".join(parts)


def explain_no_workload(needing: Sequence[str]) -> str:
    """`needing`: the remediations that act on a workload."""
    return f"none: {' and '.join(needing)} {'has' if len(needing) == 1 else 'have'} nothing to act on"


def explain_workload(executor: str, kind: str, namespace: str, name: str, keda: str | None) -> str:
    text = (
        f"{executor} executor, {kind} {namespace}/{name}"
        if executor == "kubernetes"
        else f"{executor} executor, {name}"
    )
    return text + (f", autoscaled by KEDA ScaledObject {keda} (paused while scaled)" if keda else "")


def explain_not_allowed() -> str:
    return "not allowed"


def explain_risk(risk: str | None) -> str:
    return f"allowed ({risk or 'unknown'} risk)"


def explain_approvals(n: int) -> str:
    return "1 approval" if n == 1 else f"{n} approvals (two different people)"


def explain_auto_approve(auto: bool) -> str:
    return "auto-approved outside maintenance windows" if auto else "no auto-approve"


def explain_cooldown(seconds: float) -> str:
    return f"cooldown {duration(seconds)}"


def explain_expiry(seconds: float) -> str:
    return f"proposals expire after {duration(seconds)}"


def explain_needs_workload() -> str:
    return "NOT offered: the rule names no workload"


def explain_no_maintenance() -> str:
    return "none"


def explain_in_maintenance(now: bool) -> str:
    return "no automatic actions during these windows; " + ("IN ONE NOW" if now else "not in one now")


def explain_window(days: Sequence[str], start: str, end: str, timezone: str, reason: str) -> str:
    text = f"{','.join(days)} {start}-{end} {timezone}"
    return text + (f" ({reason})" if reason else "")


def explain_dry_run(on: bool) -> str:
    return "ON: plans are shown, nothing is executed" if on else "off"


def explain_verification(checks: int) -> str:
    return f"'no improvement' after {checks} checks without lag falling, 'worse' escalates at once"


def approver_mentions(users: Sequence[str], usergroups: Sequence[str]) -> str:
    """Slack mentions of a rule's approvers, for escalations: '<@U1> <!subteam^S1>'; '' when there are none."""
    return " ".join([*(f"<@{u}>" for u in users), *(f"<!subteam^{g}>" for g in usergroups)])


def explain_silencers_are_approvers() -> str:
    return "the approvers (no silencers named)"


def explain_nobody_can_silence() -> str:
    return "nobody: no one can /lag silence these groups"
