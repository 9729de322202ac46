"""Causes that agree with each other: what one cause explains, another must not claim.

Pure functions on a group's verdict, used by the cause rules (lagbot.engine.causes, capacity, churn, burst):

- `stuck_confidence`: a partition judged stuck on its window alone (STALL over `min_span`) is 0.9 sure; one
  judged against its siblings in a shorter window grows surer with every sibling commit it was judged on.
- `whole_members`: members all of whose partitions are stuck, so the cause names the member, not a list.
- `own_rebalance`: membership changes within the settle period of lagbot's own action that rebalances the group
  (an action that `settles`: the restart, the scale) are the rebalance that action caused, expected: they are
  not `rebalance_churn` (nor a new-cause reply).
- `settling`: a check within that settle period states no new cause; one whose window still reaches into it
  (its rates span the rebalance) states no new cause read from rates (lagbot.service.incidents).
- `deficit_explained`: the consumption the group misses is explained by stuck partitions or by one slow owner
  when every other partition keeps up; scaling would not help then, so no `throughput_deficit` (and no scale
  button) and no `partition_ceiling`; the cause that explains it says why.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence
from dataclasses import replace
from enum import StrEnum

from lagbot.core.model import Cause, GroupSample, GroupVerdict, Member, PartitionVerdict, Status
from lagbot.engine import wording

WINDOW_STALL_CONFIDENCE = 0.9
SIBLING_BASE_CONFIDENCE = 0.55
SIBLING_STEP_CONFIDENCE = 0.05
KEEPS_UP = 0.95
"""The partitions outside the explanation keep up when they consume at least this share of what they get."""
SLOW_FACTOR = 3.0
"""A member is a slow owner when its fastest partition is read this many times slower than the others' median."""


def at_partition_ceiling(verdict: GroupVerdict) -> bool:
    """Every partition is owned by a member of its own: one consumer per partition, the most Kafka allows.

    Counting members is not enough: with an uneven assignment (a member owning two partitions) or an
    unassigned partition, more parallelism is still possible, so that is a deficit, not a ceiling.
    """
    partitions = len(verdict.partitions)
    owners = {p.owner.member_id for p in verdict.partitions if p.owner is not None}
    return partitions > 0 and len(owners) == partitions


def stalled(verdict: GroupVerdict) -> list[PartitionVerdict]:
    return [p for p in verdict.partitions if p.status is Status.STALL]


def poisoned(verdict: GroupVerdict, stuck: Sequence[PartitionVerdict]) -> list[PartitionVerdict]:
    """The stuck partitions whose owner reads some of its other partitions (they consume, they are OK): the owner is
    alive and polling, so the one partition it does not get past holds a record it fails on (a poison message)."""
    found = []
    for p in stuck:
        if p.owner is None:
            continue
        mine = [
            q
            for q in verdict.partitions
            if q is not p and q.owner is not None and q.owner.member_id == p.owner.member_id
        ]
        if any(q.status is Status.OK and (q.consume_rate or 0.0) > 0 for q in mine):
            found.append(p)
    return found


def stuck_confidence(stuck: Sequence[PartitionVerdict]) -> float:
    """0.9 when a partition stalled over the whole judged window; else 0.55 + 0.05 per sibling commit, at most 0.9."""
    if any(p.sibling_commits == 0 for p in stuck):
        return WINDOW_STALL_CONFIDENCE
    seen = max((p.sibling_commits for p in stuck), default=0)
    return min(WINDOW_STALL_CONFIDENCE, round(SIBLING_BASE_CONFIDENCE + SIBLING_STEP_CONFIDENCE * seen, 2))


def whole_members(verdict: GroupVerdict, stuck: Sequence[PartitionVerdict]) -> list[Member]:
    """Members that own at least one of the group's partitions and all of whose owned partitions are stuck.

    Only in a group of several members: with one, its owner is already the whole group and named as the owner.
    """
    if len(verdict.members) < 2:
        return []
    stuck_tps = {p.tp for p in stuck}
    found = []
    for member in verdict.members:
        owned = [p.tp for p in verdict.partitions if p.owner is not None and p.owner.member_id == member.member_id]
        if owned and all(tp in stuck_tps for tp in owned):
            found.append(member)
    return found


def slow_owner(verdict: GroupVerdict) -> Member | None:
    """The one member whose partitions are all read far slower than the other members' (median per partition)."""
    by_member: dict[str, list[PartitionVerdict]] = {}
    for p in verdict.partitions:
        if p.owner is not None:
            by_member.setdefault(p.owner.member_id, []).append(p)
    slow = []
    for member_id, owned in by_member.items():
        mine = [p.consume_rate for p in owned if p.consume_rate is not None]
        theirs = [
            p.consume_rate
            for p in verdict.partitions
            if p.consume_rate is not None and p.owner is not None and p.owner.member_id != member_id
        ]
        if mine and theirs and (median := statistics.median(theirs)) > 0 and max(mine) * SLOW_FACTOR <= median:
            slow.append(owned[0].owner)
    return slow[0] if len(slow) == 1 else None


