"""Diagnosis: the likely causes of a group's lag, each with the numbers that support it.

One small pure function per cause kind; each returns a Cause or None. `diagnose` runs them all and ranks
what fired by confidence. A cause names no action: what decides its remedy is on it as facts (lagbot.core.model
`Fact`: a hot partition's slow owner, a poisoned record, a burst that goes on, room to scale, a churn that explains
it), and the service joins it to the remediation that answers it (lagbot.service.remedies). Kinds are stable names
that other tools parse:

    data_loss               committed < log start: messages were deleted before they were read
    retention_risk          lag >= 80% of the retained messages: deletion will overtake the consumer soon
    stuck_consumer          partition owned (or owner unknown) but its committed offset does not move (over
                            the window, or while other members' partitions commit: lagbot.engine.rules)
    no_active_members       the group is Empty or Dead while it has lag
    unassigned_partitions   the group is Stable with members, yet some partitions have no owner
    hot_partition           one partition holds most of the lag (key skew or a slow owner)
    partition_ceiling       a throughput deficit with as many members as partitions: scaling cannot help
    throughput_deficit      consumers commit slower than producers write; with the replicas that would keep up
                            (not when stuck partitions or one slow owner explain it: lagbot.engine.agreement)
    producer_burst          the recent produce rate is >= 3x the broker's history before it (lagbot.engine.burst; of a
                            young topic, the window's rate against the rate since its oldest record), or without
                            that history, the window's newest interval >= 3x its trailing average
    rebalance_churn         state, member ids or generation keep changing between snapshots; with lag, the mechanism:
                            a crash loop (offsets still: the member keeps dying) or poll-interval kick-outs (offsets
                            move between: configuration), and then the other causes carry `churn_explains`
    idle_members            more members than partitions: some members have nothing to do (stated only for a group
                            that is behind; nothing answers it: scaling cannot help)
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from lagbot.core import messages
from lagbot.core.model import (
    Cause,
    Fact,
    GroupSample,
    GroupState,
    GroupVerdict,
    GroupWindow,
    PartitionVerdict,
    Severity,
    Status,
    Trend,
)
from lagbot.engine import agreement, wording
from lagbot.engine.burst import producer_burst_by_index, producer_burst_since_birth

if TYPE_CHECKING:  # the settings' models (pydantic): types only, so that judging loads none (lagbot.cli.early)
    from lagbot.core.config import Evaluation

HOT_SHARE = 0.6
"""A partition holding at least this share of the group's lag is hot."""
SKEW_FACTOR = 3.0
"""A rate this many times the median of the other partitions' is 'far above' (or 1/x: 'far below')."""
BURST_FACTOR = 3.0
RETENTION_RISK = 0.8
HEADROOM = 1.2
"""Replicas are sized for 20% more than the produce rate, so the backlog drains too."""


def diagnose(verdict: GroupVerdict, window: GroupWindow | None, rules: Evaluation) -> tuple[Cause, ...]:
    """All causes that fire for a group, ranked (1 = most likely)."""
    if verdict.error is not None or not verdict.partitions:
        return ()
    checks: list[Callable[[], Cause | None]] = [
        lambda: data_loss(verdict),
        lambda: retention_risk(verdict),
        lambda: stuck_consumer(verdict),
        lambda: no_active_members(verdict),
        lambda: unassigned_partitions(verdict),
        lambda: rebalance_churn(window, verdict, rules.quiet_seconds),
    ]
    if worth_explaining(verdict, rules):
        checks += [
            lambda: idle_members(verdict),
            lambda: hot_partition(verdict),
            lambda: partition_ceiling(verdict),
            lambda: throughput_deficit(verdict),
            lambda: (
                producer_burst_by_index(verdict)
                or producer_burst_since_birth(verdict, window)
                or producer_burst(window, scalable=not agreement.at_partition_ceiling(verdict))
            ),
        ]
    found = [cause for check in checks if (cause := check()) is not None]
    found = churn_explains_stuck(found)
    found = poison_explains_hot(found)
    found = stuck_explains_hot(found)
    found = rates_across_membership_change(found, window)
    found.sort(key=lambda c: -c.confidence)
    return tuple(_ranked(c, i + 1) for i, c in enumerate(found))


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


