"""The causes one verdict shows of itself: deleted or soon deleted messages, stuck partitions (or a poisoned
record), no members, partitions nobody owns, one hot partition, idle members. One small pure function per cause
kind, each returning a Cause or None (lagbot.engine.diagnose runs them).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from lagbot.core import messages
from lagbot.core.model import Cause, Fact, GroupState, GroupVerdict, PartitionVerdict, Trend
from lagbot.engine import agreement, wording
from lagbot.engine.capacity import deficit_rates

HOT_SHARE = 0.6
"""A partition holding at least this share of the group's lag is hot."""
SKEW_FACTOR = 3.0
"""A rate this many times the median of the other partitions' is 'far above' (or 1/x: 'far below')."""
RETENTION_RISK = 0.8


def _lagging(verdict: GroupVerdict) -> list[PartitionVerdict]:
    return [p for p in verdict.partitions if (p.lag or 0) > 0]


def _owner_text(p: PartitionVerdict, verdict: GroupVerdict) -> str:
    if p.owner is not None:
        return messages.owner(p.owner.client_id, p.owner.host, p.owner.member_id)
    if not verdict.state.is_active:
        return wording.owner_none(verdict.state.value)
    return wording.owner_unknown_short() if not verdict.members else wording.nobody_owns()


def data_loss(verdict: GroupVerdict) -> Cause | None:
    """Committed < log start: the messages in between were deleted by retention before being read."""
    lost = [p for p in verdict.partitions if p.committed is not None and p.committed < p.log_start]
    if not lost:
        return None
    missed = sum(p.log_start - (p.committed or 0) for p in lost)
    worst = max(lost, key=lambda p: p.log_start - (p.committed or 0))
    return Cause(
        kind="data_loss",
        explanation=wording.cause_data_loss(len(lost), missed, worst.topic, worst.partition),
        confidence=0.99,
        evidence={"partitions": [p.partition for p in lost], "messages_deleted_unread": missed},
    )


def retention_risk(verdict: GroupVerdict) -> Cause | None:
    """Lag >= 80% of the messages the partition retains, on a log retention already truncates (log start > 0):
    the next deletion will take messages the group has not read."""
    at_risk = []
    for p in verdict.partitions:
        retained = p.log_end - p.log_start
        # A log that starts at 0 has never been truncated: retention is not (yet) deleting anything.
        if p.log_start <= 0:
            continue
        if p.lag and retained > 0 and p.committed is not None and p.committed >= p.log_start:
            share = p.lag / retained
            if share >= RETENTION_RISK:
                at_risk.append((share, p))
    if not at_risk:
        return None
    share, worst = max(at_risk, key=lambda sp: sp[0])
    return Cause(
        kind="retention_risk",
        explanation=wording.cause_retention_risk(worst.topic, worst.partition, share, len(at_risk)),
        confidence=0.9,
        evidence={
            "partition": worst.partition,
            "topic": worst.topic,
            "lag_share_of_retained": round(share, 3),
        },
    )


def stuck_consumer(verdict: GroupVerdict) -> Cause | None:
    """Partitions owned (or with owners unknown) whose committed offset does not move while they lag."""
    stalled = agreement.stalled(verdict)
    if not stalled:
        return None
    worst = max(stalled, key=lambda p: p.lag or 0)
    by_owner = {id(p.owner): p for p in stalled}  # the text is the owner's: once per owner
    owners = sorted({_owner_text(p, verdict) for p in by_owner.values()})
    whole = agreement.whole_members(verdict, stalled)
    why_not_scale = agreement.deficit_explained(verdict) if deficit_rates(verdict) else None
    evidence: dict[str, object] = {
        "partitions": [p.partition for p in stalled],
        "owners": [p.owner.owner_json() if p.owner else None for p in stalled],
    }
    if any(p.sibling_commits for p in stalled):
        evidence["sibling_commits"] = max(p.sibling_commits for p in stalled)
    if whole:
        evidence["stuck_members"] = [m.owner_json() for m in whole]
    poisoned = agreement.poisoned(verdict, stalled)
    if poisoned and len(poisoned) == len(stalled):
        return poison_record(verdict, stalled, evidence)
    return Cause(
        kind="stuck_consumer",
        explanation=wording.cause_stuck(
            [p.partition for p in stalled],
            worst.topic,
            sum(p.lag or 0 for p in stalled),
            owners,
            whole=[messages.owner(m.client_id, m.host, m.member_id) for m in whole],
            why_not_scale=why_not_scale or "",
        ),
        confidence=agreement.stuck_confidence(stalled),
        evidence=evidence,
    )


POISON_CONFIDENCE = 0.92
"""A partition stuck while its own owner commits its other partitions is surely stuck on a record: it ranks above the
hot partition (at most 0.9) that the same partition is."""


