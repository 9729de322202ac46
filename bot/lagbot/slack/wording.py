"""The wording of Slack messages: incident roots and replies, proposals, /lag replies, digests.

Tiny functions, one per message (see lagbot.core.messages for the shared ones and the number formats).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, tzinfo

from lagbot.core.messages import (
    behind,
    clock,
    count,
    duration,
    eta_text,
    percent,
    slack_escape,
    slack_name,
    slack_reason,
    slack_text,
    slack_user,
    status_word,
)
from lagbot.core.model import Cause, GroupSummary, GroupVerdict, PartitionVerdict, Trend

SEVERITY_EMOJI = {"ok": ":large_green_circle:", "warn": ":large_yellow_circle:", "critical": ":red_circle:",
                  "page": ":rotating_light:"}  # fmt: skip


TREND_ARROW = {Trend.GROWING: "↗", Trend.SHRINKING: "↘", Trend.STEADY: "→", Trend.UNKNOWN: "?"}


def slack_headline(v: GroupVerdict) -> str:
    lag_s = behind(v.max_lag_seconds)
    return (
        f"{SEVERITY_EMOJI[v.severity.label]} *{v.severity.label.upper()}* `{slack_escape(v.group)}` "
        f"on {slack_escape(v.cluster)}: *{status_word(v)}*, lag *{count(v.total_lag)}* ({lag_s} behind) "
        f"{TREND_ARROW.get(v.trend, '?')} {v.trend}, ETA {eta_text(v.eta_seconds, v.consume_rate, v.total_lag)}"
    )


def slack_root_context(v: GroupVerdict, worst: PartitionVerdict | None) -> str:
    parts = [f"state {v.state.value}", slack_escape(v.severity_reason)]
    if worst is not None and worst.lag:
        where = f"{slack_escape(worst.topic)}/{worst.partition}"
        parts.append(f"worst: {where} lag {count(worst.lag)} ({worst.status.name})")
    return " · ".join(parts)


def slack_root_fallback(v: GroupVerdict) -> str:
    where = f"{slack_name(v.group)} on {slack_name(v.cluster)}"
    return f"{v.severity.label.upper()} {where}: {status_word(v)}, lag {count(v.total_lag)}"


def slack_table_title(v: GroupVerdict) -> str:
    return f"*Partitions of* `{slack_escape(v.group)}` ({len(v.partitions)}), lagging first"


def slack_table_summary_row(partitions: int, lag: int, columns: int) -> list[str]:
    return [f"… {partitions} more", "", "", str(lag), "", "", ""][:columns]


def slack_cause(c: Cause, remedy: str | None) -> str:
    action = f" → _{remedy}_" if remedy else ""
    return f"*{c.rank}. {c.kind}* ({percent(c.confidence)}): {slack_escape(c.explanation)}{action}"


def slack_more_causes(n: int) -> str:
    return f"… and {n} more likely cause(s): `/lag <group>` shows them all"


def slack_no_causes() -> str:
    return "No likely cause stands out yet."


def slack_thread_fallback(v: GroupVerdict, table: str) -> str:
    return f"Partitions of {slack_name(v.group)}:\n{table}"


RESOLVED_EMOJI = ":large_green_circle:"


def incident_open_context(opened_for: float, peak_lag: int | None, reopened: int) -> str:
    again = f" · reopened {reopened}x" if reopened else ""
    return f"open for {duration(opened_for)} · peak lag {count(peak_lag)}{again}"


def incident_recovering(below_for: float, resolve_after: float) -> str:
    return f"recovering: below threshold for {duration(below_for)} (resolves after {duration(resolve_after)})"


def incident_resolved_headline(
    group: str, cluster: str, lasted: float, peak_lag: int | None, peak: str, lag_then: int | None
) -> str:
    """`lag_then`: the lag of the check that resolved it (None: unknown, a group that is gone: not said)."""
    then = "" if lag_then is None else f"; lag {count(lag_then)} when resolved"
    return (
        f"{RESOLVED_EMOJI} *RESOLVED* `{slack_escape(group)}` on {slack_escape(cluster)}: "
        f"resolved after {duration(lasted)}, peak {count(peak_lag)} ({peak.upper()}){then}"
    )


def incident_resolved_reply(lasted: float, peak_lag: int | None, lag_now: int | None) -> str:
    return f"{RESOLVED_EMOJI} Resolved after {duration(lasted)}, peak {count(peak_lag)}; lag now {count(lag_now)}."


def incident_reopened_reply(v: GroupVerdict) -> str:
    return f":repeat: Back in trouble: {slack_headline(v)}"


def incident_severity_reply(before: str, v: GroupVerdict) -> str:
    word = "up" if v.severity.label != before and _rank(v.severity.label) > _rank(before) else "down"
    arrow = ":arrow_up:" if word == "up" else ":arrow_down:"
    return (
        f"{arrow} Severity {word}: {before.upper()} → *{v.severity.label.upper()}* · lag {count(v.total_lag)} · "
        f"{slack_escape(v.severity_reason)}"
    )


def _rank(label: str) -> int:
    return ["ok", "warn", "critical", "page"].index(label)


def incident_new_cause_reply(before: str, c: Cause, remedy: str | None) -> str:
    was = f" (was {before})" if before else ""
    return f":mag: New likely cause{was}: {slack_cause(c, remedy)}"


def incident_remediation_line(action: str, state: str, detail: str) -> str:
    return f"remediation *{slack_escape(action)}*: {state}" + (f" · {slack_text(detail)}" if detail else "")


def slack_time(epoch: float) -> str:
    """A time Slack shows in each reader's own time zone, with a UTC fallback for old clients."""
    import time

    fallback = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(epoch))
    return f"<!date^{int(epoch)}^{{date_short_pretty}} {{time}}|{fallback}>"


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