CAPACITY_CAUSES = frozenset({"partition_ceiling", "throughput_deficit"})
"""Causes that size capacity from the window's produce and consume rates."""
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


def worth_explaining(verdict: GroupVerdict, rules: Evaluation) -> bool:
    """Lag-distribution causes are only worth stating for a group that is behind, not for a few in flight.

    Behind: a partition is not OK, or the severity is over OK, or the group's lag is at least `diagnose_min_lag`
    messages and more than `quiet_seconds` old. A group that keeps up at 2,000 msg/s with auto-commit's 5 s cadence
    has 10,000 messages in flight that are a few seconds old: that is no trouble, and no cause is stated for it.
    """
    lag = verdict.total_lag or 0
    if lag <= 0:
        return False
    if verdict.status >= Status.WARN or verdict.severity >= Severity.WARN:
        return True
    return lag >= rules.diagnose_min_lag and (verdict.max_lag_seconds or 0.0) > rules.quiet_seconds


def _ranked(cause: Cause, rank: int) -> Cause:
    return replace(cause, rank=rank)


def _lagging(verdict: GroupVerdict) -> list[PartitionVerdict]:
    return [p for p in verdict.partitions if (p.lag or 0) > 0]


def _owner_text(p: PartitionVerdict, verdict: GroupVerdict) -> str:
    if p.owner is not None:
        return messages.owner(p.owner.client_id, p.owner.host, p.owner.member_id)
    if not verdict.state.is_active:
        return wording.owner_none(verdict.state.value)
    return wording.owner_unknown_short() if not verdict.members else wording.nobody_owns()


# ---------------------------------------------------------------------------------------------------
# One function per cause
# ---------------------------------------------------------------------------------------------------


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
    why_not_scale = agreement.deficit_explained(verdict) if _deficit(verdict) else None
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
    why_not_scale = agreement.deficit_explained(verdict) if why == "slow_owner" and _deficit(verdict) else None
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


def _deficit(verdict: GroupVerdict) -> tuple[float, float] | None:
    """(produce, consume) when consumers commit slower than producers write and lag grows; else None."""
    produce, consume = verdict.produce_rate, verdict.consume_rate
    if produce is None or consume is None or produce <= 0 or consume >= produce:
        return None
    if verdict.trend is not Trend.GROWING or consume <= 0:
        return None
    return produce, consume


def replicas_needed(produce: float, consume: float, members: int, partitions: int) -> int:
    """Replicas that would keep up (with headroom), from the per-member consume rate; capped at partitions."""
    per_member = consume / max(members, 1)
    # Rounded before ceil so float noise (234 / (13/3) = 54.000000000000007) does not add a replica.
    wanted = math.ceil(round(produce * HEADROOM / per_member, 6)) if per_member > 0 else partitions
    return max(1, min(wanted, partitions))


def throughput_deficit(verdict: GroupVerdict) -> Cause | None:
    """Consumers commit slower than producers write: how many replicas would keep up (at most one per partition)."""
    deficit = _deficit(verdict)
    if deficit is None or agreement.deficit_explained(verdict) is not None:
        return None  # stuck partitions or a slow owner explain the shortfall (their cause says why)
    produce, consume = deficit
    partitions = len(verdict.partitions)
    members = len(verdict.members)
    if members >= partitions > 0:
        # Scaling cannot add parallelism: partition_ceiling explains it, or (an unassigned partition, an
        # uneven assignment) unassigned_partitions / idle_members point at the assignment instead.
        return None
    target = replicas_needed(produce, consume, members, partitions) if members else None
    return Cause(
        kind="throughput_deficit",
        explanation=wording.cause_deficit(produce, consume, members, target, partitions),
        confidence=0.75,
        evidence={
            "produce_rate": round(produce, 2),
            "consume_rate": round(consume, 2),
            "members": members,
            "replicas_needed": target,
            "partitions": partitions,
        },
    )


