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


def cli_drain_need_sink() -> str:
    return "--sink: required (or set drain.sink in the configuration)"


def cli_drain_dry_run() -> str:
    return "dry run: nothing was read, written or committed"


def cli_drain_plan_title(group: str, cluster: str, state: str) -> str:
    return f"Drain plan for {group} on {cluster} (state {state})"