DIGEST_STATUS_ORDER = ("ERR", "STOP", "REWIND", "STALL", "WARN", "OK")
"""Worst first: the order of the status counts in a digest."""


def digest_header(now: float, tz: tzinfo, period: float) -> str:
    return f"Kafka lag digest · last {duration(period)} · {datetime.fromtimestamp(now, tz).strftime('%a %d %b %H:%M')}"


def digest_status_counts(counts: Sequence[tuple[str, int]], total: int) -> str:
    if total == 0:
        return "No consumer group is routed to this channel."
    shown = " · ".join(f"{n:,} {status}" for status, n in counts if n)
    return f"*{total:,} group{'s' if total != 1 else ''}*: {shown}"


def digest_worst_title(shown: int) -> str:
    return f"*Worst {shown} by lag in seconds*, against 24 h before"


def digest_no_lag() -> str:
    return "No group is behind."


def digest_worst_line(
    rank: int, v: GroupVerdict, before_seconds: float | None, before_lag: int | None, trend: Trend | None
) -> str:
    if v.max_lag_seconds is not None:
        now = f"*{behind(v.max_lag_seconds)}* behind, lag {count(v.total_lag)}"
    else:
        now = f"lag *{count(v.total_lag)}*, time behind unknown"
    line = f"{rank}. `{slack_escape(v.group)}` on {slack_escape(v.cluster)}: {now} ({v.status.name})"
    if trend is None:
        return f"{line} · no data 24 h ago"
    then = f"lag {count(before_lag)}"
    if before_seconds is not None:
        then = f"{behind(before_seconds)} behind, {then}"
    return f"{line} · {TREND_ARROW[trend]} vs 24 h ago: {then}"


def digest_incidents_title(period: float, opened: int, resolved: int, still_open: int) -> str:
    return f"*Incidents*, last {duration(period)}: {opened:,} opened, {resolved:,} resolved, {still_open:,} still open"


