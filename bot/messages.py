"""All user-facing wording: errors, explanations of causes, CLI text.

Tiny functions, one per message, so the voice stays consistent and is changed in one place.
Numbers are formatted here too (`count`, `rate`, `duration`), so a table, a cause and a Slack message
say "4.2 M" the same way.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, tzinfo
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


def bad_env_name(prop: str, variable: str) -> str:
    return f"{prop}: {variable!r} is not an environment variable name (letters, digits and _, not first a digit)"


def kafka_property_twice(props: Sequence[str]) -> str:
    return f"set in both 'kafka' and 'kafka_env': {', '.join(props)} (give each property once)"


def kafka_env_unset(cluster: str, prop: str, variable: str) -> str:
    return f"cluster {cluster!r}: the environment variable {variable} (for {prop}) is not set"


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


def config_not_utf8(path: Path, byte: int, position: int) -> str:
    return f"{path}: not UTF-8 text (byte 0x{byte:02x} at position {position}): save the file as UTF-8"


def config_env_not_json(variable: str, field: str) -> str:
    example = """, e.g. \'[{"name": "prod", "bootstrap_servers": "kafka:9092"}]\'""" if field == "clusters" else ""
    return f"environment variable {variable}: not valid JSON ({field} takes a JSON value{example})"


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


def cluster_authentication_failed(cluster: str, problem: str) -> str:
    return f"cluster {cluster!r}: authentication failed (check its SASL credentials): {problem}"


def group_unreadable(group: str, doing: str, problem: str) -> str:
    return f"group {group!r}: {doing} failed: {problem}"


def timed_out(seconds: float) -> str:
    return f"no answer within {seconds:g} s"


def offset_reader_failed(problem: str) -> str:
    return f"the committed offsets could not be read: {problem}; they are read again at the next check"


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


def reason_stall_siblings(lag: int, since: float, first_lag: int, sibling_commits: int) -> str:
    return (
        f"owned, but the committed offset has not moved for {duration(since)} while lag grew {count(first_lag)} -> "
        f"{count(lag)} and other members' partitions committed {sibling_commits} times"
    )


def horizons_positive(horizons: list[float]) -> str:
    return f"history_horizons must all be positive durations, got {horizons}"


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


def cause_stuck(
    partitions: list[int], topic: str, lag: int, owners: list[str], whole: Sequence[str] = (), why_not_scale: str = ""
) -> str:
    plural = "s" if len(partitions) > 1 else ""
    listed = ", ".join(str(p) for p in partitions[:10]) + (" ..." if len(partitions) > 10 else "")
    text = (
        f"partition{plural} {listed} of {topic}: committed offset not moving while {count(lag)} messages wait; "
        f"owner: {'; '.join(owners)}"
    )
    if whole:
        text += f"; every partition of {' and '.join(whole)} is stuck: that member is stuck, restart it"
    return text + (f"; {why_not_scale}" if why_not_scale else "")


def scaling_would_not_help_stuck(stuck: int, others: int, consume: float, produce: float) -> str:
    return (
        f"scaling would not help: the other {others} partition(s) keep up ({rate(consume)} read, {rate(produce)} "
        f"written) and the missing consumption is the {stuck} stuck partition(s)', which no new member would read"
    )


