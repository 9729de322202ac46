"""The words of `/lag`: each subcommand's usage and summary, the parser's refusals, the answers (a group, the top
groups, silences, audit, report, history, thresholds), the command guard's refusals and the replay check
(lagbot.slack.command_parse, commands, subcommands, guard, replies, replay).
"""

from __future__ import annotations

from collections.abc import Sequence

from lagbot.core.messages import (
    behind,
    count,
    duration,
    slack_escape,
    slack_name,
    slack_reason,
    slack_user,
    status_word,
)
from lagbot.core.model import GroupSummary
from lagbot.slack.wording.incidents import slack_time


def lag_usage_show() -> str:
    return "/lag <group> [cluster] [--here]"


def lag_usage_top() -> str:
    return "/lag top [n] [--here]"


def lag_usage_silence() -> str:
    return "/lag silence <group> <duration> [--cluster NAME] [reason]"


def lag_usage_unsilence() -> str:
    return "/lag unsilence <group> [--cluster NAME]"


def lag_usage_digest() -> str:
    return "/lag digest"


def lag_usage_help() -> str:
    return "/lag help"


def lag_usage_audit() -> str:
    return "/lag audit <group> [--cluster NAME]"


def lag_usage_remediate() -> str:
    return "/lag remediate <group> <action> [args] [--cluster NAME]"


def lag_summary_show() -> str:
    return "a fresh check of one group: headline, per-partition table, likely causes (`--here` posts it in the channel)"


def lag_summary_top(default: int, most: int) -> str:
    return (
        f"the worst groups of the last scheduled check, by severity then lag in seconds "
        f"({default} by default, at most {most})"
    )


def lag_summary_silence(shortest: float, longest: float) -> str:
    return (
        f"no new incidents for the group until the silence expires "
        f"({duration(shortest)} to {duration(longest)}: 30m, 2h, 1d)"
    )


def lag_summary_unsilence() -> str:
    return "lift a silence before it expires"


def lag_summary_digest() -> str:
    return "the digest now: in this channel where a digest is configured, else to you alone"


def lag_summary_help() -> str:
    return "this list"


def lag_summary_audit() -> str:
    return "what was done to the group and by whom"


def lag_summary_remediate() -> str:
    return "propose a remediation for the group, for an approver to approve (approvers only)"


def lag_help_title() -> str:
    return "*`/lag` commands* (a group named like a command: `/lag show <group>`)"


def lag_help_line(usage: str, summary: str) -> str:
    return f"`{usage}`: {summary}"


def lag_error(problem: str, usage: str | None) -> str:
    """What a user sees for bad input: the problem, then the usage line of the command they meant."""
    if usage is None:
        return f"{problem}\n`/lag help` lists every command."
    return f"{problem}\nUsage: `{usage}` (`/lag help` lists every command)"


def lag_missing(what: str) -> str:
    return f"missing {what}"


def lag_unexpected(token: str) -> str:
    return f"unexpected {slack_escape(token)!r}"


def lag_unknown_option(option: str, allowed: Sequence[str]) -> str:
    known = f"options here: {', '.join(allowed)}" if allowed else "this command takes no options"
    return f"unknown option {slack_escape(option)!r}; {known}"


def lag_option_needs_value(option: str) -> str:
    return f"{option} needs a value, e.g. {option} prod"


def lag_flag_takes_no_value(option: str) -> str:
    return f"{option} takes no value"


def lag_option_twice(option: str) -> str:
    return f"{option} is given twice"


def lag_cluster_twice(positional: str, option: str) -> str:
    return f"two clusters given: {slack_escape(positional)!r} and --cluster {slack_escape(option)!r}"


def lag_top_not_a_number(value: str) -> str:
    return f"{slack_escape(value)!r} is not a number of groups"


def lag_top_out_of_range(n: int, least: int, most: int) -> str:
    return f"top shows {least} to {most} groups, not {n}"


def lag_duration_out_of_range(value: str, seconds: float, shortest: float, longest: float) -> str:
    return (
        f"a silence lasts {duration(shortest)} to {duration(longest)}; {slack_escape(value)!r} is {duration(seconds)}"
    )


def lag_reason_too_long(length: int, most: int) -> str:
    return f"the reason is {length:,} characters; at most {most:,}"


def lag_did_you_mean(close: Sequence[str]) -> str:
    if not close:
        return ""
    return "; did you mean " + " or ".join(f"`{slack_escape(c)}`" for c in close) + "?"


def lag_closest(close: Sequence[str]) -> str:
    if not close:
        return "; nothing with a similar name"
    return "; closest: " + ", ".join(f"`{slack_escape(c)}`" for c in close)


def lag_no_groups_known() -> str:
    return "no consumer groups are known yet: the first scheduled check has not finished"


def lag_unknown_cluster(name: str, known: Sequence[str], close: Sequence[str]) -> str:
    listed = ", ".join(f"`{slack_escape(c)}`" for c in known) or "none"
    return f"no cluster named `{slack_escape(name)}` (clusters: {listed})" + lag_did_you_mean(close)


def lag_unknown_group(name: str, cluster: str | None, close: Sequence[str]) -> str:
    where = f"on cluster `{slack_escape(cluster)}`" if cluster is not None else "on any cluster"
    return f"no consumer group `{slack_escape(name)}` {where}" + lag_closest(close)


def lag_group_elsewhere(name: str, cluster: str, elsewhere: Sequence[str]) -> str:
    on = ", ".join(f"`{slack_escape(c)}`" for c in elsewhere)
    return f"no consumer group `{slack_escape(name)}` on cluster `{slack_escape(cluster)}`; it is on {on}"


