"""What the bot says about the reachability of its Kafka clusters: one log line when a cluster becomes
unreachable and one when it is read again (with how long it was away), and each cluster's state in `/healthz`.

An unreachable cluster does not make `/healthz` fail: the bot still serves Slack and keeps its incidents as
they were (an unknown lag neither opens nor resolves an incident); `lagbot_cluster_up` in `/metrics` and the
`clusters` entry of `/healthz` say which cluster is away, since when and why.

A check that fails on lagbot's side (Redis refusing a command, a bug) is not a cluster away: it is logged with its
traceback once when it starts failing, and `/healthz` (`failing` in the cluster's entry) and `lagbot_check_failing`
say so until a check of that cluster succeeds again; the replica stays ready (Slack commands still work).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypedDict

from lagbot.engine.check import CheckReport

log = logging.getLogger(__name__)


def note_reachability(
    cluster: str, previous: CheckReport | None, report: CheckReport, away_since: dict[str, float]
) -> None:
    """Log the cluster's change of reachability between two reports; `away_since` keeps when each went away."""
    error = report.cluster_errors.get(cluster)
    was_away = previous is not None and cluster in previous.cluster_errors
    if error is not None and not was_away:
        away_since[cluster] = report.taken_at
        log.warning("cluster unreachable", extra={"cluster": cluster, "error": error})
    elif error is None and was_away:
        since = away_since.pop(cluster, None)
        away = None if since is None else round(report.taken_at - since, 1)
        log.warning("cluster reachable again", extra={"cluster": cluster, "unreachable_for": away})


@dataclass(frozen=True, slots=True)
class CheckFailure:
    """A cluster whose checks fail: since when, how many in a row, the latest error."""

    since: float
    failures: int
    error: str


def note_check_failed(cluster: str, previous: CheckFailure | None, exc: BaseException, *, now: float) -> CheckFailure:
    """Log a cluster's check that failed (with its traceback the first time) and return its failure so far."""
    error = f"{type(exc).__name__}: {exc}"
    if previous is None:
        log.error("check failed", extra={"cluster": cluster, "error": error}, exc_info=exc)
        return CheckFailure(since=now, failures=1, error=error)
    return CheckFailure(since=previous.since, failures=previous.failures + 1, error=error)


def note_check_recovered(cluster: str) -> None:
    log.warning("check succeeded again", extra={"cluster": cluster})


class FailingChecks(TypedDict):
    """A cluster's failing checks as /health shows them."""

    since: float
    failures: int
    error: str


class ClusterHealth(TypedDict, total=False):
    """A cluster as /health shows it: its latest check (when one was made) and its failing checks (when they fail)."""

    reachable: bool
    checked_at: float
    error: str
    unreachable_since: float
    failing: FailingChecks


def clusters_health(
    latest: Mapping[str, CheckReport],
    away_since: Mapping[str, float],
    failing: Mapping[str, CheckFailure] | None = None,
) -> dict[str, ClusterHealth]:
    """Each checked cluster: reachable or not at the latest check, the error and since when it is away; and each
    cluster whose checks fail: since when, how many and the latest error."""
    health: dict[str, ClusterHealth] = {}
    for name, report in sorted(latest.items()):
        error = report.cluster_errors.get(name)
        entry: ClusterHealth = {"reachable": error is None, "checked_at": report.taken_at}
        if error is not None:
            entry["error"] = error
            entry["unreachable_since"] = away_since.get(name, report.taken_at)
        health[name] = entry
    for name, failure in sorted((failing or {}).items()):
        health.setdefault(name, {})["failing"] = {
            "since": failure.since,
            "failures": failure.failures,
            "error": failure.error,
        }
    return health
