"""What the bot says about the reachability of its Kafka clusters: one log line when a cluster becomes
unreachable and one when it is read again (with how long it was away), and each cluster's state in `/healthz`.

An unreachable cluster does not make `/healthz` fail: the bot still serves Slack and keeps its incidents as
they were (an unknown lag neither opens nor resolves an incident); `lagbot_cluster_up` in `/metrics` and the
`clusters` entry of `/healthz` say which cluster is away, since when and why.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

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


def clusters_health(latest: Mapping[str, CheckReport], away_since: Mapping[str, float]) -> dict[str, Any]:
    """Each checked cluster: reachable or not at the latest check, the error and since when it is away."""
    health: dict[str, Any] = {}
    for name, report in sorted(latest.items()):
        error = report.cluster_errors.get(name)
        entry: dict[str, Any] = {"reachable": error is None, "checked_at": report.taken_at}
        if error is not None:
            entry |= {"error": error, "unreachable_since": away_since.get(name, report.taken_at)}
        health[name] = entry
    return health
