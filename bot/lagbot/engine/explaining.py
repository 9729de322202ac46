"""The causes that explain others: once every cause has fired, what one explains changes how another is
said, what it offers and where it ranks (lagbot.engine.diagnose runs these in order, then ranks).

- `churn_explains_stuck`: a churn with a mechanism (a crash loop, kick-outs) is the cause of the stuck partitions and
  the deficit; it ranks first and they carry `Fact.CHURN_EXPLAINS`.
- `rates_across_membership_change`: capacity causes measured across a membership change are not trusted.
- `poison_explains_hot`: a hot partition that is the poisoned one is no slow owner (`Fact.POISON`).
- `stuck_explains_hot`: a hot partition that is one of the stuck partitions ranks just below the stuck consumer.
"""

from __future__ import annotations

from dataclasses import replace

from lagbot.core.model import Cause, Fact, GroupWindow
from lagbot.engine import agreement, wording
from lagbot.engine.capacity import CAPACITY_CAUSES


def churn_explains_stuck(found: list[Cause]) -> list[Cause]:
    """When the churn has a mechanism (a crash loop, poll-interval kick-outs), the stuck partitions and the deficit are
    its effects: every other cause carries `Fact.CHURN_EXPLAINS` (so `stuck_consumer` is answered by no restart: a
    crash-looping member restarts already, a kicked-out one needs configuration; and no cause by more members: they
    die or are kicked out the same way), `stuck_consumer` says so, and the churn, which names the mechanism, ranks
    first."""
    churn = next((c for c in found if c.kind == "rebalance_churn" and c.evidence.get("mechanism")), None)
    if churn is None:
        return found
    kept = []
    for c in found:
        if c is churn:
            kept.append(c)
            continue
        if c.kind == "stuck_consumer":
            c = replace(c, explanation=wording.stuck_by_churn(c.explanation))
        confidence = min(c.confidence, churn.confidence - 0.01)
        kept.append(replace(c, confidence=confidence, facts=c.facts | {Fact.CHURN_EXPLAINS}))
    return kept


UNTRUSTED_RATES_CONFIDENCE = 0.45
"""A capacity cause whose rates span a membership change ranks below every cause that does not rest on them."""


def rates_across_membership_change(found: list[Cause], window: GroupWindow | None) -> list[Cause]:
    """A window in which the membership changed (a member left, joined or was replaced; the state or generation
    changed) measured its rates across a rebalance, in which no member reads: the capacity causes keep their facts,
    say their rates are not trusted, offer no remedy and rank below the causes that do not rest on those rates."""
    if window is None or not any(c.kind in CAPACITY_CAUSES for c in found):
        return found
    changes = len(agreement.membership_changes(window.samples))
    if not changes:
        return found
    return [
        replace(
            c,
            explanation=f"{c.explanation}; {wording.rates_across_membership_change(changes)}",
            facts=c.facts | {Fact.RATES_UNTRUSTED},
            confidence=min(c.confidence, UNTRUSTED_RATES_CONFIDENCE),
            evidence={**c.evidence, "rates_trusted": False, "membership_changes": changes},
        )
        if c.kind in CAPACITY_CAUSES
        else c
        for c in found
    ]


def poison_explains_hot(found: list[Cause]) -> list[Cause]:
    """A hot partition that is the poisoned one (`poison_record`) is no slow owner to restart, nor keys to drain: the
    record is (`Fact.POISON`)."""
    poison = next((c for c in found if c.kind == "stuck_consumer" and c.evidence.get("poison")), None)
    if poison is None:
        return found
    stuck = poison.evidence.get("partitions")
    return [
        replace(c, facts=c.facts | {Fact.POISON})
        if c.kind == "hot_partition" and isinstance(stuck, list) and c.evidence.get("partition") in stuck
        else c
        for c in found
    ]


def stuck_explains_hot(found: list[Cause]) -> list[Cause]:
    """A hot partition that is one of the stuck partitions holds the lag because its owner commits nothing: the stuck
    consumer is the mechanism, the hot partition its lag share, so it ranks just below the stuck consumer (a sibling
    rule's STALL is less sure than the window's, and would otherwise rank the lag share first)."""
    stuck = next((c for c in found if c.kind == "stuck_consumer"), None)
    if stuck is None:
        return found
    partitions = stuck.evidence.get("partitions")
    return [
        replace(c, confidence=min(c.confidence, stuck.confidence - 0.01))
        if c.kind == "hot_partition" and isinstance(partitions, list) and c.evidence.get("partition") in partitions
        else c
        for c in found
    ]