def digest_incident_line(
    cluster: str, group: str, severity: str, opened_at: float, resolved_at: float | None, peak_lag: int | None,
    now: float, tz: tzinfo,
) -> str:  # fmt: skip
    emoji = SEVERITY_EMOJI.get(severity.lower(), ":white_circle:")
    line = f"{emoji} `{slack_escape(group)}` on {slack_escape(cluster)} ({slack_escape(severity.lower())}) · "
    line += f"opened {clock(opened_at, tz)} · "
    if resolved_at is None:
        line += f"*still open* after {duration(now - opened_at)}"
    else:
        line += f"resolved {clock(resolved_at, tz)} after {duration(resolved_at - opened_at)}"
    return line + f" · peak lag {count(peak_lag)}"


def digest_no_incidents() -> str:
    return "No incidents."


def digest_remediations_title(period: float, run: int) -> str:
    return f"*Remediations*, last {duration(period)}: {run:,} run"


def digest_remediation_line(
    cluster: str, group: str, action: str, requested_by: str, approved_by: Sequence[str], at: float, result: str,
    tz: tzinfo,
) -> str:  # fmt: skip
    approval = f"approved by {', '.join(slack_user(a) for a in approved_by)}" if approved_by else "no approval needed"
    return (
        f"{clock(at, tz)} · _{slack_escape(action)}_ on `{slack_escape(group)}` ({slack_escape(cluster)}) · "
        f"requested by {slack_user(requested_by)}, {approval} · {slack_escape(result)}"
    )


def digest_no_remediations() -> str:
    return "No remediations run."


def digest_more(n: int) -> str:
    return f"… and {n:,} more"


def digest_context(now: float, tz: tzinfo, chart: bool) -> str:
    stamp = f"As of {datetime.fromtimestamp(now, tz).strftime('%a %d %b %Y %H:%M')} ({tz})"
    return stamp + (" · the worst groups' lag over 24 h is charted in the thread" if chart else "")


def digest_fallback(period: float, total: int, counts: Sequence[tuple[str, int]], incidents: int, runs: int) -> str:
    troubled = ", ".join(f"{n:,} {status}" for status, n in counts if n and status != "OK")
    groups = f"{total:,} group{'s' if total != 1 else ''}" + (f" ({troubled})" if troubled else "")
    return f"Kafka lag digest, last {duration(period)}: {groups}, {incidents:,} incident(s), {runs:,} remediation(s)"


def digest_chart_alt(labels: Sequence[str]) -> str:
    return "Line chart of consumer lag (messages) over the last 24 h for " + (", ".join(labels) or "no group")


def digest_chart_axes(tz: tzinfo) -> tuple[str, str]:
    """(x label, y label) of the digest chart."""
    return f"time of day ({tz})", "lag (messages)"


def digest_chart_empty() -> str:
    return "no lag history in the last 24 h"


def proposals_title(expires_in: float) -> str:
    return f"*Remediations the policy allows* (proposals expire in {duration(expires_in)}):"


def proposal_line(summary: str, steps: Sequence[str], approvals: int, risk: str) -> str:
    people = "two approvers" if approvals >= 2 else "one approver"
    return f"• *{slack_text(summary)}* ({risk} risk, {people}): " + slack_escape("; ".join(steps))


def proposal_confirm_title() -> str:
    return "Run this remediation?"


def proposal_confirm_text(summary: str, confirm: str | None) -> str:
    return confirm or f"lagbot will {summary[:1].lower()}{summary[1:]}. This is recorded in the audit trail."


def deny_button() -> str:
    return "Deny…"


def deny_modal_title() -> str:
    return "Deny remediation"


def deny_modal_label(summary: str) -> str:
    return f"Why deny “{summary}”?"


def audit_empty(group: str) -> str:
    return f"Nothing in the audit trail for `{slack_escape(group)}` yet."


