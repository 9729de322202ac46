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
