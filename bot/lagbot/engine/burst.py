"""`producer_burst` against the broker's own history: the recent produce rate against the baseline before it.

The window alone compares its newest interval with its earlier ones, which miss a burst that began before the
window or filled it. The time index (lagbot.engine.timeindex) gives the group's produce rate over horizons before the
check (`GroupVerdict.baseline_produce`); from two of them the rate over the short recent horizon and the rate
over the time before it follow:

    before = (long rate x long horizon - recent rate x recent horizon) / (long horizon - recent horizon)

An ongoing burst (0.85) ranks above `partition_ceiling` and `throughput_deficit`, which it explains for now.
A burst is a recent rate at least BURST_FACTOR times the rate before it (which must be above 0: a topic that was
idle has no baseline to compare with). The longest horizon with data is the baseline; of the shorter ones, the
one with the largest ratio is reported. The burst is still going when the window's own produce rate (or, with one
sample, the recent rate) is still at least BURST_FACTOR times the baseline; else it just ended.
"""

from __future__ import annotations

from dataclasses import dataclass

from lagbot.core.model import Cause, GroupVerdict
from lagbot.engine import agreement, wording

BURST_FACTOR = 3.0


@dataclass(frozen=True, slots=True)
class Burst:
    recent: float
    recent_horizon: float
    before: float
    before_horizon: float
    ongoing: bool

    @property
    def factor(self) -> float:
        return self.recent / self.before


def burst_vs_baseline(verdict: GroupVerdict) -> Burst | None:
    """The strongest burst the verdict's baselines show, or None."""
    known = [(h, r) for h, r in verdict.baseline_produce if r is not None and h > 0]
    if len(known) < 2:
        return None
    longest, long_rate = known[-1]
    found: Burst | None = None
    for horizon, rate in known[:-1]:
        before = (long_rate * longest - rate * horizon) / (longest - horizon)
        if before <= 0 or rate < BURST_FACTOR * before:
            continue
        now_rate = verdict.produce_rate if verdict.produce_rate is not None else rate
        burst = Burst(rate, horizon, before, longest - horizon, now_rate >= BURST_FACTOR * before)
        if found is None or burst.factor > found.factor:
            found = burst
    return found


def producer_burst_by_index(verdict: GroupVerdict) -> Cause | None:
    """`producer_burst` with the numbers from the broker's history, or None when it shows no burst."""
    burst = burst_vs_baseline(verdict)
    if burst is None:
        return None
    return Cause(
        kind="producer_burst",
        explanation=wording.cause_burst_vs_baseline(
            burst.recent, burst.recent_horizon, burst.before, burst.before_horizon, burst.ongoing, verdict.produce_rate
        ),
        confidence=0.85 if burst.ongoing else 0.6,
        # More replicas help only while more is coming and there is parallelism left to add.
        remediation="scale" if burst.ongoing and not agreement.at_partition_ceiling(verdict) else None,
        evidence={
            "recent_rate": round(burst.recent, 2),
            "recent_horizon_seconds": burst.recent_horizon,
            "baseline_rate": round(burst.before, 2),
            "baseline_horizon_seconds": burst.before_horizon,
            "ongoing": burst.ongoing,
            "method": "time_index",
        },
    )