def poison_record(verdict: GroupVerdict, stalled: list[PartitionVerdict], evidence: dict[str, object]) -> Cause:
    """`stuck_consumer` of partitions whose owners read their other partitions (`agreement.poisoned`): each is stuck at
    one record; no restart and no scale moves past it (`Fact.POISON`: fix the handler, or skip the record)."""
    owners = {p.owner.member_id for p in stalled if p.owner is not None}
    read = sum(
        q.consume_rate or 0.0
        for q in verdict.partitions
        if q not in stalled and q.owner is not None and q.owner.member_id in owners
    )
    worst = max(stalled, key=lambda p: p.lag or 0)
    offsets = [(p.partition, p.committed or 0) for p in stalled]
    text = wording.cause_stuck(
        [p.partition for p in stalled],
        worst.topic,
        sum(p.lag or 0 for p in stalled),
        sorted({_owner_text(p, verdict) for p in stalled}),
    )
    return Cause(
        kind="stuck_consumer",
        explanation=f"{text}; {wording.poison_record(offsets, read)}",
        confidence=POISON_CONFIDENCE,
        evidence={**evidence, "poison": True, "stuck_at": [o for _, o in offsets]},
        facts=frozenset({Fact.POISON}),
    )


def no_active_members(verdict: GroupVerdict) -> Cause | None:
    """The group has no live members (Empty or Dead) while it has lag."""
    if verdict.state not in (GroupState.EMPTY, GroupState.DEAD) or not verdict.total_lag:
        return None
    growing = verdict.trend is Trend.GROWING
    return Cause(
        kind="no_active_members",
        explanation=wording.cause_no_members(verdict.state.value, verdict.total_lag, growing),
        confidence=0.95 if growing else 0.8,
        evidence={"state": verdict.state.value, "total_lag": verdict.total_lag, "trend": verdict.trend.value},
    )


def unassigned_partitions(verdict: GroupVerdict) -> Cause | None:
    """A Stable group with members, yet some of its partitions are owned by nobody."""
    if verdict.state is not GroupState.STABLE or not verdict.members:
        return None
    # Only topics the group still reads (some member is assigned part of them): a group keeps committed
    # offsets of topics it no longer subscribes to, and those have no owner by design.
    read = {topic for member in verdict.members for topic, _ in member.assignment}
    orphans = [p for p in verdict.partitions if p.owner is None and p.topic in read]
    if not orphans:
        return None
    return Cause(
        kind="unassigned_partitions",
        explanation=wording.cause_unassigned([f"{p.topic}-{p.partition}" for p in orphans], len(verdict.members)),
        confidence=0.85,
        evidence={"partitions": [[p.topic, p.partition] for p in orphans]},
    )


def hot_partition(verdict: GroupVerdict) -> Cause | None:
    """One partition holds most of the lag; key skew if it is written far faster, slow owner if read far slower."""
    lagging = _lagging(verdict)
    total = verdict.total_lag or 0
    if len(verdict.partitions) < 2 or not lagging or total <= 0:
        return None
    if any(p.lag is None for p in verdict.partitions):
        return None  # a partition of unknown lag (nothing committed) may hold more: no share can be claimed
    hot = max(lagging, key=lambda p: p.lag or 0)
    share = (hot.lag or 0) / total
    if share < HOT_SHARE:
        return None
    others = [p for p in verdict.partitions if p is not hot]
    why = _hot_reason(hot, others)
    explanation = wording.cause_hot(
        hot.topic, hot.partition, share, why, _owner_text(hot, verdict), hot.consume_rate, hot.produce_rate
    )
    why_not_scale = agreement.deficit_explained(verdict) if why == "slow_owner" and deficit_rates(verdict) else None
    return Cause(
        kind="hot_partition",
        explanation=f"{explanation}; {why_not_scale}" if why_not_scale else explanation,
        confidence=0.6 + 0.3 * share,
        evidence={
            "topic": hot.topic,
            "partition": hot.partition,
            "lag_share": round(share, 3),
            "why": why,
            "produce_rate": hot.produce_rate,
            "consume_rate": hot.consume_rate,
        },
        facts=frozenset({Fact.SLOW_OWNER}) if why == "slow_owner" else frozenset(),
    )


def _hot_reason(hot: PartitionVerdict, others: Sequence[PartitionVerdict]) -> str:
    """'key_skew', 'slow_owner' or 'unknown' from the hot partition's rates against the others' medians."""
    other_produce = [p.produce_rate for p in others if p.produce_rate is not None]
    other_consume = [p.consume_rate for p in others if p.consume_rate is not None]
    if hot.produce_rate is not None and other_produce:
        median = statistics.median(other_produce)
        if hot.produce_rate > 0 and hot.produce_rate >= SKEW_FACTOR * max(median, 1e-9):
            return "key_skew"
    if hot.consume_rate is not None and other_consume:
        median = statistics.median(other_consume)
        if median > 0 and hot.consume_rate * SKEW_FACTOR <= median:
            return "slow_owner"
    return "unknown"


def idle_members(verdict: GroupVerdict) -> Cause | None:
    """More members than partitions: the extra members own nothing."""
    members, partitions = len(verdict.members), len(verdict.partitions)
    if not members or members <= partitions:
        return None
    idle = [m.client_id for m in verdict.members if not m.assignment]
    return Cause(
        kind="idle_members",
        explanation=wording.cause_idle(members, partitions, idle),
        confidence=0.5,  # no remedy: more members would idle too; fewer would not read faster
        evidence={"members": members, "partitions": partitions, "idle": idle},
    )