def partition_ceiling(verdict: GroupVerdict) -> Cause | None:
    """A deficit while every partition already has its own member: more replicas would sit idle."""
    deficit = _deficit(verdict)
    partitions = len(verdict.partitions)
    if (
        deficit is None
        or not agreement.at_partition_ceiling(verdict)
        or agreement.deficit_explained(verdict) is not None
    ):
        return None
    produce, consume = deficit
    return Cause(
        kind="partition_ceiling",
        explanation=wording.cause_ceiling(produce, consume, partitions),
        confidence=0.8,
        evidence={
            "produce_rate": round(produce, 2),
            "consume_rate": round(consume, 2),
            "partitions": partitions,
        },
    )


def producer_burst(window: GroupWindow | None, *, scalable: bool = True) -> Cause | None:
    """The newest interval's produce rate is >= 3x the trailing average over the rest of the window: a burst that goes
    on (`Fact.ONGOING`), `Fact.SCALABLE` when `scalable` (not one consumer per partition already)."""
    if window is None or len(window.samples) < 3:
        return None
    times = [g.at for g in window.samples]
    # Only partitions observed at every sample time: a partition that appeared mid-window is not a burst.
    # A partition's samples are a subsequence of the group's sample times, so equal length means all of them.
    columns = window.columns  # every partition has every sample (and there is one): the log ends are its arrays'
    full = [] if columns is not None else [s for s in window.partitions.values() if len(s) == len(times)]
    if columns is None and not full:
        return None
    recent_dt = times[-1] - times[-2]
    trailing_dt = times[-2] - times[0]
    if recent_dt <= 0 or trailing_dt <= 0:
        return None
    if columns is not None:
        ends = columns.log_end[:, (0, -2, -1)].T.tolist()
        first, previous, newest = (sum(column) for column in ends)
    else:
        first, previous, newest = (sum(samples[i].log_end for samples in full) for i in (0, -2, -1))
    recent = (newest - previous) / recent_dt
    trailing = (previous - first) / trailing_dt
    if trailing <= 0 or recent < BURST_FACTOR * trailing:
        return None
    return Cause(
        kind="producer_burst",
        explanation=wording.cause_burst(recent, trailing),
        confidence=0.7,
        evidence={"recent_rate": round(recent, 2), "trailing_rate": round(trailing, 2)},
        facts=frozenset({Fact.ONGOING, Fact.SCALABLE} if scalable else {Fact.ONGOING}),
    )


MECHANISM_CONFIDENCE = 0.95
"""A churn whose mechanism is named (`churn_mechanism`) outranks the stuck partitions it causes (0.9)."""


def rebalance_churn(
    window: GroupWindow | None, verdict: GroupVerdict | None = None, quiet_seconds: float = 8.0
) -> Cause | None:
    """State, member ids or generation changed between snapshots at least twice in the window; with the group's lag,
    the mechanism when the offsets say which (`churn_mechanism`)."""
    if window is None or len(window.samples) < 2:
        return None
    samples = window.samples
    changed_at = agreement.membership_changes(samples)
    rebalancing_at = [s.at for s in samples if s.state.is_rebalancing]
    changes, rebalancing = len(changed_at), len(rebalancing_at)
    if not agreement.churns(changes, rebalancing):
        return kicked_out_once(window, verdict, quiet_seconds) if verdict is not None else None
    explanation = wording.cause_churn(changes, rebalancing, len(samples), samples[-1].at - samples[0].at)
    evidence: dict[str, object] = {
        "changes": changes,
        "rebalancing_samples": rebalancing,
        "samples": len(samples),
        "changed_at": changed_at,
        "rebalancing_at": rebalancing_at,
    }
    confidence = min(0.9, 0.5 + 0.1 * changes)
    left = departures(samples)
    mechanism = churn_mechanism(verdict, quiet_seconds) if verdict is not None and left else None
    if verdict is not None and mechanism is not None:
        lag = verdict.total_lag or 0
        said = wording.churn_crash_loop(lag) if mechanism == "crash_loop" else wording.churn_kicked_out(lag)
        explanation, confidence = f"{explanation}: {said}", MECHANISM_CONFIDENCE
        evidence["mechanism"] = mechanism
    return Cause(
        kind="rebalance_churn",
        explanation=explanation,
        confidence=confidence,
        evidence=evidence,
    )


