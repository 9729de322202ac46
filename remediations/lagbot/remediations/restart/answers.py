"""The causes the restart answers (read without loading the remediation: lagbot.remediations.packages)."""

from __future__ import annotations

from lagbot.core.model import Cause, CauseKind, Fact

ADDRESSES = frozenset({CauseKind.STUCK_CONSUMER, CauseKind.UNASSIGNED_PARTITIONS, CauseKind.HOT_PARTITION})


def answers(cause: Cause) -> bool:
    """Stuck partitions, unless a record holds them (a restarted member meets the same record) or a churn with a
    mechanism explains them (the member dies and comes back already, or needs configuration); a hot partition only
    when its owner is slow (a hot partition of skewed keys is the drain's) and no record holds it."""
    if cause.kind == CauseKind.STUCK_CONSUMER:
        return not cause.facts & {Fact.POISON, Fact.CHURN_EXPLAINS}
    if cause.kind == CauseKind.HOT_PARTITION:
        return Fact.SLOW_OWNER in cause.facts and Fact.POISON not in cause.facts
    return True
