"""Capacity: the group's consume rate against its produce rate and its members, and the causes sized from them.

- `deficit_rates`: consumers commit slower than producers write while lag grows;
- `replicas_needed`: how many replicas would keep up, with headroom (the scale remediation sizes its target by it);
- `throughput_deficit`: more replicas would keep up; `partition_ceiling`: every partition has its own member already,
  so more would sit idle. Neither is stated when stuck partitions or one slow owner explain the shortfall
  (lagbot.engine.agreement `deficit_explained`).
"""

from __future__ import annotations

import math

from lagbot.core.model import Cause, GroupVerdict, Trend
from lagbot.engine import agreement, wording

HEADROOM = 1.2
"""Replicas are sized for 20% more than the produce rate, so the backlog drains too."""

CAPACITY_CAUSES = frozenset({"partition_ceiling", "throughput_deficit"})
"""Causes that size capacity from the window's produce and consume rates."""


def deficit_rates(verdict: GroupVerdict) -> tuple[float, float] | None:
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
    deficit = deficit_rates(verdict)
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
    deficit = deficit_rates(verdict)
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