def deficit_explained(verdict: GroupVerdict) -> str | None:
    """Why scaling would not help, when stuck partitions or one slow owner explain the missing consumption.

    The explained partitions are the stuck ones, or else those of the one slow owner. Every other partition must
    have known rates and keep up (consume >= 95% of produce): then the shortfall is theirs alone and more replicas
    would not read the explained partitions any faster (Kafka gives each partition to one member).
    """
    stuck = stalled(verdict)
    owner = None if stuck else slow_owner(verdict)
    if owner is not None:
        explained = [p for p in verdict.partitions if p.owner is not None and p.owner.member_id == owner.member_id]
    else:
        explained = stuck
    left_out = {id(p) for p in explained}  # a group's partitions are distinct: equal only to themselves
    rest = [p for p in verdict.partitions if id(p) not in left_out and p.committed is not None]
    if not explained or not _keep_up(rest):
        return None
    produce = sum(p.produce_rate or 0.0 for p in rest)
    consume = sum(p.consume_rate or 0.0 for p in rest)
    if owner is not None:
        return wording.scaling_would_not_help_slow_owner(owner.client_id, len(explained), len(rest), consume, produce)
    return wording.scaling_would_not_help_stuck(len(explained), len(rest), consume, produce)


def _keep_up(partitions: Sequence[PartitionVerdict]) -> bool:
    if any(p.produce_rate is None or p.consume_rate is None for p in partitions):
        return False
    produce = sum(p.produce_rate or 0.0 for p in partitions)
    consume = sum(p.consume_rate or 0.0 for p in partitions)
    return consume >= KEEPS_UP * produce


def membership_changes(samples: Sequence[GroupSample]) -> list[float]:
    """The sample times at which state, member ids or generation differ from the sample before."""
    return [
        b.at
        for a, b in itertools.pairwise(samples)
        if a.state != b.state or a.member_ids != b.member_ids or a.generation != b.generation
    ]


def churns(changes: int, rebalancing: int) -> bool:
    """Enough changes (2) or rebalancing snapshots (2) in a window to call it churn."""
    return changes >= 2 or rebalancing >= 2


def own_rebalance(verdict: GroupVerdict, settles: bool, since: object, until: object) -> GroupVerdict:
    """The verdict without `rebalance_churn` when the churn is the rebalance lagbot's own action caused.

    `settles`: whether the action that ran rebalances the group (its own flag: `Remediation.settles`);
    `since` and `until` are read from the incident's remediation state (anything else there means no action of
    ours). The changes and rebalancing snapshots at times from `since` (when the action ran) to `until` (the end of
    its settle period) are expected; only the others count. When they are too few to be churn, the cause is dropped
    and the others re-ranked.
    """
    churn = next((c for c in verdict.causes if c.kind == "rebalance_churn"), None)
    if churn is None or not settles:
        return verdict
    if not isinstance(since, int | float) or not isinstance(until, int | float):
        return verdict
    outside = [t for t in _times(churn, "changed_at") if not since <= t <= until]
    rebalancing = [t for t in _times(churn, "rebalancing_at") if not since <= t <= until]
    if churns(len(outside), len(rebalancing)):
        return verdict
    if churn.evidence.get("departures") == 1 and outside == _times(churn, "changed_at"):
        return verdict  # one kick-out seen (no churn claimed), none of its changes our action's: it stands
    kept = [c for c in verdict.causes if c is not churn]
    return replace(verdict, causes=tuple(replace(c, rank=i + 1) for i, c in enumerate(kept)))


class Settling(StrEnum):
    """How far a check is from lagbot's own action that rebalances the group (`settling`): which new causes it may
    state."""

    NO = "no"
    """Past the settle period, and its window past it too: every cause may be stated."""
    RATES = "rates"
    """Past the settle period, but the window's rates still span it: causes read from rates are not stated yet."""
    ALL = "all"
    """Within the settle period: no new cause is stated."""


RATE_CAUSES = frozenset({"throughput_deficit", "partition_ceiling", "producer_burst", "hot_partition"})
"""Causes judged from the window's produce and consume rates (lagbot.engine.diagnose)."""


def settling(settles: bool, since: object, until: object, *, window: float, now: float) -> Settling:
    """Where `now` is against the settle period of lagbot's own action that rebalances the group (`settles`, and
    `since` to `until`, read from the incident's remediation state as for `own_rebalance`; anything else there means
    no action of ours): within it, or within `window` seconds after it (the check's rates are measured over that
    window, across the rebalance)."""
    if not settles:
        return Settling.NO
    if not isinstance(since, int | float) or not isinstance(until, int | float) or now < since:
        return Settling.NO
    if now <= until:
        return Settling.ALL
    return Settling.RATES if now <= until + window else Settling.NO


def held(settling_now: Settling, kind: str) -> bool:
    """Whether a new cause of this kind waits (is not stated) at a check that is `settling_now`."""
    return settling_now is Settling.ALL or (settling_now is Settling.RATES and kind in RATE_CAUSES)


def _times(cause: Cause, key: str) -> list[float]:
    found = cause.evidence.get(key)
    return [float(t) for t in found] if isinstance(found, list) else []
