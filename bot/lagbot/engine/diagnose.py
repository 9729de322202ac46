"""Diagnosis: the likely causes of a group's lag, each with the numbers that support it.

One small pure function per cause kind; each returns a Cause or None: lagbot.engine.causes (what one verdict
shows), lagbot.engine.capacity (the rates against the members: how many replicas would keep up),
lagbot.engine.churn (the membership changing) and lagbot.engine.burst (the produce rate). `diagnose` runs them
all, lets the causes that explain others say so (lagbot.engine.explaining) and ranks what fired by confidence.
A cause names no action: what decides its remedy is on it as facts (lagbot.core.model `Fact`: a hot partition's
slow owner, a poisoned record, a burst that goes on, room to scale, a churn that explains it), and the service
joins it to the remediation that answers it (lagbot.service.remedies). Kinds are stable names that other tools
parse:

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

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from lagbot.core.model import Cause, GroupVerdict, GroupWindow, Severity, Status
from lagbot.engine import agreement
from lagbot.engine.burst import producer_burst, producer_burst_by_index, producer_burst_since_birth
from lagbot.engine.capacity import partition_ceiling, throughput_deficit
from lagbot.engine.causes import (
    data_loss,
    hot_partition,
    idle_members,
    no_active_members,
    retention_risk,
    stuck_consumer,
    unassigned_partitions,
)
from lagbot.engine.churn import rebalance_churn
from lagbot.engine.explaining import (
    churn_explains_stuck,
    poison_explains_hot,
    rates_across_membership_change,
    stuck_explains_hot,
)

if TYPE_CHECKING:  # the settings' models (pydantic): types only, so that judging loads none (lagbot.cli.early)
    from lagbot.core.config import Evaluation


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
