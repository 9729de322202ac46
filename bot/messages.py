"""All user-facing wording: errors, explanations of causes, CLI text.

Tiny functions, one per message, so the voice stays consistent and is changed in one place.
Numbers are formatted here too (`count`, `rate`, `duration`), so a table, a cause and a Slack message
say "4.2 M" the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from bot.model import Cause, GroupVerdict, PartitionVerdict

# ---------------------------------------------------------------------------------------------------
# Number formatting
# ---------------------------------------------------------------------------------------------------


def count(n: int | float | None) -> str:
    """12 -> '12', 12_345 -> '12,345', 4_200_000 -> '4.2 M'; None -> '-'."""
    if n is None:
        return "-"
    if abs(n) >= 1_000_000:
        return f"{n / 1_000_000:.1f} M"
    return f"{round(n):,}"


def rate(per_second: float | None) -> str:
    """Messages per second, rounded for reading: '12,000 msg/s', '3.5 msg/s'; None -> '-'."""
    if per_second is None:
        return "-"
    if abs(per_second) >= 100:
        return f"{round(per_second):,} msg/s"
    return f"{per_second:.1f} msg/s"


def duration(seconds: float | None) -> str:
    """A duration for humans: '45 s', '6 min', '2 h 5 min', '3 d 4 h'; None -> '-'."""
    if seconds is None:
        return "-"
    s = round(seconds)
    if s < 120:
        return f"{s} s"
    minutes = s // 60
    if minutes < 120:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h" if hours else f"{days} d"


def percent(fraction: float) -> str:
    return f"{fraction * 100:.0f}%"


# ---------------------------------------------------------------------------------------------------
# Configuration and usage errors
# ---------------------------------------------------------------------------------------------------


def bad_duration(value: object) -> str:
    return f"{value!r} is not a duration: use seconds (90) or a number with a unit (90s, 5m, 2h, 1d)"


def bad_regex(pattern: str, problem: str) -> str:
    return f"{pattern!r} is not a valid regular expression ({problem})"


def reserved_kafka_key(key: str, field: str) -> str:
    return f"{key!r} cannot be set here: use the field {field!r}"


def level_without_trigger() -> str:
    return "a level needs at least one of 'messages', 'seconds' or 'doubling_within'"


def duplicate_clusters(names: Sequence[str]) -> str:
    return f"cluster names must be unique; repeated: {', '.join(names)}"


def unknown_cluster(name: str, known: Sequence[str]) -> str:
    return f"no cluster named {name!r}; configured: {', '.join(known) or 'none'}"


def config_unreadable(path: Path, problem: str) -> str:
    return f"{path}: cannot read the configuration file: {problem}"


def config_not_yaml(path: Path, problem: str, where: str | None = None) -> str:
    first_line = problem.strip().splitlines()[0] if problem.strip() else problem
    return f"{path}: not valid YAML" + (f" at {where}" if where else "") + f": {first_line}"


def config_not_mapping(path: Path, kind: str) -> str:
    return f"{path}: the configuration must be a mapping of settings, not a {kind}"


def config_field_error(origin: str, path: str, problem: str, value: object) -> str:
    shown = "" if isinstance(value, dict | list) or value is None else f" (got {value!r})"
    return f"{origin}: {path}: {problem}{shown}"


def bad_option(option: str, problem: str) -> str:
    return f"{option}: {problem}"


# ---------------------------------------------------------------------------------------------------
# Collection
# ---------------------------------------------------------------------------------------------------


def cluster_unreachable(cluster: str, doing: str, problem: str) -> str:
    return f"cluster {cluster!r} unreachable while {doing}: {problem}"


def group_unreadable(group: str, doing: str, problem: str) -> str:
    return f"group {group!r}: {doing} failed: {problem}"


def timed_out(seconds: float) -> str:
    return f"no answer within {seconds:g} s"


# ---------------------------------------------------------------------------------------------------
# Partition status reasons (one line each, shown in --json and the tables' footnotes)
# ---------------------------------------------------------------------------------------------------


def reason_no_commit() -> str:
    return "no committed offset: lag unknown"


def reason_caught_up() -> str:
    return "caught up"


def reason_few_samples(have: int, need: int) -> str:
    return f"{have} of {need} samples: lag only, behaviour not judged yet"


def reason_stop(lag: int, since: float, owner: str) -> str:
    return f"no commit for {duration(since)} while lag is {count(lag)}; {owner}"


def reason_rewind(before: int, after: int) -> str:
    return f"committed offset went backwards from {before:,} to {after:,}"


def reason_stall(lag: int, since: float, who: str) -> str:
    return f"{who}, but the committed offset has not moved for {duration(since)} while lag is {count(lag)}"


def owned() -> str:
    return "owned"


def reason_span_short(span: float, needed: float) -> str:
    return f"offset not moving, but {duration(span)} is shorter than the {duration(needed)} needed to judge a stall"


def reason_warn(first: int, last: int, span: float) -> str:
    return f"lag never decreased over {duration(span)}: {count(first)} -> {count(last)}"


def reason_ok_moving() -> str:
    return "consuming"


def reason_caught_up_in_window() -> str:
    return "caught up to the log end within the window"


def nobody_owns() -> str:
    return "nobody owns the partition"


def owner_unknown() -> str:
    return "the group reports no members"


# ---------------------------------------------------------------------------------------------------
# Severity reasons
# ---------------------------------------------------------------------------------------------------


def severity_ok() -> str:
    return "under every threshold"


def severity_error(reason: str) -> str:
    return f"cannot judge: {reason}"


def severity_messages(level: str, lag: int, limit: int, held: float) -> str:
    return f"{level}: lag {count(lag)} > {count(limit)} for {duration(held)}"


def severity_seconds(level: str, lag_s: float, limit: float, held: float) -> str:
    return f"{level}: lag {duration(lag_s)} > {duration(limit)} for {duration(held)}"


def severity_doubling(level: str, before: int, after: int, within: float) -> str:
    return f"{level}: lag doubled from {count(before)} to {count(after)} within {duration(within)}"


def severity_pending(level: str, held: float, needed: float) -> str:
    return f"{level} pending: over its limit for {duration(held)} of the {duration(needed)} it must hold"


# ---------------------------------------------------------------------------------------------------
# Causes
# ---------------------------------------------------------------------------------------------------


def owner(client_id: str, host: str, member_id: str) -> str:
    return f"{client_id}@{host} (member {member_id})"


def owner_unknown_short() -> str:
    return "unknown (the group reports no members)"


def owner_none(state: str) -> str:
    return f"none (the group is {state})"


def cause_data_loss(partitions: int, missed: int, topic: str, partition: int) -> str:
    return (
        f"{count(missed)} messages on {partitions} partition(s) were deleted by retention before the group "
        f"read them (worst: {topic}-{partition}); the committed offset is below the log start"
    )


def cause_retention_risk(topic: str, partition: int, share: float, partitions: int) -> str:
    return (
        f"{topic}-{partition}: lag is {percent(share)} of the retained messages ({partitions} partition(s) at "
        f"risk); retention will delete unread messages soon"
    )


def cause_stuck(partitions: list[int], topic: str, lag: int, owners: list[str]) -> str:
    plural = "s" if len(partitions) > 1 else ""
    listed = ", ".join(str(p) for p in partitions[:10]) + (" ..." if len(partitions) > 10 else "")
    return (
        f"partition{plural} {listed} of {topic}: committed offset not moving while {count(lag)} messages wait; "
        f"owner: {'; '.join(owners)}"
    )


def cause_no_members(state: str, lag: int, growing: bool) -> str:
    return f"the group is {state} (no consumers) while {count(lag)} messages wait" + (
        " and lag is growing" if growing else ""
    )


def cause_unassigned(partitions: list[str], members: int) -> str:
    listed = ", ".join(partitions[:10]) + (" ..." if len(partitions) > 10 else "")
    return f"the group is Stable with {members} member(s) but nobody owns {listed}"


def cause_hot(
    topic: str,
    partition: int,
    share: float,
    why: str,
    owner_text: str,
    consume: float | None,
    produce: float | None,
) -> str:
    base = f"partition {partition} of {topic} holds {percent(share)} of the lag"
    rates = f"owner {owner_text}; it is read at {rate(consume)} while written at {rate(produce)}"
    if why == "key_skew":
        return f"{base}; it is written far faster than the others (key skew): {rates}"
    if why == "slow_owner":
        return f"{base}; its owner consumes far slower than the others (slow owner): {rates}"
    return f"{base}; {rates}"


def cause_deficit(produce: float, consume: float, members: int, target: int | None, partitions: int) -> str:
    base = f"consumers commit {rate(consume)} while producers write {rate(produce)}"
    if target is None:
        return f"{base}; the group reports no members, so the replicas needed cannot be sized"
    return f"{base}; {members} member(s) now, {target} would keep up (at most {partitions}, one per partition)"


def cause_ceiling(produce: float, consume: float, partitions: int) -> str:
    return (
        f"consumers commit {rate(consume)} while producers write {rate(produce)}, with one member per partition "
        f"already ({partitions}): more replicas would sit idle; drain the backlog or add partitions"
    )


def cause_burst(recent: float, trailing: float) -> str:
    return f"producers write {rate(recent)} now, {recent / trailing:.1f}x their trailing average of {rate(trailing)}"


def cause_churn(changes: int, rebalancing: int, samples: int, span: float) -> str:
    return (
        f"membership changed {changes} times and the group was rebalancing in {rebalancing} of {samples} "
        f"snapshots over {duration(span)}; check max.poll.interval.ms and session.timeout.ms"
    )


def cause_idle(members: int, partitions: int, idle: list[str]) -> str:
    names = f" ({', '.join(idle[:5])})" if idle else ""
    return f"{members} members for {partitions} partitions: {members - partitions} own nothing{names}"


# ---------------------------------------------------------------------------------------------------
# Terminal (lagbot check)
# ---------------------------------------------------------------------------------------------------


def lag_seconds_cell(seconds: float | None, lower_bound: bool) -> str:
    """'-' unknown, '12.5', or '>120' when the committed offset is older than the whole window."""
    if seconds is None:
        return "-"
    return f">{seconds:.0f}" if lower_bound else f"{seconds:.1f}"


def eta_text(eta: float | None, consume: float | None, lag: int | None) -> str:
    if eta is not None:
        return duration(eta)
    if lag is None or consume is None:
        return "unknown"
    return "never at the current rates"


def behind(seconds: float | None) -> str:
    """Lag in seconds for a headline: '6 min', or '-' when unknown."""
    return "-" if seconds is None else duration(seconds)


def cli_group_headline(v: GroupVerdict) -> str:
    lag_s = behind(v.max_lag_seconds)
    return (
        f"{v.group} ({v.cluster}) · severity {v.severity.label.upper()} · status {v.status.name} · "
        f"state {v.state.value} · "
        f"lag {count(v.total_lag)} · {lag_s} behind · trend {v.trend} · "
        f"ETA {eta_text(v.eta_seconds, v.consume_rate, v.total_lag)} · {v.severity_reason}"
    )


def cli_cause_line(cause: Cause) -> str:
    action = f" -> {cause.remediation}" if cause.remediation else ""
    return f"  {cause.rank}. [{cause.kind}] {cause.explanation}{action}"


def cli_cluster_error(cluster: str, error: str) -> str:
    return f"cluster {cluster}: UNREACHABLE ({error})"


def cli_no_groups() -> str:
    return "no consumer groups matched"


def cli_sampling(taken: int, samples: int, every: float) -> str:
    return f"snapshot {taken} of {samples} taken; the next in {every:g} s (rates and stalls need a window) ..."


def cli_no_cluster() -> str:
    return "no cluster to check: give --config FILE, --bootstrap HOST:PORT, or set LAGBOT_CLUSTERS"


def cli_bootstrap_needs_one_cluster() -> str:
    return "can only replace the bootstrap servers of a configuration with exactly one cluster"


# ---------------------------------------------------------------------------------------------------
# Demo
# ---------------------------------------------------------------------------------------------------


def demo_started(bootstrap: str) -> str:
    return f"embedded broker (Tansu) listening on {bootstrap}; setting up two consumer groups ..."


def demo_thresholds(thresholds: str) -> str:
    return f"demo thresholds, scaled to its small numbers: {thresholds}"


def demo_exit(code: int) -> str:
    meaning = {0: "nothing at warn or above", 1: "warn", 2: "critical or page", 3: "a cluster or group unreadable"}
    return f"demo done: `lagbot check` on these groups exits {code} ({meaning.get(code, 'bad configuration or usage')})"


def cli_internal_error(exc: BaseException) -> str:
    return f"lagbot: internal error: {type(exc).__name__}: {exc} (run with --verbose for the details)"


# ---------------------------------------------------------------------------------------------------
# Slack
# ---------------------------------------------------------------------------------------------------

SEVERITY_EMOJI = {"ok": ":large_green_circle:", "warn": ":large_yellow_circle:", "critical": ":red_circle:",
                  "page": ":rotating_light:"}  # fmt: skip
TREND_ARROW = {"growing": "↗", "shrinking": "↘", "steady": "→", "unknown": "?"}


def slack_escape(text: str) -> str:
    """Escape Slack's control characters in user-supplied text (group and topic names)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_headline(v: GroupVerdict) -> str:
    lag_s = behind(v.max_lag_seconds)
    return (
        f"{SEVERITY_EMOJI[v.severity.label]} *{v.severity.label.upper()}* `{slack_escape(v.group)}` "
        f"on {slack_escape(v.cluster)}: status *{v.status.name}*, lag *{count(v.total_lag)}* ({lag_s} behind) "
        f"{TREND_ARROW.get(v.trend, '?')} {v.trend}, ETA {eta_text(v.eta_seconds, v.consume_rate, v.total_lag)}"
    )