def click_failed(reference: str) -> str:
    return f":warning: Something went wrong with this click; nothing more was done. It is logged as `{reference}`."


def remediate_usage(action: str, args_usage: str) -> str:
    """`args_usage`: what the remediation takes after its name (its `args_usage`; empty: nothing)."""
    return f"Usage: `/lag remediate <group> {slack_escape(action)}{' ' + args_usage if args_usage else ''}`"


def state_lost() -> str:
    return (
        ":warning: lagbot lost its stored state (Redis came back empty). Incidents still open are reopened "
        "in new threads; earlier threads will not be updated, and remediation history before now is gone."
    )


def command_rate_limited(scope: str, retry_in: float) -> str:
    who = "You have" if scope == "user" else "This channel has"
    return (
        f":hourglass: {who} sent a lot of `/lag` commands in a short time; "
        f"please try again in {duration(max(retry_in, 1.0))}."
    )


def click_rate_limited(retry_in: float) -> str:
    return f":hourglass: You have clicked a lot in a short time; please try again in {duration(max(retry_in, 1.0))}."


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


# --- /lag report, /lag history, /lag thresholds (lagbot.slack.history_replies) ---


def history_chart_x_axis(tz: tzinfo) -> str:
    return f"day ({tz})"


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


def deny_reason_required() -> str:
    return "Say why you deny it: the reason goes to the thread and the audit trail."


# -- incident storms (lagbot.service.storms) ---------------------------------------------------------------------


def storm_headline(folded: int, still_open: int, threshold: int, window: float, ended: bool) -> str:
    open_now = f"*{count(still_open)}* still open" if still_open else "every one resolved"
    if not ended:
        return (
            f":cyclone: *Incident storm*: *{count(folded)}* new incidents in this channel past the limit of "
            f"{count(threshold)} in {duration(window)}, {open_now}. Each is tracked as usual; instead of a thread "
            "each, this one message shows them."
        )
    return (
        f":cyclone: *Incident storm over*: no more than {count(threshold)} new incidents in {duration(window)}. "
        f"*{count(folded)}* incidents were folded here, {open_now}"
        + (": they stay in this summary until they resolve." if still_open else ".")
    )


def storm_fallback(folded: int, still_open: int, ended: bool) -> str:
    state = "over" if ended else "on"
    return (
        f"Incident storm {state}: {count(folded)} new incidents folded into one summary, {count(still_open)} still open"
    )


def storm_member(cluster: str, group: str, severity: str, peak_lag: int | None, is_open: bool) -> str:
    emoji = SEVERITY_EMOJI.get(severity, "") if is_open else SEVERITY_EMOJI["ok"]
    state = f"*{severity.upper()}*" if is_open else "resolved"
    return f"{emoji} {slack_name(group)} on {slack_name(cluster)}: {state}, peak lag {count(peak_lag)}"


def storm_worst_title(shown: int, total: int) -> str:
    return f"*Worst first* ({shown} of {count(total)}):"


def storm_more(n: int) -> str:
    return f"… and {count(n)} more (`/lag top` lists every group in trouble)."


def storm_advice(clusters: Sequence[str], prefix_regex: str) -> str:
    """How to narrow the watch; the example is YAML a user can paste: the regex single-quoted (a backslash is literal
    there, a quote doubled), so `re.escape`'s backslashes parse."""
    where = ", ".join(slack_name(c) for c in clusters) or "the cluster"
    quoted = prefix_regex.replace("'", "''")
    example = f" (for these, e.g. `exclude: ['{slack_escape(quoted)}.*']`)" if prefix_regex else ""
    return (
        f":mag: *Narrow the watch* of {where}: in the configuration, `clusters[].groups.exclude` drops groups by "
        f"regex{example}, or `groups.include` lists only the groups you own (both whole-name matches). "
        "`/lag silence <group>` quiets one group."
    )


def storm_since(started: str) -> str:
    return f"storm since {started} UTC"