def lag_group_ambiguous(name: str, clusters: Sequence[str]) -> str:
    on = ", ".join(f"`{slack_escape(c)}`" for c in clusters)
    return f"`{slack_escape(name)}` is a group on {len(clusters)} clusters ({on}): name the cluster"


def lag_command_hint(command: str) -> str:
    return f" (or did you mean `/lag {command}`?)"


def lag_silenced_context(by: str, until: float, reason: str, now: float) -> str:
    why = f": {slack_reason(reason)}" if reason else ""
    left = duration(until - now)
    return f":no_bell: silenced by {slack_user(by)} until {slack_time(until)} ({left} left){why}; no new incidents open"


def lag_group_fallback(root: str, table: str) -> str:
    return f"{root}\n{table}"


def lag_top_title(shown: int, total: int) -> str:
    return f"*Worst {shown} of {total} group(s)* at the last scheduled check, by severity then lag in seconds"


def lag_top_columns() -> list[str]:
    return ["group", "cluster", "severity", "status", "lag", "behind", "trend", "silenced"]


def lag_top_silenced_cell(remaining: float) -> str:
    return f"{duration(remaining)} left"


def lag_top_line(rank: int, v: GroupSummary) -> str:
    return (
        f"{rank}. {v.severity.label.upper()} {slack_name(v.group)} ({slack_name(v.cluster)}): {status_word(v)}, "
        f"lag {count(v.total_lag)}, {behind(v.max_lag_seconds)} behind"
    )


def lag_top_empty() -> str:
    return "No groups checked yet: the first scheduled check has not finished."


def lag_silenced(group: str, cluster: str, by: str, until: float, seconds: float, reason: str) -> str:
    why = f" Reason: {slack_reason(reason)}" if reason else " No reason given."
    return (
        f":no_bell: {slack_user(by)} silenced `{slack_escape(group)}` on {slack_escape(cluster)} "
        f"for {duration(seconds)}, "
        f"until {slack_time(until)}: no new incidents open for it until then.{why}"
    )


def lag_unsilenced(group: str, cluster: str, by: str) -> str:
    return (
        f":bell: {slack_user(by)} lifted the silence of `{slack_escape(group)}` on {slack_escape(cluster)}: "
        "incidents open again."
    )


def lag_not_silenced(group: str, cluster: str) -> str:
    return f"`{slack_escape(group)}` on {slack_escape(cluster)} is not silenced: nothing to lift."


def lag_digest_posting(channel: str) -> str:
    if channel[:1] in ("U", "W"):  # not a channel: the caller (see lagbot.slack.guard)
        return digest_to_caller()
    return f"Posting the digest in <#{slack_escape(channel)}>."


def lag_not_available(command: str) -> str:
    return f"`/lag {command}` is not available yet in this lagbot."


def lag_failed(error_id: str) -> str:
    return f"Something went wrong with this command; it is logged as `{error_id}`."


def lag_failed_log() -> str:
    return "slash command failed"


def audit_empty(group: str) -> str:
    return f"Nothing in the audit trail for `{slack_escape(group)}` yet."


def remediate_usage(action: str, args_usage: str) -> str:
    """`args_usage`: what the remediation takes after its name (its `args_usage`; empty: nothing)."""
    return f"Usage: `/lag remediate <group> {slack_escape(action)}{' ' + args_usage if args_usage else ''}`"


def command_rate_limited(scope: str, retry_in: float) -> str:
    who = "You have" if scope == "user" else "This channel has"
    return (
        f":hourglass: {who} sent a lot of `/lag` commands in a short time; "
        f"please try again in {duration(max(retry_in, 1.0))}."
    )


def command_not_allowed(what: str, rule: str, group: str) -> str:
    return (
        f":no_entry: You may not {what} `{slack_escape(group)}`: policy rule `{slack_escape(rule)}` "
        "does not list you. Nothing was changed; this refusal is in the audit trail."
    )


def command_cannot_check(what: str, problem: str) -> str:
    return f"Cannot check who may {what} right now ({slack_escape(problem)}); nothing was changed. Try again soon."


def digest_to_caller() -> str:
    return (
        "This channel gets no digest from lagbot, so the digest is sent to you in a direct message "
        "(`/lag digest` posts in a channel only where a digest is configured)."
    )


def replay_refused() -> str:
    return "this request was already received (a replay): refused\n"


def replay_check_failed() -> str:
    return "cannot check this request for replays right now: try again\n"


def lag_usage_report() -> str:
    return "/lag report [days] [--here]"


def lag_summary_report() -> str:
    return "repeat offenders: per group, incidents, time in trouble, time to resolve, causes, what fixed it"


def lag_usage_history() -> str:
    return "/lag history <group> [days] [--cluster NAME] [--here]"


def lag_summary_history() -> str:
    return "a group's days: peak lag, time in trouble, incidents, and its recurring patterns"


def lag_usage_thresholds() -> str:
    return "/lag thresholds <group> [days] [--cluster NAME]"


def lag_summary_thresholds() -> str:
    return "thresholds proposed from the group's own history, backtested (approvers only; changes nothing)"


def lag_days_out_of_range(value: str, low: int, high: int) -> str:
    return f"`{slack_escape(value)}` is not a number of days from {low} to {high}"


def lag_thresholds_not_approver(group: str) -> str:
    return f"Only an approver of `{slack_escape(group)}` (its policy rule) may ask for its thresholds."