def slack_root_context(v: GroupVerdict, worst: PartitionVerdict | None) -> str:
    parts = [f"state {v.state.value}", slack_escape(v.severity_reason)]
    if worst is not None and worst.lag:
        where = f"{slack_escape(worst.topic)}/{worst.partition}"
        parts.append(f"worst: {where} lag {count(worst.lag)} ({worst.status.name})")
    return " · ".join(parts)


def slack_root_fallback(v: GroupVerdict) -> str:
    return f"{v.severity.label.upper()} {v.group} on {v.cluster}: {v.status.name}, lag {count(v.total_lag)}"


def slack_table_title(v: GroupVerdict) -> str:
    return f"*Partitions of* `{slack_escape(v.group)}` ({len(v.partitions)}), lagging first"


def slack_table_summary_row(partitions: int, lag: int, columns: int) -> list[str]:
    return [f"… {partitions} more", "", "", str(lag), "", "", ""][:columns]


def slack_cause(c: Cause) -> str:
    action = f" → _{c.remediation}_" if c.remediation else ""
    return f"*{c.rank}. {c.kind}* ({percent(c.confidence)}): {slack_escape(c.explanation)}{action}"


def slack_more_causes(n: int) -> str:
    return f"… and {n} more likely cause(s): `/lag <group>` shows them all"


