"""The wording of the `lagbot` command in a terminal: errors, progress, tables, exit lines.

Tiny functions, one per message (see lagbot.core.messages for the shared ones and the number formats).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lagbot.core.messages import count, duration, eta_text, status_word
from lagbot.core.model import Cause, GroupState, GroupVerdict, Severity, Status


def bad_option(option: str, problem: str) -> str:
    return f"{option}: {problem}"


def cli_group_headline(v: GroupVerdict) -> str:
    return (
        f"{v.group} ({v.cluster}) · severity {v.severity.label.upper()} · {cli_doing(v)} · "
        f"state {v.state.value} · "
        f"lag {count(v.total_lag)} · {cli_behind(v)} · trend {v.trend} · "
        f"ETA {eta_text(v.eta_seconds, v.consume_rate, v.total_lag)} · {v.severity_reason}"
    )  # names from the cluster: their control characters shown, never sent to the terminal


_IDLE_STATES = (GroupState.EMPTY, GroupState.DEAD)


def cli_doing(v: GroupVerdict) -> str:
    """What the consumers are doing: a group without members is consuming nothing, whatever its lag."""
    if v.status is Status.OK and v.state in _IDLE_STATES:
        return "no consumers"
    return status_word(v)


def cli_behind(v: GroupVerdict) -> str:
    """The group's lag in seconds as its table shows it: '6 min behind', 'more than 60 s behind' when the committed
    offset is older than every snapshot (the table's '>60'), 'not behind' with no lag, else what is not known."""
    if v.total_lag == 0:
        return "not behind"
    if v.max_lag_seconds is None:
        return "time behind unknown"
    at_least = any(p.lag_seconds_lower_bound and p.lag_seconds == v.max_lag_seconds for p in v.partitions)
    return f"{'more than ' if at_least else ''}{duration(v.max_lag_seconds)} behind"


def cli_summary(verdicts: Sequence[GroupVerdict], cluster_errors: Mapping[str, str]) -> str:
    """The report in one line: '7 groups: 1 critical, 1 warn, 4 idle, 1 ok', then the unreadable clusters."""
    kinds = [_summary_kind(v) for v in verdicts]
    counted = [f"{kinds.count(kind)} {kind}" for kind in _SUMMARY_KINDS if kind in kinds]
    groups = f"{len(verdicts)} group{'' if len(verdicts) == 1 else 's'}: {', '.join(counted)}"
    if not cluster_errors:
        return groups
    return f"{groups}; cluster {', '.join(sorted(cluster_errors))} unreachable"


_SUMMARY_KINDS = ("unreadable", "page", "critical", "warn", "idle", "ok")


def _summary_kind(v: GroupVerdict) -> str:
    if v.error or v.status is Status.ERR:
        return "unreadable"
    if v.severity is not Severity.OK:
        return v.severity.label
    return "idle" if v.state in _IDLE_STATES else "ok"


def cli_columns_hidden(columns: Sequence[str], width: int) -> str:
    return f"  ({', '.join(columns)} left out to fit {width} columns; --json has every column)"


def cli_cause_line(cause: Cause, remedy: str | None) -> str:
    action = f" -> {remedy}" if remedy else ""
    return f"  {cause.rank}. [{cause.kind}] {cause.explanation}{action}"


def cli_pods_unread(problem: str) -> str:
    """The owners' pods of the causes could not be read (lagbot.cli.pods): said once per check."""
    return f"the owners' pods could not be read: {problem}"


def cli_cluster_error(cluster: str, error: str) -> str:
    return f"cluster {cluster}: UNREACHABLE ({error})"


def cli_no_groups() -> str:
    return "no consumer groups matched"


def cli_no_groups_matched(pattern: str) -> str:
    """Nothing matched `-g PATTERN`, a whole-name regex: the likely intent is a prefix."""
    hint = "" if pattern.endswith(".*") else f" (-g matches whole names: try -g '{pattern}.*' for names that start so)"
    return f"no consumer group is named {pattern!r}{hint}"


def cli_no_cluster() -> str:
    return "no cluster to check: give --config FILE, --bootstrap HOST:PORT, or set LAGBOT_CLUSTERS"


def cli_version(version: str) -> str:
    return f"lagbot {version}"


def cli_version_option() -> str:
    return "Print lagbot's version and exit."


def cli_help_option() -> str:
    return "Show this message and exit."


def cli_unknown_arguments(extras: Sequence[str]) -> str:
    return f"unrecognized arguments: {' '.join(extras)}"


def cli_not_a_number(text: str, *, whole: bool) -> str:
    return f"{text!r} is not {'a whole number' if whole else 'a number'}"


def cli_out_of_range(text: str, low: float, high: float) -> str:
    return f"{text} is not in the range {low} to {high}"


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


def cli_internal_error(exc: BaseException) -> str:
    return f"lagbot: internal error: {type(exc).__name__}: {exc} (run with --verbose for the details)"


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


def cli_drain_no_group(group: str, cluster: str) -> str:
    return f"--group: no consumer group {group!r} on cluster {cluster!r}"


def cli_drain_consumers_running(group: str, members: int, state: str) -> str:
    return (
        f"group {group!r} has {members} running consumer(s) (state {state}): stop them first, or drain it from "
        "Slack, where the policy names the workload to pause; nothing was done"
    )


def cli_drain_needs_spark() -> str:
    return (
        "the drain needs PySpark: pip install 'lagbot[drain]' (Spark local or spark-submit, with Java 17+), "
        "or 'lagbot[drain-connect]' for a Spark Connect server (master sc://...; no Java)"
    )


def cli_drain_need_sink() -> str:
    return "--sink: required (or set drain.sink in the configuration)"


def cli_drain_dry_run() -> str:
    return "dry run: nothing was read, written or committed"


def cli_drain_plan_title(group: str, cluster: str, state: str) -> str:
    return f"Drain plan for {group} on {cluster} (state {state})"


def demo_option_needs_check_only(option: str) -> str:
    return f"{option} only applies to `lagbot demo --check-only` (the check on an embedded lagging group)"


def demo_web_not_with_check_only() -> str:
    return "--web and --port do not apply to `lagbot demo --check-only` (it runs no bot and no page)"


def demo_option_needs_web(option: str) -> str:
    return f"{option} only applies to `lagbot demo --web`"


# --- lagbot history, lagbot thresholds suggest (lagbot.cli.history); names come in already escaped ---


def history_unknown_cluster(cluster: str, known: Sequence[str]) -> str:
    return f"--cluster {cluster}: no such cluster in the configuration (clusters: {', '.join(known) or 'none'})"


def history_unknown_group(group: str) -> str:
    return f"group {group}: no stored history on any configured cluster (has the bot checked it yet?)"


def history_group_on_clusters(group: str, clusters: Sequence[str]) -> str:
    return f"group {group} has history on several clusters ({', '.join(clusters)}): name one with --cluster"


def cli_unreachable_because(error: str, reason: str) -> str:
    return f"{error}; {reason}"


def cli_host_does_not_resolve(host: str, problem: str) -> str:
    return f"the name {host} does not resolve ({problem}): check the bootstrap servers' host names"


def cli_connection_refused(server: str) -> str:
    return f"{server} refused the connection: no broker listens on that port (is it running? the right port?)"


def cli_no_answer(server: str, timeout: float) -> str:
    return f"no answer from {server} within {timeout:g} s: the host is down, or a firewall drops the connection"


def cli_connection_failed(server: str, problem: str) -> str:
    return f"cannot connect to {server}: {problem}"
