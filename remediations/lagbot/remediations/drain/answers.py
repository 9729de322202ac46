"""The causes the drain answers (read without loading the remediation, nor Spark: lagbot.remediations.packages)."""

from __future__ import annotations

from lagbot.core.model import Cause, CauseKind, Fact

ADDRESSES = frozenset({CauseKind.RETENTION_RISK, CauseKind.PARTITION_CEILING, CauseKind.HOT_PARTITION})


def answers(cause: Cause) -> bool:
    """A hot partition only when its owner is not slow (a slow owner is the restart's) and no record holds it; a
    partition ceiling only when its rates are trusted (not measured across a rebalance)."""
    if Fact.RATES_UNTRUSTED in cause.facts:
        return False
    if cause.kind == CauseKind.HOT_PARTITION:
        return not cause.facts & {Fact.SLOW_OWNER, Fact.POISON}
    return True
