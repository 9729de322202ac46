"""The causes the scale answers (read without loading the remediation: lagbot.remediations.packages)."""

from __future__ import annotations

from lagbot.core.model import Cause, CauseKind, Fact

ADDRESSES = frozenset({CauseKind.NO_ACTIVE_MEMBERS, CauseKind.THROUGHPUT_DEFICIT, CauseKind.PRODUCER_BURST})


def answers(cause: Cause) -> bool:
    """None that a churn with a mechanism explains (more members die or are kicked out the same way); a producer
    burst only while it goes on and a member can still be added that would own a partition; a throughput deficit
    only when its rates are trusted (not measured across a rebalance)."""
    if cause.facts & {Fact.CHURN_EXPLAINS, Fact.RATES_UNTRUSTED}:
        return False
    if cause.kind == CauseKind.PRODUCER_BURST:
        return {Fact.ONGOING, Fact.SCALABLE} <= cause.facts
    return True