def slack_no_causes() -> str:
    return "No likely cause stands out yet."


def slack_thread_fallback(v: GroupVerdict, table: str) -> str:
    return f"Partitions of {v.group}:\n{table}"


# --- incidents (Slack threads) ---

RESOLVED_EMOJI = ":large_green_circle:"


def incident_open_context(opened_for: float, peak_lag: int | None, reopened: int) -> str:
    again = f" · reopened {reopened}x" if reopened else ""
    return f"open for {duration(opened_for)} · peak lag {count(peak_lag)}{again}"


def incident_recovering(below_for: float, resolve_after: float) -> str:
    return f"recovering: below threshold for {duration(below_for)} (resolves after {duration(resolve_after)})"


def incident_resolved_headline(group: str, cluster: str, lasted: float, peak_lag: int | None, peak: str) -> str:
    return (
        f"{RESOLVED_EMOJI} *RESOLVED* `{slack_escape(group)}` on {slack_escape(cluster)}: "
        f"resolved after {duration(lasted)}, peak {count(peak_lag)} ({peak.upper()})"
    )


def incident_resolved_fallback(group: str, cluster: str, lasted: float, peak_lag: int | None) -> str:
    return f"RESOLVED {group} on {cluster}: resolved after {duration(lasted)}, peak {count(peak_lag)}"


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


