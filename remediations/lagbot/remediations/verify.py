"""Verification: after an action, do the next checks show lag draining, standing still, or getting worse?

Pure functions over the checks taken since the execution (oldest first; the first is the baseline, the
check taken when the action ran). The rules, worst news first after the trivial ones:

1. fewer than two checks: PENDING (nothing to compare yet);
2. the newest lag is unknown: PENDING, or NO_CHANGE once `no_change_after` checks passed without news;
3. the newest check is healthy (status OK, severity OK): RESOLVED;
4. past the first `settle_checks` checks (the action's own disruption: a restart or a scale makes the group
   rebalance, which pauses consumption and lifts lag for a moment), severity rose above the baseline's, or
   lag is over the baseline by more than `worse_margin` and still rising: WORSE (escalate);
5. lag fell by at least `min_drop` of itself from its peak in the recent checks: IMPROVING, with the drain
   rate (from that peak, so a rebalance's bump does not make it look slow) and ETA, unless the newest verdict's
   own trend says it is not draining now (growing or steady): then with the lag figures and that trend only;
6. `no_change_after` checks since the execution and no such fall: NO_CHANGE ("no improvement");
7. otherwise PENDING.

"Recent" is the last `no_change_after` + 1 checks, so NO_CHANGE means "not draining over the last N checks",
and a group that drained and then stopped is caught too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from lagbot.core.model import GroupVerdict, Severity, Status, Trend
from lagbot.remediations import wording
from lagbot.remediations.base import Progress, Verification


class VerifyRules(BaseModel):
    """How checks after an action are judged; a policy rule may set its own."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    no_change_after: int = Field(default=3, ge=1, le=100)
    """Checks after the action without a real fall in lag before it is called 'no improvement'."""
    worse_margin: float = Field(default=0.1, ge=0, le=10)
    """Lag over the baseline by more than this share (and still rising) is 'worse'."""
    min_drop: float = Field(default=0.02, ge=0, le=1)
    """A fall in lag smaller than this share of the lag is noise, not draining."""
    settle_checks: int = Field(default=2, ge=0, le=20)
    """Checks right after the action in which a rise is not 'worse': the rebalance a restart or a scale causes
    pauses consumption for a few seconds, so lag briefly climbs over the baseline."""


@dataclass(frozen=True, slots=True)
class Check:
    """One check's verdict and, when known, when it was taken."""

    verdict: GroupVerdict
    at: float | None = None

    @property
    def lag(self) -> int | None:
        return None if self.verdict.error is not None else self.verdict.total_lag


def checks_of(verdicts: Sequence[GroupVerdict], times: Sequence[float] | None) -> list[Check]:
    """Pair verdicts with their times (None when not given). Raises ValueError on a length mismatch."""
    if times is None:
        return [Check(v) for v in verdicts]
    if len(times) != len(verdicts):
        raise ValueError(f"{len(verdicts)} verdicts but {len(times)} times")
    return [Check(v, t) for v, t in zip(verdicts, times, strict=True)]


def assess(checks: Sequence[Check], rules: VerifyRules | None = None) -> Verification:
    """Judge the checks since an action (checks[0] is the baseline, taken when it ran). See the module doc."""
    rules = rules or VerifyRules()
    after = len(checks) - 1
    if after < 1:
        return Verification(Progress.PENDING, wording.verify_pending(0, rules.no_change_after))
    baseline, latest = checks[0], checks[-1]
    if latest.lag is None:
        return _unknown(latest, after, rules)
    if healthy(latest.verdict):
        return Verification(Progress.RESOLVED, wording.verify_resolved(latest.lag))
    worse = worse_than_baseline(checks, rules) if after > rules.settle_checks else None
    if worse is not None:
        return worse
    recent = [c for c in checks[-(rules.no_change_after + 1) :] if c.lag is not None]
    improving = draining(recent, rules)
    if improving is not None:
        return improving
    if after >= rules.no_change_after:
        first = recent[0].lag if recent else baseline.lag
        return Verification(Progress.NO_CHANGE, wording.verify_no_change(after, first, latest.lag))
    return Verification(Progress.PENDING, wording.verify_pending(after, rules.no_change_after))


