"""The machine-readable form of a check: the `--json` output of `lagbot check`.

Field names are a contract (other tools parse them); add fields, never rename. Unknown values are
JSON null, never a made-up number.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lagbot.core.model import Cause, GroupVerdict, PartitionVerdict
from lagbot.engine.check import CheckReport

REPORT_VERSION = 1

Remedy = Callable[[Cause], "str | None"]
"""The action that answers a cause, or None: the service's join (lagbot.service.remedies `remedy`), since the
engine names no action."""


def report_json(report: CheckReport, *, remedy: Remedy) -> dict[str, Any]:
    """The whole report as one JSON-ready object, each cause with its `remedy`."""
    return {
        "version": REPORT_VERSION,
        "taken_at": report.taken_at,
        "severity": report.worst_severity.label,
        "clusters": [
            {"cluster": name, "ok": name not in report.cluster_errors, "error": report.cluster_errors.get(name)}
            for name in report.clusters
        ],
        "groups": [group_json(v, remedy=remedy) for v in report.verdicts],
    }


def group_json(verdict: GroupVerdict, *, remedy: Remedy) -> dict[str, Any]:
    return {
        "cluster": verdict.cluster,
        "group": verdict.group,
        "state": verdict.state.value,
        "status": verdict.status.name,
        "severity": verdict.severity.label,
        "severity_reason": verdict.severity_reason,
        "total_lag": verdict.total_lag,
        "lag_seconds": _round(verdict.max_lag_seconds),
        "trend": verdict.trend.value,
        "eta_seconds": _round(verdict.eta_seconds),
        "drain_rate": _round(verdict.drain_rate),
        "baseline_produce_rates": [
            {"horizon_seconds": horizon, "rate": _round(rate)} for horizon, rate in verdict.baseline_produce
        ],
        "produce_rate": _round(verdict.produce_rate),
        "consume_rate": _round(verdict.consume_rate),
        "members": [m.owner_json() for m in verdict.members],
        "error": verdict.error,
        "partitions": [partition_json(p) for p in verdict.partitions],
        "causes": [cause_json(c, remedy(c)) for c in verdict.causes],
    }


def partition_json(p: PartitionVerdict) -> dict[str, Any]:
    return {
        "topic": p.topic,
        "partition": p.partition,
        "committed": p.committed,
        "log_end": p.log_end,
        "log_start": p.log_start,
        "lag": p.lag,
        "lag_seconds": _round(p.lag_seconds),
        "lag_seconds_lower_bound": p.lag_seconds_lower_bound,
        "status": p.status.name,
        "reason": p.reason,
        "produce_rate": _round(p.produce_rate),
        "consume_rate": _round(p.consume_rate),
        "owner": p.owner.owner_json() if p.owner else None,
        "sibling_commits": p.sibling_commits,
        "lag_seconds_method": p.lag_seconds_method,
    }


def cause_json(c: Cause, remedy: str | None) -> dict[str, Any]:
    return {
        "kind": c.kind,
        "explanation": c.explanation,
        "remediation": remedy,
        "rank": c.rank,
        "confidence": round(c.confidence, 2),
        "evidence": c.evidence,
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)