def incident_new_cause_reply(before: str, c: Cause) -> str:
    was = f" (was {before})" if before else ""
    return f":mag: New likely cause{was}: {slack_cause(c)}"


def incident_remediation_line(action: str, state: str, detail: str) -> str:
    return f"remediation *{slack_escape(action)}*: {state}" + (f" · {slack_escape(detail)}" if detail else "")


def missing_secret(variable: str, what: str) -> str:
    return f"environment variable {variable} is not set: it must hold {what}"


def bot_needs_redis() -> str:
    return "redis_url: the bot keeps its state in Redis; set redis_url (or LAGBOT_REDIS_URL)"


def redis_unreachable(url: str, problem: str) -> str:
    return f"redis_url: cannot reach {url}: {problem}"


# --- /lag slash command and silences ---


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
    return "post the digest in this channel now"


def lag_summary_help() -> str:
    return "this list"


def lag_summary_audit() -> str:
    return "what was done to the group and by whom"


def lag_summary_remediate() -> str:
    return "propose a remediation for the group, for an approver to approve"


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
    why = f": {slack_escape(reason)}" if reason else ""
    left = duration(until - now)
    return f":no_bell: silenced by <@{by}> until {slack_time(until)} ({left} left){why}; no new incidents open"


def lag_group_fallback(root: str, table: str) -> str:
    return f"{root}\n{table}"