def healthy(verdict: GroupVerdict) -> bool:
    """The group is back to normal: no partition in trouble and under every threshold."""
    return verdict.error is None and verdict.status is Status.OK and verdict.severity is Severity.OK


def worse_than_baseline(checks: Sequence[Check], rules: VerifyRules) -> Verification | None:
    """Severity rose since the baseline, or lag is over it by more than the margin and still rising."""
    baseline, latest = checks[0], checks[-1]
    if baseline.verdict.error is None and latest.verdict.severity > baseline.verdict.severity:
        detail = wording.verify_worse_severity(
            baseline.verdict.severity.label, latest.verdict.severity.label, latest.lag
        )
        return Verification(Progress.WORSE, detail)
    if baseline.lag is None or latest.lag is None:
        return None
    previous = next((c.lag for c in reversed(checks[:-1]) if c.lag is not None), baseline.lag)
    if latest.lag > baseline.lag * (1 + rules.worse_margin) and latest.lag > previous:
        return Verification(Progress.WORSE, wording.verify_worse(baseline.lag, latest.lag))
    return None


def draining(recent: Sequence[Check], rules: VerifyRules) -> Verification | None:
    """IMPROVING when lag fell by a real amount from its peak in `recent` (oldest first), with rate and ETA."""
    if len(recent) < 2:
        return None
    first, last = max(recent[:-1], key=lambda c: c.lag or 0), recent[-1]
    assert first.lag is not None and last.lag is not None
    drop = first.lag - last.lag
    if drop <= 0 or drop < rules.min_drop * first.lag:
        return None
    rate = drain_rate(first, last)
    eta = last.lag / rate if rate else None
    if rate is None and not_draining_now(last.verdict):
        detail = wording.verify_fell_not_draining(first.lag, last.lag, str(last.verdict.trend))
    else:
        detail = wording.verify_improving(rate, eta, first.lag, last.lag)
    return Verification(Progress.IMPROVING, detail, drain_rate=rate, eta_seconds=eta)


def not_draining_now(verdict: GroupVerdict) -> bool:
    """The verdict's own trend says the lag does not fall now (growing or steady, or a drain rate that is not
    positive): the root says so (no ETA), and so must the thread."""
    if verdict.trend in (Trend.GROWING, Trend.STEADY):
        return True
    return verdict.drain_rate is not None and verdict.drain_rate <= 0


def drain_rate(first: Check, last: Check) -> float | None:
    """Messages/s by which lag falls: the newest verdict's drain rate, else from the two checks, else its rates.

    The newest verdict's `drain_rate` is the rate behind its trend and ETA in the incident's root message, so the
    thread's "draining at" and ETA say the same as the root; when its trend is growing or steady (its drain rate not
    positive, or within the steady band), there is no drain rate (None): the root shows no ETA either, so the
    thread must not (the issue 22 demo said "draining at 21.9 msg/s, ETA 29 s" beside "↗ growing, ETA never").
    Without a rate of the verdict's own, the two checks' lag and times; without
    times, the evaluator's (consume - produce) of the newest verdict. A rate that is not positive is no drain
    rate (None).
    """
    assert first.lag is not None and last.lag is not None
    if not_draining_now(last.verdict):
        return None  # the lag fell between the checks, but the newest verdict's own rates say it does not now
    if last.verdict.drain_rate is not None and last.verdict.drain_rate > 0:
        return last.verdict.drain_rate
    if first.at is not None and last.at is not None and last.at > first.at:
        rate = (first.lag - last.lag) / (last.at - first.at)
    else:
        produce, consume = last.verdict.produce_rate, last.verdict.consume_rate
        rate = consume - produce if produce is not None and consume is not None else 0.0
    return rate if rate > 0 else None


def _unknown(latest: Check, after: int, rules: VerifyRules) -> Verification:
    reason = latest.verdict.error or wording.verify_lag_unknown()
    if after >= rules.no_change_after:
        return Verification(Progress.NO_CHANGE, wording.verify_unknown_for(after, reason))
    return Verification(Progress.PENDING, wording.verify_cannot_judge(reason))