KICKED_ONCE_CONFIDENCE = 0.85
"""One departure and a rejoin is less sure than churn (a deploy replaces a member so too), but outranks the stuck
partitions and capacity causes it explains."""


def kicked_out_once(window: GroupWindow, verdict: GroupVerdict, quiet_seconds: float) -> Cause | None:
    """One member left and a new one joined in the window (`rejoined`) while the group is behind and its offsets moved
    (`churn_mechanism` says 'kicked_out'): what a window shorter than two poll-interval kick-outs sees of them. The
    mechanism is named as for churn, with less confidence; not churn, so no churn of two changes is claimed."""
    samples = window.samples
    if departures(samples) != 1 or not rejoined(samples) or churn_mechanism(verdict, quiet_seconds) != "kicked_out":
        return None
    changed_at = agreement.membership_changes(samples)
    return Cause(
        kind="rebalance_churn",
        explanation=wording.churn_kicked_out_once(verdict.total_lag or 0),
        confidence=KICKED_ONCE_CONFIDENCE,
        evidence={
            "changes": len(changed_at),
            "rebalancing_samples": sum(1 for s in samples if s.state.is_rebalancing),
            "samples": len(samples),
            "changed_at": changed_at,
            "rebalancing_at": [s.at for s in samples if s.state.is_rebalancing],
            "mechanism": "kicked_out",
            "departures": 1,
        },
    )


def rejoined(samples: Sequence[GroupSample]) -> bool:
    """After the snapshot at which a member was gone, a member id never seen before it joined, and the newest snapshot
    has as many members as before the departure: the group got its member back (not a scale-down, not Empty)."""
    for i, (a, b) in enumerate(itertools.pairwise(samples)):
        if set(a.member_ids) - set(b.member_ids):
            seen = {m for s in samples[: i + 1] for m in s.member_ids}
            later = {m for s in samples[i + 1 :] for m in s.member_ids}
            return bool(later - seen) and len(samples[-1].member_ids) >= len(a.member_ids)
    return False


def departures(samples: Sequence[GroupSample]) -> int:
    """How many times a member id present at one snapshot was gone at the next (members joining are not counted)."""
    return sum(1 for a, b in itertools.pairwise(samples) if set(a.member_ids) - set(b.member_ids))


def churn_mechanism(verdict: GroupVerdict, quiet_seconds: float) -> str | None:
    """What keeps the members changing, from the group's offsets, when the group is behind: 'crash_loop' when no
    lagging partition's offset moved over the window (a member that dies before it commits, and comes back), or
    'kicked_out' when they moved (a member that commits some batches, then outlasts max.poll.interval.ms on one, is
    kicked out and rejoins). Asked of a churning group (2 changes or more) in which a member left (members only
    joining are a scale-up). None without lag worth a cause: a partition not OK, or lag more than
    `quiet_seconds` old (a member that comes and goes beside members that keep up is churn, no mechanism of lag)."""
    lagging = [p for p in verdict.partitions if (p.lag or 0) > 1 and p.committed is not None]
    behind = verdict.status >= Status.WARN or (verdict.max_lag_seconds or 0.0) > quiet_seconds
    if not lagging or not behind:
        return None
    if all((p.consume_rate or 0.0) <= 0 for p in lagging):
        return "crash_loop"
    return "kicked_out"


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