def lag_top_title(shown: int, total: int) -> str:
    return f"*Worst {shown} of {total} group(s)* at the last scheduled check, by severity then lag in seconds"


def lag_top_columns() -> list[str]:
    return ["group", "cluster", "severity", "status", "lag", "behind", "trend", "silenced"]


def lag_top_silenced_cell(remaining: float) -> str:
    return f"{duration(remaining)} left"


def lag_top_line(rank: int, v: GroupVerdict) -> str:
    return (
        f"{rank}. {v.severity.label.upper()} {v.group} ({v.cluster}): {v.status.name}, "
        f"lag {count(v.total_lag)}, {behind(v.max_lag_seconds)} behind"
    )


def lag_top_empty() -> str:
    return "No groups checked yet: the first scheduled check has not finished."


def lag_silenced(group: str, cluster: str, by: str, until: float, seconds: float, reason: str) -> str:
    why = f" Reason: {slack_escape(reason)}" if reason else " No reason given."
    return (
        f":no_bell: <@{by}> silenced `{slack_escape(group)}` on {slack_escape(cluster)} for {duration(seconds)}, "
        f"until {slack_time(until)}: no new incidents open for it until then.{why}"
    )


def lag_unsilenced(group: str, cluster: str, by: str) -> str:
    return (
        f":bell: <@{by}> lifted the silence of `{slack_escape(group)}` on {slack_escape(cluster)}: "
        "incidents open again."
    )


def lag_not_silenced(group: str, cluster: str) -> str:
    return f"`{slack_escape(group)}` on {slack_escape(cluster)} is not silenced: nothing to lift."


def lag_digest_posting(channel: str) -> str:
    return f"Posting the digest in <#{channel}>."


def lag_not_available(command: str) -> str:
    return f"`/lag {command}` is not available yet in this lagbot."


def lag_failed(error_id: str) -> str:
    return f"Something went wrong with this command; it is logged as `{error_id}`."


def lag_failed_log() -> str:
    return "slash command failed"


def silence_not_in_future(until: float, now: float) -> str:
    return f"a silence must end after now: until {until:.0f} is not after {now:.0f}"


def silence_version(version: object, known: int) -> str:
    return f"silence has format version {version!r}; this lagbot reads {known}"