def scaling_would_not_help_slow_owner(client: str, slow: int, others: int, consume: float, produce: float) -> str:
    return (
        f"scaling would not help: the other {others} partition(s) keep up ({rate(consume)} read, {rate(produce)} "
        f"written) and the missing consumption is the {slow} partition(s) of the slow owner {client}, which a new "
        "member would not take over while it stays in the group"
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


def cause_burst_vs_baseline(
    recent: float, recent_for: float, before: float, before_for: float, ongoing: bool, now: float | None
) -> str:
    text = (
        f"producers wrote {rate(recent)} over the last {duration(recent_for)} vs {rate(before)} over the "
        f"{duration(before_for)} before ({recent / before:.1f}x)"
    )
    if ongoing:
        return f"{text}; still going"
    return f"{text}; it just ended: {rate(now)} now, the backlog it left drains without more replicas"


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


STATUS_WORDS = {"OK": "consuming", "WARN": "not catching up", "STALL": "stalled", "REWIND": "rewound",
                "STOP": "stopped", "ERR": "unreadable"}  # fmt: skip
"""What the consumers are doing, in words: beside a severity, "status OK" read as a contradiction ("WARN ...
status OK"); "WARN ... consuming" says the lag is high although the consumers move."""


def status_word(v: GroupVerdict | PartitionVerdict) -> str:
    return STATUS_WORDS[v.status.name]


def cli_group_headline(v: GroupVerdict) -> str:
    lag_s = behind(v.max_lag_seconds)
    return (
        f"{v.group} ({v.cluster}) · severity {v.severity.label.upper()} · {status_word(v)} · "
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


def cli_version(version: str) -> str:
    return f"lagbot {version}"


def cli_no_config() -> str:
    return (
        "no configuration: give --config FILE (see examples/lagbot.yaml), or set LAGBOT_CLUSTERS and LAGBOT_REDIS_URL"
    )


def cli_audit_needs_config() -> str:
    return (
        "the audit trail is in the bot's Redis: give --config FILE (the bot's configuration, with redis_url), "
        "or set LAGBOT_CLUSTERS and LAGBOT_REDIS_URL"
    )


def cli_bootstrap_needs_one_cluster() -> str:
    return "can only replace the bootstrap servers of a configuration with exactly one cluster"


# ---------------------------------------------------------------------------------------------------
# Demo
# ---------------------------------------------------------------------------------------------------


def broker_label(apache_version: str | None) -> str:
    """A development broker as the demo names it: Apache Kafka (fetched) or the embedded Tansu."""
    return "embedded Tansu (Kafka protocol)" if apache_version is None else f"Apache Kafka {apache_version} (KRaft)"


def demo_started(bootstrap: str, apache_version: str | None) -> str:
    return f"{broker_label(apache_version)} listening on {bootstrap}; setting up two consumer groups ..."


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
    return f"{v.severity.label.upper()} {v.group} on {v.cluster}: {status_word(v)}, lag {count(v.total_lag)}"


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
    return f"redis_url: cannot reach {without_password(url)}: {problem}"


def without_password(url: str) -> str:
    """A URL fit for a log: its user and password removed (redis://:secret@host -> redis://host)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.hostname is None:
        return url
    host = parts.hostname + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=host))


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
    why = f": {slack_escape(reason)}" if reason else ""
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


def lag_top_line(rank: int, v: GroupVerdict) -> str:
    return (
        f"{rank}. {v.severity.label.upper()} {v.group} ({v.cluster}): {status_word(v)}, "
        f"lag {count(v.total_lag)}, {behind(v.max_lag_seconds)} behind"
    )


def lag_top_empty() -> str:
    return "No groups checked yet: the first scheduled check has not finished."


def lag_silenced(group: str, cluster: str, by: str, until: float, seconds: float, reason: str) -> str:
    why = f" Reason: {slack_escape(reason)}" if reason else " No reason given."
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
    if channel[:1] in ("U", "W"):  # not a channel: the caller (see bot.slack.guard)
        return digest_to_caller()
    return f"Posting the digest in <#{slack_escape(channel)}>."


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


# --- remediations: verification ---


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


# --- remediations: plans, pre-flight, execution ---

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


def workload_label(executor: str, kind: str, namespace: str, name: str) -> str:
    """A workload as people know it: a Kubernetes kind and namespace/name, or a local fleet by its name."""
    return f"local fleet {name}" if executor == "local" else f"{kind} {namespace}/{name}"


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


def min_over_max(min_replicas: int, max_replicas: int) -> str:
    return f"min_replicas ({min_replicas}) is above max_replicas ({max_replicas})"


def scale_outside_limits(replicas: int, low: int, high: int) -> str:
    return f"{replicas} replicas is outside the policy's limits ({low} to {high})"


def scale_cannot_size(group: str) -> str:
    return f"cannot size {group}: its produce and consume rates are not known yet; give an explicit replica count"


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


def reset_read_back_differs(partitions: Sequence[str]) -> str:
    return f"the committed offsets read back differ from the targets on {', '.join(partitions)}"


def reset_refused_by_broker(refusal: str, moved: Sequence[str]) -> str:
    if not moved:
        return f"{refusal}; nothing changed (offsets read back as before): stop its consumers, then propose again"
    return f"{refusal}; the committed offsets read back differ from before on {', '.join(moved)}: check them"


def reset_done(group: str, partitions: int, skipped: int, reread: int) -> str:
    return f"reset {partitions} partition(s) of {group}: {count(skipped)} messages skipped, {count(reread)} to re-read"


def registry_malformed(name: str, problem: str) -> str:
    return f"remediation {name!r} cannot be registered: {problem}"


def registry_unknown_name(name: object, known: Sequence[str]) -> str:
    return f"its name {name!r} is not one of {', '.join(known)}"


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


# --- policies ---


def policy_bad_user_id(user: str) -> str:
    return f"{user!r} is not a Slack user id (U... or W...); find it in the user's profile, 'Copy member ID'"


def policy_bad_usergroup_id(group: str) -> str:
    return f"{group!r} is not a Slack user group id (S...); a handle like @oncall is not an id"


def policy_bad_channel(channel: str) -> str:
    return f"{channel!r} is not a Slack channel: use #name (lowercase) or a channel id (C...)"


def policy_auto_approve_risky(action: str, risk: str | None) -> str:
    what = f"{risk} risk" if risk else "of unknown risk (not registered)"
    return f"auto_approve is only allowed for low-risk remediations; {action} is {what}"


def policy_reset_needs_two() -> str:
    return "reset_offsets loses data: it needs 2 approvals, by two different people"


def policy_no_modes() -> str:
    return "at least one mode is needed (latest, earliest, shift, datetime); to forbid resets, remove reset_offsets"


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


def policy_not_allowed(rule: str, action: str) -> str:
    return f"rule {rule!r} does not allow {action}"


def policy_no_workload(rule: str, action: str) -> str:
    return f"rule {rule!r} names no workload, so {action} has nothing to act on"


def policy_mode_not_allowed(rule: str, mode: str, modes: Sequence[str]) -> str:
    return f"rule {rule!r} does not allow resetting offsets {mode!r}; allowed: {', '.join(modes)}"


def policy_rule_location(index: int, name: str | None) -> str:
    return f"rules[{index}]" + (f" (name {name!r})" if name is not None else "")


def policy_error(source: str, where: str | None, field: str, problem: str, value: object) -> str:
    shown = "" if isinstance(value, dict | list | tuple) or value is None else f" (got {value!r})"
    parts = [source, *([where] if where else []), field or ("(the rule itself)" if where else "(top level)")]
    return f"{': '.join(parts)}: {problem}{shown}"


def usergroup_lookup_failed(usergroup: str, problem: str) -> str:
    return f"cannot tell who may approve: looking up the members of Slack user group {usergroup} failed: {problem}"


def usergroup_cache_version(found: object, known: int) -> str:
    return f"cached user group has format version {found!r}; this lagbot reads {known}"


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


def explain_no_workload() -> str:
    return "none: restart and scale have nothing to act on"


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


# --- digest ---

DIGEST_STATUS_ORDER = ("ERR", "STOP", "REWIND", "STALL", "WARN", "OK")
"""Worst first: the order of the status counts in a digest."""


def clock(at: float, tz: tzinfo) -> str:
    """A time in the channel's zone, with the weekday so yesterday's 23:10 is not read as today's: 'Tue 03:12'."""
    return datetime.fromtimestamp(at, tz).strftime("%a %H:%M")


def slack_user(user: str) -> str:
    """A Slack user id as a mention (<@U123>); anything else (a name, 'policy') as escaped text."""
    return f"<@{user}>" if re.fullmatch(r"[UW][A-Z0-9]{2,}", user) else slack_escape(user)


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
    rank: int, v: GroupVerdict, before_seconds: float | None, before_lag: int | None, trend: str | None
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


def digest_chart_title() -> str:
    return "Lag of the worst groups, last 24 h"


def digest_chart_alt(labels: Sequence[str]) -> str:
    return "Line chart of consumer lag (messages) over the last 24 h for " + (", ".join(labels) or "no group")


def digest_chart_axes(tz: tzinfo) -> tuple[str, str]:
    """(x label, y label) of the digest chart."""
    return f"time of day ({tz})", "lag (messages)"


def digest_chart_empty() -> str:
    return "no lag history in the last 24 h"


def digest_upload_failed(channel: str, ts: str, problem: str) -> str:
    return f"digest posted to {channel} (ts {ts}) but its chart could not be uploaded: {problem}"


def digest_retention_too_short(value: float) -> str:
    return f"{duration(value)} is too short: keep at least 1d, the digest compares lag with 24 h before"


def digest_bad_resolution(value: float) -> str:
    return f"{value:g} is not a whole number of seconds >= 1"


def digest_bad_timezone(name: str) -> str:
    return f"{name!r} is not an IANA time zone (such as 'UTC' or 'Europe/Paris')"


def digest_bad_cron(cron: str, problem: str) -> str:
    return f"{cron!r} is not a 5-field crontab (minute hour day month weekday): {problem}"


def digest_period_beyond_history(channel: str, period: float, retention: float) -> str:
    return (
        f"the digest of {channel} covers {duration(period)} but history is kept {duration(retention)}: "
        f"raise digest.history.retention or shorten the period"
    )


def digest_bad_channel(channel: str) -> str:
    return f"{channel!r} is not a channel: give its id (C0123ABCD) or its name (#kafka-alerts), without spaces"


# --- approvals in Slack ---


def approval_unknown() -> str:
    return "This proposal is unknown or too old: ask for a new one with `/lag remediate <group> <action>`."


def approvers_unavailable(problem: str) -> str:
    return f"Cannot check who may approve right now ({problem}); nothing was run. Try again in a minute."


def approval_not_approver(rule: str, summary: str) -> str:
    return (
        f":no_entry: You are not an approver of policy rule `{slack_escape(rule)}`, so *{slack_escape(summary)}* "
        "was not run. This refusal is in the audit trail."
    )


def approval_dry_run(user: str, summary: str) -> str:
    return (
        f":test_tube: Dry run: {slack_user(user)} approved *{slack_escape(summary)}*; "
        "nothing was changed (policy dry-run)."
    )


def approval_recorded(user: str, have: int, need: int) -> str:
    return f":ballot_box_with_check: {slack_user(user)} approved ({have} of {need}): waiting for another approver."


def approval_refused(reason: str, state: str, detail: str) -> str:
    """Why an approval click ran nothing. `detail` is the cooldown left in ms for 'cooldown'."""
    if reason == "expired":
        why = "this proposal has expired: ask for a new one with `/lag remediate <group> <action>`"
    elif reason == "not_proposed":
        why = f"this proposal is already {state or 'closed'}"
    elif reason == "again":
        why = "you already approved it: it needs a different second approver"
    elif reason == "requester":
        why = "you asked for it: two other people must approve"
    elif reason == "cooldown":
        left = int(detail) / 1000 if detail.isdigit() else None
        why = f"it ran for this group recently: cooldown for another {duration(left)}"
    elif reason == "missing":
        why = "this proposal is unknown or too old"
    elif reason == "busy":
        why = "another remediation of this group is running; try again when it has finished"
    else:
        why = reason
    return f"Not run: {why}."


def approval_denied(user: str, summary: str, reason: str) -> str:
    return f":x: {slack_user(user)} denied *{slack_escape(summary)}*: {slack_escape(reason)}"


def remediation_running(approvers: Sequence[str], summary: str) -> str:
    who = ", ".join(slack_user(u) if u != "lagbot" else "the policy (auto-approve)" for u in approvers)
    return f":gear: Approved by {who}: running *{slack_escape(summary)}*"


def remediation_result(ok: bool, summary: str, detail: str) -> str:
    mark = ":white_check_mark:" if ok else ":x:"
    outcome = "done" if ok else "failed"
    return f"{mark} *{slack_escape(summary)}* {outcome}: {slack_escape(detail)}"


def remediation_crashed(action: str, exc: BaseException) -> str:
    return f"{action} stopped with an unexpected error ({type(exc).__name__}: {exc}); nothing more was done"


def remediation_not_offered(action: str, reason: str) -> str:
    return f"`{slack_escape(action)}` not offered: {slack_escape(reason)}"


def remediation_cooling_down(action: str, left: float) -> str:
    return f"{action} ran for this group recently; it can be proposed again in {duration(left)}"


def verify_escalation(detail: str, rule: object) -> str:
    mentions = getattr(getattr(rule, "approvers", None), "mentions", lambda: "")()
    return f":rotating_light: {detail} {mentions}".rstrip()


def proposals_title(expires_in: float) -> str:
    return f"*Remediations the policy allows* (proposals expire in {duration(expires_in)}):"


def proposal_line(summary: str, steps: Sequence[str], approvals: int, risk: str) -> str:
    people = "two approvers" if approvals >= 2 else "one approver"
    return f"• *{slack_escape(summary)}* ({risk} risk, {people}): " + slack_escape("; ".join(steps))


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


def audit_line(at: str, event: str, user: str, action: str | None, detail: str) -> str:
    who = slack_user(user) if user else "(no user)"
    return f"`{at}` *{slack_escape(event)}* {slack_escape(action or '')} by {who} {slack_escape(detail)}".rstrip()


def audit_empty(group: str) -> str:
    return f"Nothing in the audit trail for `{slack_escape(group)}` yet."


def click_failed(reference: str) -> str:
    return f":warning: Something went wrong with this click; nothing more was done. It is logged as `{reference}`."


def remediate_usage(action: str) -> str:
    usage = {
        "scale": "/lag remediate <group> scale [replicas]",
        "reset_offsets": "/lag remediate <group> reset_offsets latest | shift <n> | datetime <ISO 8601 with zone>",
        "drain": "/lag remediate <group> drain [sink: a Parquet path or URL, or kafka:TOPIC]",
    }.get(action, f"/lag remediate <group> {slack_escape(action)}")
    return f"Usage: `{usage}`"


# --- executors ---
# Outcome details of executors go into Slack threads as they are; errors name what was being done.


def executor_unknown(name: str) -> str:
    return f"no executor called {name!r}: use kubernetes, command or local"


def executor_not_configured(name: str) -> str:
    return f"the {name} executor is not configured: add an `executors.{name}` section"


def executor_wrong_workload(executor: str, wanted: str, workload: str) -> str:
    return f"workload {workload} is for the {wanted} executor, not {executor}"


def executor_bad_replicas(replicas: int) -> str:
    return f"replicas must be 0 or more, not {replicas}"


def executor_failed(doing: str, problem: str) -> str:
    return f"could not {doing}: {problem}"


def executor_scaled(target: str, before: int | None, after: int) -> str:
    return f"scaled {target} from {'?' if before is None else before} to {after} replicas"


def executor_restarted(target: str) -> str:
    return f"rolling restart of {target} started"


def executor_member_restarted(client_id: str, what: str, target: str) -> str:
    return f"restarted {client_id} ({what}) of {target}"


def k8s_config_sources(given: Sequence[str]) -> str:
    named = ", ".join(given) if given else "none"
    return f"set exactly one of api_url, kubeconfig, in_cluster (given: {named})"


def k8s_config_only_with(what: str, field: str) -> str:
    return f"{what} can only be set together with {field}"


def k8s_config_exclusive(a: str, b: str) -> str:
    return f"{a} and {b} cannot be set together"


def k8s_client_unbuildable(problem: str) -> str:
    return f"cannot build the Kubernetes client: {problem}"


def k8s_doing(verb: str, target: str) -> str:
    return f"{verb} {target}"


def k8s_api_problem(status: int | None, reason: str | None, message: str | None) -> str:
    head = " ".join(str(part) for part in (status, reason) if part)
    return f"{head}: {message}" if message else head or "no answer"


def k8s_bad_name(name: str) -> str:
    return f"{name!r} is not a Kubernetes name (lower-case letters, digits, '-' and '.')"


def k8s_bad_member_pod(template: str, problem: str) -> str:
    return f"member_pod {template!r} is not a valid template ({problem}): use {{host}} or {{client_id}}"


def k8s_no_pod_name(client_id: str, host: str) -> str:
    return f"no pod name can be derived from member {client_id!r} on host {host!r}"


def k8s_bad_pod_name(pod: str) -> str:
    return f"{pod!r} is not a pod name (a DNS-1123 subdomain): check the workload's member_pod"


def k8s_pod_not_of_workload(pod: str, workload: str) -> str:
    return f"pod {pod} does not belong to {workload} (its name does not start with '{workload}-'); nothing deleted"


def k8s_pods_for_ip(ip: str, namespace: str, names: Sequence[str]) -> str:
    found = ", ".join(names) if names else "none"
    return f"expected one running pod with IP {ip} in namespace {namespace}, found {found}; nothing deleted"


def k8s_no_keda(target: str) -> str:
    return f"{target} has no KEDA ScaledObject: nothing to restore"


def k8s_keda_restored(scaled_object: str, previous: str | None) -> str:
    if previous is None:
        return f"ScaledObject {scaled_object} unpaused: KEDA scales it again"
    return f"ScaledObject {scaled_object} paused-replicas set back to {previous}"


def _argv(argv: Sequence[str]) -> str:
    import shlex

    return shlex.join(argv)


def command_bad_element(element: str, problem: str) -> str:
    return f"argv element {element!r} is not a valid template: {problem}"


def command_no_templates(operations: Sequence[str]) -> str:
    return f"give an argv template for at least one of {', '.join(operations)}"


def command_no_program(operation: str) -> str:
    return f"{operation}: the argv template needs a program as its first element"


def command_program_placeholder(operation: str, program: str) -> str:
    return f"{operation}: the program {program!r} must be fixed, not a placeholder"


def command_unknown_placeholder(operation: str, name: str, allowed: Sequence[str]) -> str:
    return f"{operation}: unknown placeholder {{{name}}}; allowed: {', '.join('{' + a + '}' for a in allowed)}"


def command_bad_value(name: str, value: str, pattern: str) -> str:
    return f"refused {{{name}}} = {value!r}: it must match {pattern}; nothing was run"


def command_no_template(operation: str) -> str:
    return f"the command executor has no `{operation}` template: add `executors.command.{operation}`"


def command_doing(operation: str, workload: str) -> str:
    return f"run the {operation} command for {workload}"


def command_done(argv: Sequence[str], output: str) -> str:
    return f"$ {_argv(argv)}\n{output}".rstrip()


def command_exit(argv: Sequence[str], code: int, output: str) -> str:
    how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
    return f"`{_argv(argv)}` failed with {how}\n{output}".rstrip()


def command_not_found(program: str) -> str:
    return f"program {program!r} not found"


def command_timed_out(argv: Sequence[str], seconds: float, output: str) -> str:
    return f"`{_argv(argv)}` timed out after {seconds:g} s and was killed\n{output}".rstrip()


def command_not_a_count(line: str) -> str:
    return f"expected a replica count as the last line of the output, got {line!r}"


def fleet_bad_version(what: str, version: object, expected: int) -> str:
    return f"stored {what} has version {version!r}; this lagbot reads {expected}"


def fleet_bad_name(name: str) -> str:
    return f"{name!r} is not a fleet name (letters, digits, '_', '.', '-', not starting with '.')"


def fleet_unknown(fleet: str) -> str:
    return f"no fleet called {fleet}: start it first"


def fleet_unreadable(path: str, problem: str) -> str:
    return f"cannot read {path}: {problem}"


def fleet_already_running(fleet: str, members: int) -> str:
    return f"fleet {fleet} already runs {members} member(s): scale it, or stop it first"


def fleet_started(fleet: str, group: str, members: int) -> str:
    return f"fleet {fleet} started: {members} member(s) consuming as group {group}"


def fleet_stopped(fleet: str, members: int) -> str:
    return f"fleet {fleet} stopped ({members} member(s))"


def fleet_restarted(fleet: str, members: int) -> str:
    return f"rolling restart of fleet {fleet} done: {members} member(s) restarted one at a time"


def fleet_no_member(fleet: str, client_id: str, client_ids: Sequence[str]) -> str:
    known = ", ".join(client_ids) if client_ids else "none"
    return f"fleet {fleet} has no live member with client id {client_id!r} (live: {known}); nothing restarted"


def fleet_member_not_started(client_id: str, seconds: float, log_tail: str) -> str:
    return f"member {client_id} did not report running within {seconds:g} s; its log ends:\n{log_tail}".rstrip()


def fleet_locked(fleet: str, seconds: float) -> str:
    return f"fleet {fleet} is being changed by another process; gave up waiting after {seconds:g} s"


def fleet_cli_failed(action: str, problem: str) -> str:
    return f"fleet {action} failed: {problem}"


def fleet_cli_stuck(fleet: str, client_id: str) -> str:
    return f"{client_id} of fleet {fleet} is now stuck: it stays in the group but stops consuming and committing"


def fleet_cli_status_header(fleet: str, members: int) -> str:
    return f"fleet {fleet}: {members} live member(s)"


def fleet_cli_status_row(
    client_id: str, pid: int, state: str, processed: int, assignment: Sequence[str], committed: dict[str, int]
) -> str:
    owned = ", ".join(assignment) or "none"
    offsets = ", ".join(f"{k}={v}" for k, v in committed.items()) or "none"
    return f"  {client_id}  pid {pid}  {state}  processed {count(processed)}  owns {owned}  committed {offsets}"


def fleet_not_settled(fleet: str, seconds: float, members: Sequence[str]) -> str:
    return f"fleet {fleet} did not settle within {seconds:g} s: {'; '.join(members) or 'no live members'}"


def fleet_member_not_joined(client_id: str, seconds: float) -> str:
    return f"member {client_id} did not join its group within {seconds:g} s; the rolling restart stops here"


def remediations_offered() -> str:
    return ":wrench: A remediation can now be proposed for this incident:"


# --- drain ---


def drain_unreadable(group: str, why: str) -> str:
    return f"cannot plan a drain of {group!r}: its offsets could not be read ({why})"


def drain_unknown_topics(group: str, topics: Sequence[str]) -> str:
    return f"group {group!r} does not consume {', '.join(topics)}"


def drain_summary(group: str, offsets: int, tasks: int, eta: float) -> str:
    """One line for the button (<= 75 characters): the group name is shortened to fit."""
    if not tasks:
        return f"Drain {group[:50]}: nothing to drain"
    tail = f": {count(offsets)} msgs, {tasks} tasks, ~{duration(eta)}"
    room = 75 - len("Drain ") - len(tail)
    name = group if len(group) <= room else group[: max(1, room - 1)] + "…"
    return f"Drain {name}{tail}"


def drain_preflight(pause: bool) -> list[str]:
    checks = ["the group's committed offsets have not moved back since this plan"]
    if pause:
        checks.append("the group is Empty once its consumers are scaled to 0")
    else:
        checks.append("the group is Empty (no consumers running)")
    checks.append("every range is written and the manifest is durable before any offset moves")
    return checks


def drain_step_pause(workload: str | None) -> str:
    target = f"`{workload}`" if workload else "the group's workload (from the policy)"
    return f"Pause consumers: scale {target} to 0 through the executor, wait until the group is Empty"


def drain_step_read(offsets: int, ranges: int, chunk: int, slots: int, master: str) -> str:
    return (
        f"Read {count(offsets)} offsets in {ranges} ranges of at most {count(chunk)} "
        f"({slots} Spark tasks at a time, master {master}), each by offset with assign + seek"
    )


def drain_step_write(kind: str, sink: str, manifest: str) -> str:
    if kind == "replay":
        where = f"Replay into topic `{sink.removeprefix('kafka:')}` (idempotent producer)"
    else:
        where = f"Write Parquet to `{sink}` (one directory per range, replaced on a rerun)"
    return f"{where}; then write the manifest `{manifest}`"


def drain_step_commit(partitions: int) -> str:
    return (
        f"Advance the group's offsets on {partitions} partition(s) to the range ends, only if every range "
        "is written and the group is Empty (never backwards); on any failure nothing is committed"
    )


def drain_step_restore(workload: str | None) -> str:
    target = f"`{workload}`" if workload else "the workload"
    return f"Restore {target} to the replica count it had before the pause (also on failure)"


def drain_note_origin(topic: str, partition: int, origin: str, start: int, lost: int) -> str:
    if origin == "log_start_uncommitted":
        return f"Note: {topic}/{partition} has no committed offset: drained from the log start ({start:,})"
    return (
        f"Note: {topic}/{partition}: {lost:,} messages were deleted by retention before the group read "
        f"them; drained from the log start ({start:,})"
    )


def drain_note_replay_order(chunk: int) -> str:
    return (
        f"Note: replay writes the chunks of one partition in parallel, so the target does not keep their "
        f"order; a chunk larger than the partition's backlog (now {count(chunk)}) keeps it"
    )


def drain_offsets_unreadable(group: str, where: str, problem: str) -> str:
    return f"group {group!r}: cannot read the committed offset of {where}: {problem}"


def drain_group_active(group: str, state: str) -> str:
    return (
        f"group {group!r} is {state}, not Empty: its offsets cannot be moved while consumers run "
        "(stop them, or approve a plan that pauses them); nothing was committed"
    )


def drain_moved_back(group: str, behind: Sequence[str]) -> str:
    return (
        f"group {group!r}: committed offsets moved back since the plan ({'; '.join(behind)}); advancing "
        "would skip unread messages: make a new plan. Nothing was committed"
    )


def drain_commit_failed(group: str, problem: str) -> str:
    return f"group {group!r}: advancing the offsets failed: {problem}"


def drain_no_spark_submit(configured: str) -> str:
    return f"spark-submit not found: {configured!r} (set drain.spark_submit to its path)"


def drain_submit_failed(code: int, tail: str) -> str:
    return f"spark-submit exited with code {code} without a result; nothing was committed: {tail or 'no output'}"


def drain_nothing(group: str) -> str:
    return f"{group}: nothing to drain (every partition is caught up)"


def drain_incomplete(written: int, total: int, error: str | None) -> str:
    why = f": {error}" if error else ""
    return f"drain incomplete, {written} of {total} ranges written{why}; nothing was committed"


def drain_committed(group: str, committed: dict[tuple[str, int], int]) -> str:
    if not committed:
        return f"{group}: offsets already at or past the drained ends; nothing to commit"
    where = ", ".join(f"{t}/{p} -> {o:,}" for (t, p), o in sorted(committed.items()))
    return f"{group}: offsets advanced: {where}"


def drain_done(group: str, drained: int, ranges: int, partitions: int, seconds: float) -> str:
    speed = rate(drained / seconds) if seconds > 0 else "-"
    return (
        f"drained {count(drained)} messages of {group} in {ranges} ranges in {duration(seconds)} ({speed}); "
        f"offsets advanced on {partitions} partition(s)"
    )


def drain_crashed(group: str, exc: BaseException) -> str:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"drain of {group} failed: {type(exc).__name__}: {first}; nothing was committed"


def drain_no_clients() -> str:
    return "the drain needs the cluster's AdminClient and its client settings (kafka_config); nothing was done"


def drain_cannot_pause(group: str) -> str:
    return (
        f"group {group!r} has running consumers and no executor or workload is configured to pause them; "
        "nothing was done"
    )


def drain_pause_failed(workload: str, detail: str) -> str:
    return f"could not scale {workload} to 0: {detail}; nothing was done"


def drain_paused(workload: str, replicas: int) -> str:
    return f"consumers paused: {workload} scaled from {replicas} to 0"


def drain_not_empty_after_pause(group: str, state: str, timeout: float) -> str:
    return f"group {group!r} still {state} {duration(timeout)} after its consumers were scaled to 0; nothing was done"


def drain_restored(workload: str, replicas: int) -> str:
    return f"consumers restored: {workload} back to {replicas} replica(s)"


def drain_restore_failed(workload: str, replicas: int, detail: str) -> str:
    return f"RESTORE FAILED: scale {workload} back to {replicas} by hand ({detail})"


def drain_started(group: str, ranges: int, offsets: int, master: str) -> str:
    return f"draining {group}: {count(offsets)} offsets in {ranges} ranges on {master}"


def drain_progress(group: str, done: int, total: int, drained: int, per_second: float) -> str:
    return f"draining {group}: {done}/{total} ranges, {count(drained)} messages, {rate(per_second)}"


def drain_verify_pending() -> str:
    return "no check since the drain yet"


def drain_verify_behind(partitions: int) -> str:
    return f"{partitions} drained partition(s) still behind the drained end: the offsets were not advanced"


def drain_verify_resolved(lag: int) -> str:
    return f"offsets past the drained backlog; lag now {count(lag)}, under every threshold"


def drain_verify_worse(lag: int, drained: int) -> str:
    return f"lag {count(lag)} is above the {count(drained)} drained: consumers fall behind faster than before"


def drain_verify_improving(lag: int) -> str:
    return f"offsets past the drained backlog; {count(lag)} newer messages wait"


def cli_drain_no_group(group: str, cluster: str) -> str:
    return f"--group: no consumer group {group!r} on cluster {cluster!r}"


def drain_needs_java(minimum: int, java: str | None, major: int | None) -> str:
    install = "install a Java runtime (Debian: apt install openjdk-17-jre-headless) or set JAVA_HOME"
    if java is None:
        return f"the drain runs Spark, which needs Java {minimum} or newer, and there is none: {install}"
    found = f"Java {major}" if major is not None else "a Java whose version it does not report"
    return f"the drain runs Spark, which needs Java {minimum} or newer; {java} is {found}: {install}"


def drain_sink_not_writable(sink: str, directory: str) -> str:
    return f"sink {sink}: cannot write there: {directory} is not writable by this user; nothing was done"


def drain_sink_not_a_directory(sink: str, path: str) -> str:
    return f"sink {sink}: cannot write there: {path} is a file, not a directory; nothing was done"


def cli_drain_consumers_running(group: str, members: int, state: str) -> str:
    return (
        f"group {group!r} has {members} running consumer(s) (state {state}): stop them first, or drain it from "
        "Slack, where the policy names the workload to pause; nothing was done"
    )


def cli_drain_need_sink() -> str:
    return "--sink: required (or set drain.sink in the configuration)"


def cli_drain_dry_run() -> str:
    return "dry run: nothing was read, written or committed"


def cli_drain_plan_title(group: str, cluster: str, state: str) -> str:
    return f"Drain plan for {group} on {cluster} (state {state})"


def autoscaler_restored(ok: bool, detail: str) -> str:
    if ok:
        return f":arrows_counterclockwise: The hold after scaling is over: handed back to the autoscaler: {detail}"
    return f":x: The hold after scaling is over, but handing back to the autoscaler failed: {detail}"


# --- demo ---

TERMINAL_EMOJI = {
    "large_green_circle": "●", "large_yellow_circle": "●", "red_circle": "●", "rotating_light": "🚨",
    "white_circle": "○", "white_check_mark": "✔", "ballot_box_with_check": "☑", "x": "✖", "warning": "⚠",
    "gear": "⚙", "wrench": "🔧", "mag": "🔍", "bell": "🔔", "no_bell": "🔕", "no_entry": "⛔", "repeat": "↻",
    "arrow_up": "↑", "arrow_down": "↓", "test_tube": "🧪",
}  # fmt: skip
"""Slack emoji shortcodes lagbot uses, as characters for the demo's terminal transcript."""


def demo_option_needs_check_only(option: str) -> str:
    return f"{option} only applies to `lagbot demo --check-only` (the check on an embedded lagging group)"


def demo_title(timeout: float) -> str:
    return (
        "lagbot demo: the Slack bot end to end on embedded services (a Kafka broker, redis-server, an emulated "
        f"Slack workspace, a local consumer fleet); it stops by itself within {timeout:g} s"
    )


def demo_broker(bootstrap: str, apache_version: str | None) -> str:
    return f"  broker     {broker_label(apache_version)} on {bootstrap}"


def demo_redis(url: str) -> str:
    return f"  redis      redis-server on {url}"


def demo_slack(api_url: str, channel: str) -> str:
    return f"  slack      emulated Web API on {api_url}; the bot posts to channel {channel}"


def demo_topic(topic: str, partitions: int) -> str:
    return f"  topic      {topic}, {partitions} partitions"


def demo_fleet(fleet: str, group: str, members: int, delay_ms: float, state_dir: str) -> str:
    return (
        f"  consumers  fleet {fleet} (group {group}): {members} member, {delay_ms:g} ms per message "
        f"(~{1000 / delay_ms:.0f} msg/s at most); state in {state_dir}"
    )


def demo_producer(per_second: int, partitions: int, limit: int) -> str:
    return f"  producer   {per_second} msg/s over {partitions} partitions, at most {count(limit)} messages"


def demo_bot(config: str, policy: str, log: str) -> str:
    return f"  bot        lagbot run --config {config} (policy {policy}; log {log})"


def demo_endpoints(url: str) -> str:
    return f"  bot HTTP   {url}/healthz  {url}/metrics  {url}/slack/events (signed requests only)"


def demo_approver(user: str, fleet: str, low: int, high: int) -> str:
    return f"  policy     {user} may approve scaling {fleet} between {low} and {high} replicas"


def demo_channel_header(channel: str) -> str:
    return f"--- channel {channel} (emulated Slack), as the bot writes it ---"


def demo_event(clock: str, kind: str) -> str:
    label = {"posted": "new message", "reply": "  ↳ thread reply", "edited": "message edited"}.get(kind, kind)
    return f"[{clock}] {label}"


def demo_click(clock: str, user: str, label: str, url: str) -> str:
    return f"[{clock}] {user} clicks [ {label} ] (a signed block_actions request to {url})"


def demo_click_answered(status: int) -> str:
    return f"           the app answered HTTP {status}"


def demo_click_refused(text: str) -> str:
    return f"the bot refused the approval: {text}"


def demo_producer_stopped(written: int) -> str:
    return f"[producer] stopped after {count(written)} messages"


def demo_summary_header() -> str:
    return "--- summary ---"


def demo_incident(opened: str, resolved: str, lasted: float, peak_lag: int | None, peak: str) -> str:
    return (
        f"incident   opened {opened}, resolved {resolved} (after {duration(lasted)}); "
        f"peak lag {count(peak_lag)} ({peak.upper()})"
    )


def demo_action(action: str, outcome: str, by: Sequence[str], detail: str) -> str:
    return f"action     {action}: {outcome}, approved by {', '.join(by) or '-'}: {detail}"


def demo_audit_header(key: str) -> str:
    return f"audit      (read from Redis, {key}), oldest first:"


def demo_broker_header(group: str, topic: str) -> str:
    return f"broker     (read back now) group {group} on {topic}:"


def demo_broker_total(committed: int, log_end: int) -> str:
    verdict = "committed == log end on every partition" if committed == log_end else "NOT caught up"
    return f"total: committed {count(committed)}, log end {count(log_end)}: {verdict}"


def demo_metrics(url: str) -> str:
    return f"/metrics    ({url}/metrics, read before the bot stopped):"


def demo_done(seconds: float) -> str:
    return f"demo done in {duration(seconds)}: one incident opened, scaled with an approval, drained, resolved"


def demo_failed(reason: str, kept: str) -> str:
    return f"lagbot demo failed: {reason} (logs kept in {kept})"


def demo_interrupted() -> str:
    return "lagbot demo interrupted: everything it started is stopped"


def demo_timed_out(what: str, seconds: float) -> str:
    return f"timed out after {duration(seconds)} waiting for {what}"


def demo_bot_exited(code: int | None, log: str) -> str:
    how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited with code {code}"
    return f"`lagbot run` {how} (its log: {log})"


def demo_producer_failed(error: str) -> str:
    return f"the producer failed: {error}"


def demo_more_incidents(n: int) -> str:
    return f"the bot opened {n} incidents; one was expected"


def demo_action_failed(detail: str) -> str:
    return f"the scale failed: {detail}"


def demo_not_caught_up(committed: Sequence[int], log_end: Sequence[int]) -> str:
    return f"committed {list(committed)} != log end {list(log_end)}"


def demo_wait_button() -> str:
    return "the bot's scale button in the incident thread"


def demo_wait_settled(fleet: str) -> str:
    return f"fleet {fleet} to join its group"


def demo_wait_result() -> str:
    return "the scale to run"


def demo_wait_drained() -> str:
    return "the consumers to commit up to the log end"


def demo_wait_resolved() -> str:
    return "the incident to resolve in the channel"


def demo_wait_keep_writing() -> str:
    return "the producer's last seconds"


def demo_web_title(timeout: float) -> str:
    return (
        "lagbot demo --web: the Slack bot end to end on embedded services, its channel served as a web page; "
        f"it stops on Ctrl-C or after {timeout:g} s"
    )


def demo_web_url(url: str, user: str) -> str:
    return f"  web        open {url} in a browser: the channel as Slack shows it; you click its buttons as {user}"


def demo_web_wait_decision() -> str:
    return "an Approve or Deny… click in the page"


def demo_web_decided(clock: str, event: str, user: str | None) -> str:
    return f"[{clock}] {event} in the page by {user or 'nobody'}"


def demo_web_serving(url: str) -> str:
    return f"the page stays at {url} until Ctrl-C (or the --timeout)"


def demo_web_done(seconds: float, outcome: str) -> str:
    return f"demo --web done after {seconds:.0f} s: {outcome}"


WEB_PHASES = {
    "starting": "Starting Kafka, Redis, the consumers and the bot…",
    "waiting": "The consumers fall behind; the bot checks the group every few seconds…",
    "offered": "The bot proposes a remediation in the incident thread: Approve it (or Deny it with a reason).",
    "running": "Approved: the bot runs the remediation and verifies it over the next checks…",
    "resolved": "The lag drained and the incident resolved. That is the whole story; Ctrl-C in the terminal ends it.",
    "denied": "Denied: nothing runs. The incident stays open until the lag goes down on its own.",
    "stopped": "The demo stopped.",
}
"""What the web demo's page says above the channel, per phase of the scenario."""

WEB_OUTCOMES = {
    "resolved": "scaled with an approval from the page, drained, resolved",
    "denied": "the remediation was denied from the page",
    "stopped": "stopped before anyone approved or denied",
}


def demo_web_not_with_check_only() -> str:
    return "--web and --port do not apply to `lagbot demo --check-only` (it runs no bot and no page)"


def demo_option_needs_web(option: str) -> str:
    return f"{option} only applies to `lagbot demo --web`"


def web_bad_request(problem: str) -> str:
    return f"bad request: {problem}"


def web_unknown(what: str, value: str) -> str:
    return f"no {what} {value!r} in the channel"


def remediation_resolved() -> str:
    return "the incident resolved"


def state_lost() -> str:
    return (
        ":warning: lagbot lost its stored state (Redis came back empty). Incidents still open are reopened "
        "in new threads; earlier threads will not be updated, and remediation history before now is gone."
    )


def root_replaced(cluster: str, group: str) -> str:
    return (
        f":recycle: This replaces the earlier message about `{slack_escape(group)}` ({slack_escape(cluster)}), "
        "which was deleted or lost; the thread continues here."
    )


def remediation_heartbeat_lost(action: str, silent_for: float) -> str:
    return (
        f"interrupted: {action} stopped reporting (no heartbeat for {silent_for:.0f} s, its replica stopped); "
        "check the workload before trying again"
    )


def remediation_interrupted(action: str) -> str:
    return f"{action} did not report a result (its process stopped or it ran past its time limit); check the workload"


# ---------------------------------------------------------------------------------------------------
# Who may do what: rate limits, authorisation, replays, drain sinks
# ---------------------------------------------------------------------------------------------------


def policy_bad_sink_prefix(path: str) -> str:
    return (
        f"{path!r} is not a sink prefix: give an absolute path (/data/drains) or a URL (s3a://bucket/drains), "
        "without '..'"
    )


def sink_too_long(most: int) -> str:
    return f"the sink is longer than {most} characters"


def sink_internal_topic(topic: str) -> str:
    return f"`{topic}` is an internal Kafka topic: a drain never writes there"


def sink_topic_not_allowed(topic: str, pattern: str | None) -> str:
    allowed = f"topics matching `{pattern}`" if pattern else "no topic"
    return f"topic `{topic}` is not an allowed drain sink (the policy allows {allowed})"


def sink_path_not_allowed(url: str, prefixes: Sequence[str]) -> str:
    allowed = ", ".join(f"`{p}`" for p in prefixes) or "no path: only the configured default sink"
    return f"`{url}` is not under an allowed drain sink prefix (the policy allows {allowed})"


def drain_confirm(sink: str, offsets: int, partitions: int) -> str:
    """The drain's confirm dialog (at most 300 characters with a sink of at most 200): the sink first."""
    return (
        f"Writes {count(offsets)} messages to {sink}, then commits the group's offsets past them "
        f"({partitions} partition(s)). Recorded in the audit trail."
    )


def command_rate_limited(scope: str, retry_in: float) -> str:
    who = "You have" if scope == "user" else "This channel has"
    return (
        f":hourglass: {who} sent a lot of `/lag` commands in a short time; "
        f"please try again in {duration(max(retry_in, 1.0))}."
    )


def command_bad_user(user: str) -> str:
    return f"This request names no valid Slack user or channel ({slack_escape(user)!r}): nothing was done."


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


def proposal_settled(state: str, summary: str, approvers: Sequence[str], detail: str, denied_by: str | None) -> str:
    """What replaces a proposal's buttons once it is no longer awaiting clicks."""
    who = ", ".join(slack_user(u) if u != "lagbot" else "the policy (auto-approve)" for u in approvers) or "nobody"
    what = f"*{slack_escape(summary)}*"
    if state == "running":
        return f":gear: {what}: approved by {who}, running."
    if state == "succeeded":
        return f":white_check_mark: {what}: approved by {who}, done: {slack_escape(detail)}"
    if state == "failed":
        return f":x: {what}: approved by {who}, failed: {slack_escape(detail)}"
    if state == "denied":
        return f":no_entry_sign: {what}: denied by {slack_user(denied_by or '')}: {slack_escape(detail)}"
    return f":hourglass: {what}: expired, nothing was run."


def config_key_not_text(path: object, key: object) -> str:
    return f"{path}: top level: the key {key!r} is not a name (keys are words like clusters, slack, rules)"


def explain_silencers_are_approvers() -> str:
    return "the approvers (no silencers named)"


def explain_nobody_can_silence() -> str:
    return "nobody: no one can /lag silence these groups"
