"""The wording of the `lagbot` command in a terminal: errors, progress, tables, exit lines.

Tiny functions, one per message (see lagbot.core.messages for the shared ones and the number formats).
"""

from __future__ import annotations

from collections.abc import Sequence

from lagbot.core.messages import behind, count, eta_text, status_word, visible
from lagbot.core.model import Cause, GroupVerdict


def bad_option(option: str, problem: str) -> str:
    return f"{option}: {problem}"


def cli_group_headline(v: GroupVerdict) -> str:
    lag_s = behind(v.max_lag_seconds)
    return visible(
        f"{v.group} ({v.cluster}) · severity {v.severity.label.upper()} · {status_word(v)} · "
        f"state {v.state.value} · "
        f"lag {count(v.total_lag)} · {lag_s} behind · trend {v.trend} · "
        f"ETA {eta_text(v.eta_seconds, v.consume_rate, v.total_lag)} · {v.severity_reason}"
    )  # names from the cluster: their control characters shown, never sent to the terminal


def cli_cause_line(cause: Cause) -> str:
    action = f" -> {cause.remediation}" if cause.remediation else ""
    return visible(f"  {cause.rank}. [{cause.kind}] {cause.explanation}{action}")


def cli_cluster_error(cluster: str, error: str) -> str:
    return visible(f"cluster {cluster}: UNREACHABLE ({error})")


def cli_no_groups() -> str:
    return "no consumer groups matched"


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
