"""`producer_burst`: the recent produce rate against the rate before it, from the broker's own history or the window.

The window alone compares its newest interval with its earlier ones (`producer_burst`, when there is no history),
which miss a burst that began before the window or filled it. The time index (lagbot.engine.timeindex) gives the
group's produce rate over horizons before the check (`GroupVerdict.baseline_produce`); from two of them the rate
over the short recent horizon and the rate over the time before it follow:

    before = (long rate x long horizon - recent rate x recent horizon) / (long horizon - recent horizon)

An ongoing burst (0.85) ranks above `partition_ceiling` and `throughput_deficit`, which it explains for now.
A burst is a recent rate at least BURST_FACTOR times the rate before it (which must be above 0: a topic that was
idle has no baseline to compare with). The longest horizon with data is the baseline; of the shorter ones, the
one with the largest ratio is reported. The burst is still going when the window's own produce rate (or, with one
sample, the recent rate) is still at least BURST_FACTOR times the baseline; else it just ended.

A young topic (its history shorter than all horizons but one: "no data that old") has no baseline there, but the
time index holds its whole short history: when its oldest retained record was written (`GroupVerdict.born_at`) the
log end was the log start, exactly. Its baselines are the rate from then to the window's first sample, against the
window's own rate (still going while the window's newest interval is still BURST_FACTOR times it), and the rate from
then to a horizon with data, against the rate over that horizon (`producer_burst_since_birth`): a burst that began
before the window is compared with the time before it, not with a baseline it is part of.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from lagbot.core.model import Cause, Fact, GroupVerdict, GroupWindow, PartitionSample, TopicPartition
from lagbot.engine import agreement, wording

BURST_FACTOR = 3.0


@dataclass(frozen=True, slots=True)
class Burst:
    recent: float
    recent_horizon: float
    before: float
    before_horizon: float
    ongoing: bool
    now: float | None = None
    """The produce rate now when the rule measured it (the window's newest interval); None: the window's rate."""

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
        evidence={
            "recent_rate": round(burst.recent, 2),
            "recent_horizon_seconds": burst.recent_horizon,
            "baseline_rate": round(burst.before, 2),
            "baseline_horizon_seconds": burst.before_horizon,
            "ongoing": burst.ongoing,
            "method": "time_index",
        },
        facts=burst_facts(burst, verdict),
    )


def burst_facts(burst: Burst, verdict: GroupVerdict) -> frozenset[Fact]:
    """What decides a burst's remedy: whether more is still coming (`Fact.ONGOING`) and whether there is parallelism
    left to add (`Fact.SCALABLE`: not one consumer per partition already)."""
    facts = {Fact.ONGOING} if burst.ongoing else set()
    if not agreement.at_partition_ceiling(verdict):
        facts.add(Fact.SCALABLE)
    return frozenset(facts)


def enough_horizons(baselines: Sequence[tuple[float, float | None]]) -> bool:
    """Whether `burst_vs_baseline` has the two known horizons it compares; if not, the young-topic rule may."""
    return sum(1 for h, r in baselines if r is not None and h > 0) >= 2


def group_born_at(window: GroupWindow, born: Mapping[TopicPartition, float]) -> float | None:
    """When the group's oldest retained record was written (`GroupVerdict.born_at`): the earliest of its partitions'
    (lagbot.engine.timeindex `BaselineCache.born`), when every partition that held anything at the window's first
    sample has such a time (else some history is older than it: None). A partition still empty then adds nothing."""
    times = []
    for tp, samples in window.partitions.items():
        if not samples:
            continue
        if tp in born:
            times.append(born[tp])
        elif samples[0].log_end > samples[0].log_start:
            return None
    return min(times, default=None)


def producer_burst_since_birth(verdict: GroupVerdict, window: GroupWindow | None) -> Cause | None:
    """`producer_burst` of a young topic (fewer than two horizons with data, and a birth: `born_at`), from what its
    history holds: the strongest of (1) the window's produce rate against the rate from the birth to the window's
    first sample (`window_vs_birth`) and (2) each horizon with data against the rate from the birth to that horizon
    (`burst_vs_baseline` with the topic's whole life as its longest horizon: `life`). None when neither is
    BURST_FACTOR times its baseline (which must be above 0)."""
    if (
        verdict.born_at is None
        or window is None
        or len(window.samples) < 2
        or enough_horizons(verdict.baseline_produce)
    ):
        return None
    full = _full(window)
    life = _life(window, full, verdict.born_at)
    found = [window_vs_birth(window, full, verdict.born_at)]
    if life is not None:
        known = tuple((h, r) for h, r in verdict.baseline_produce if r is not None and 0 < h < life[0])
        found.append(burst_vs_baseline(replace(verdict, baseline_produce=(*known, life))))
    bursts = [b for b in found if b is not None]
    if not bursts:
        return None
    burst = max(bursts, key=lambda b: b.factor)
    now_rate = burst.now if burst.now is not None else verdict.produce_rate
    if now_rate is None:
        now_rate = burst.recent
    return Cause(
        kind="producer_burst",
        explanation=wording.cause_burst_since_birth(
            burst.recent, burst.recent_horizon, burst.before, burst.before_horizon, burst.ongoing, now_rate
        ),
        confidence=0.85 if burst.ongoing else 0.6,
        evidence={
            "recent_rate": round(burst.recent, 2),
            "recent_horizon_seconds": round(burst.recent_horizon, 3),
            "baseline_rate": round(burst.before, 2),
            "baseline_horizon_seconds": round(burst.before_horizon, 3),
            "ongoing": burst.ongoing,
            "method": "time_index_since_birth",
        },
        facts=burst_facts(burst, verdict),
    )


def _full(window: GroupWindow) -> list[Sequence[PartitionSample]]:
    """The partitions observed at every sample time, as the window's rule takes them (a partition's samples are a
    subsequence of the group's sample times: equal length means all of them)."""
    return [s for s in window.partitions.values() if len(s) == len(window.samples)]


def _life(window: GroupWindow, full: Sequence[Sequence[PartitionSample]], born_at: float) -> tuple[float, float] | None:
    """(seconds from the birth to the window's newest sample, the produce rate over them): everything the partitions
    hold was written since the birth."""
    newest = window.samples[-1].at
    if not full or newest <= born_at:
        return None
    return newest - born_at, sum(s[-1].log_end - s[-1].log_start for s in full) / (newest - born_at)


def window_vs_birth(window: GroupWindow, full: Sequence[Sequence[PartitionSample]], born_at: float) -> Burst | None:
    """The window's produce rate against the rate from the birth to its first sample; still going while its newest
    interval is at least BURST_FACTOR times that. None when under the factor, or nothing was written before."""
    times = [g.at for g in window.samples]
    first, previous, newest = times[0], times[-2], times[-1]
    if not full or first <= born_at or newest <= previous:
        return None
    before = sum(s[0].log_end - s[0].log_start for s in full) / (first - born_at)
    recent = sum(s[-1].log_end - s[0].log_end for s in full) / (newest - first)
    latest = sum(s[-1].log_end - s[-2].log_end for s in full) / (newest - previous)
    if before <= 0 or recent < BURST_FACTOR * before:
        return None
    return Burst(recent, newest - first, before, first - born_at, latest >= BURST_FACTOR * before, latest)


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
