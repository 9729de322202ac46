"""The evaluator: pure functions from a window of samples to a status, rates, lag in seconds and severity.

Nothing here reads a clock or does I/O: `now` is an argument. The rules follow Burrow's evaluator,
adapted to offsets that are polled rather than read from __consumer_offsets:

    STOP    nobody owns the partition and its committed offset did not move over the whole window
            while lag stayed above zero: the consumer is gone.
    REWIND  the committed offset went backwards somewhere in the window.
    STALL   the group is live (the partition is owned, or the group does not report owners) but the
            committed offset did not move over the whole window while lag stayed above zero.
    WARN    lag never decreased over the window and ended higher than it started.
    OK      anything else.

They are checked worst first, so a partition gets the first rule that fires; `Status` is ordered the
same way, so a group's status is the max of its partitions'. Burrow's guard applies to STOP and STALL:
a consumer that reached a broker offset seen inside the window (its committed offset is at or past the
oldest log-end of the window) is not stuck, the topic is merely quiet, so idle topics stay OK. WARN has
Burrow's rule 1 as its guard: a lag of zero at any sample of the window means the consumer kept up, so a
burst on a quiet topic that the consumer has not committed yet is not a slow consumer.
The proof is tests/unit/test_evaluate_cases.py.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from bot import messages
from bot.config import Evaluation, Level, Thresholds
from bot.model import (
    GroupSnapshot,
    GroupState,
    GroupVerdict,
    GroupWindow,
    Member,
    PartitionSample,
    PartitionVerdict,
    Severity,
    Status,
    TopicPartition,
    WindowColumns,
)

Samples = Sequence[PartitionSample]


class Ownership(Enum):
    """Who, if anyone, consumes a partition according to the newest group description."""

    OWNED = "owned"
    UNOWNED = "unowned"
    UNKNOWN = "unknown"
    """The group is live but reports no members, so owners cannot be known."""


@dataclass(frozen=True, slots=True)
class GroupPoint:
    """The group's totals at one sample time: the series severity and trend are judged on."""

    at: float
    lag: int | None
    lag_seconds: float | None


# ---------------------------------------------------------------------------------------------------
# Small facts about a window
# ---------------------------------------------------------------------------------------------------


def span(samples: Samples) -> float:
    """Seconds between the first and the last sample (0 for fewer than two)."""
    return samples[-1].at - samples[0].at if len(samples) >= 2 else 0.0


@dataclass(frozen=True, slots=True)
class Facts:
    """What the rules ask of one partition's window, gathered in one pass.

    Every partition of every group is judged every cycle (10,000 partitions x 30 samples in the
    benchmark), so the window is walked once here rather than once per rule.
    """

    samples: Samples
    committed: tuple[PartitionSample, ...]
    """The samples that carry a committed offset, oldest first."""
    unmoved: bool
    """The committed offset is the same in every committed sample (and there is at least one)."""
    zero_lag_seen: bool
    rewind: tuple[int, int] | None
    """The first (before, after) step where the committed offset went backwards."""
    after_rewind: int
    """Index in `committed` where the run after the last rewind starts (0 without a rewind)."""
    lags_never_decreased: bool
    log_end_restart: int
    """Index in `samples` after the last log-end decrease (the topic was recreated); 0 without one."""


def window_facts(samples: Samples) -> Facts:
    """Gather the Facts of a window (oldest first) in one pass."""
    committed: list[PartitionSample] = []
    zero_lag_seen, unmoved, never_decreased = False, True, True
    rewind: tuple[int, int] | None = None
    after_rewind = restart = 0
    previous_end = samples[0].log_end
    previous: PartitionSample | None = None
    for i, sample in enumerate(samples):
        if sample.log_end < previous_end:
            restart = i
        previous_end = sample.log_end
        offset = sample.committed
        if offset is None:
            continue
        lag = sample.lag or 0
        if lag == 0:
            zero_lag_seen = True
        if previous is not None:
            before = previous.committed or 0
            if offset != before:
                unmoved = False
                if offset < before:
                    rewind = rewind or (before, offset)
                    after_rewind = len(committed)
            if lag < (previous.lag or 0):
                never_decreased = False
        committed.append(sample)
        previous = sample
    return Facts(
        samples, tuple(committed), unmoved and bool(committed), zero_lag_seen, rewind, after_rewind,
        never_decreased, restart,
    )  # fmt: skip


def judgeable(facts: Facts, rules: Evaluation) -> bool:
    """Enough committed samples over a long enough span to judge behaviour (not only lag)."""
    return len(facts.committed) >= rules.min_samples and span(facts.committed) >= rules.min_span


def caught_up_in_window(facts: Facts) -> bool:
    """Burrow's guard: the consumer reached a broker offset seen inside the window.

    Its newest committed offset is at or past the oldest log-end of the window, or its lag was zero
    at some sample. Such a consumer is waiting for new messages on a quiet topic, not stuck.
    """
    last = facts.samples[-1].committed
    return (last is not None and last >= facts.samples[0].log_end) or facts.zero_lag_seen


# ---------------------------------------------------------------------------------------------------
# The rules, worst first. Each returns (status, reason) when it fires, None otherwise. Each takes the
# window's samples (or its Facts, already gathered).
# ---------------------------------------------------------------------------------------------------

Finding = tuple[Status, str]


def _facts(window: Samples | Facts) -> Facts:
    return window if isinstance(window, Facts) else window_facts(window)


def _unmoved_with_lag(facts: Facts, rules: Evaluation) -> bool:
    """The shared ground of STOP and STALL: judged, offset unmoved over the window, never caught up."""
    return judgeable(facts, rules) and facts.unmoved and not caught_up_in_window(facts)


def rule_stop(window: Samples | Facts, ownership: Ownership, rules: Evaluation) -> Finding | None:
    """Nobody owns the partition and its offset did not move over the whole window, with lag: STOP."""
    facts = _facts(window)
    if ownership is not Ownership.UNOWNED or not _unmoved_with_lag(facts, rules):
        return None
    lag = facts.samples[-1].lag or 0
    return Status.STOP, messages.reason_stop(lag, span(facts.committed), messages.nobody_owns())


def rule_rewind(window: Samples | Facts) -> Finding | None:
    """The committed offset went backwards within the window: REWIND."""
    found = _facts(window).rewind
    if found is None:
        return None
    return Status.REWIND, messages.reason_rewind(*found)


def rule_stall(window: Samples | Facts, ownership: Ownership, rules: Evaluation) -> Finding | None:
    """The group is live but the offset did not move over the whole window, with lag: STALL."""
    facts = _facts(window)
    if ownership is Ownership.UNOWNED or not _unmoved_with_lag(facts, rules):
        return None
    lag = facts.samples[-1].lag or 0
    who = messages.owned() if ownership is Ownership.OWNED else messages.owner_unknown()
    return Status.STALL, messages.reason_stall(lag, span(facts.committed), who)


def rule_warn(window: Samples | Facts, rules: Evaluation) -> Finding | None:
    """Lag never decreased over the window and ended higher than it started: WARN.

    Burrow warns on 'never decreasing' alone; we also require growth, so a consumer that keeps exact
    pace with a constant in-flight lag is not flagged forever. As in Burrow (rule 1), a lag of zero at any
    sample means the consumer kept up within the window: the growth since is new messages not yet
    committed (on a quiet topic, every message would otherwise be a WARN).
    """
    facts = _facts(window)
    committed = facts.committed
    if len(committed) < rules.min_samples or facts.zero_lag_seen or not facts.lags_never_decreased:
        return None
    first, last = committed[0].lag or 0, committed[-1].lag or 0
    if last > first:
        return Status.WARN, messages.reason_warn(first, last, span(committed))
    return None


def partition_status(window: Samples | Facts, ownership: Ownership, rules: Evaluation) -> Finding:
    """The status of one partition: the first rule that fires, worst first."""
    facts = _facts(window)
    last = facts.samples[-1]
    if last.committed is None:
        return Status.OK, messages.reason_no_commit()
    if last.lag == 0:
        return Status.OK, messages.reason_caught_up()
    found = (
        rule_stop(facts, ownership, rules)
        or rule_rewind(facts)
        or rule_stall(facts, ownership, rules)
        or rule_warn(facts, rules)
    )
    if found is not None:
        return found
    committed = facts.committed
    if len(committed) < rules.min_samples:
        return Status.OK, messages.reason_few_samples(len(committed), rules.min_samples)
    if facts.unmoved and span(committed) < rules.min_span:
        return Status.OK, messages.reason_span_short(span(committed), rules.min_span)
    if caught_up_in_window(facts):
        return Status.OK, messages.reason_caught_up_in_window()
    return Status.OK, messages.reason_ok_moving()


# ---------------------------------------------------------------------------------------------------
# Rates, ETA and lag in seconds
# ---------------------------------------------------------------------------------------------------


def produce_rate(window: Samples | Facts) -> float | None:
    """Messages/s appended to the partition over the window, from log-end offsets.

    None with fewer than two samples, no elapsed time, or a log-end that went backwards anywhere in the
    window (the topic was deleted and recreated: no meaningful rate, even once the new log has grown past
    the old end).
    """
    facts = _facts(window)
    samples = facts.samples
    if len(samples) < 2 or span(samples) <= 0 or facts.log_end_restart:
        return None
    return (samples[-1].log_end - samples[0].log_end) / span(samples)


def consume_rate(window: Samples | Facts) -> float | None:
    """Messages/s committed over the window, measured after the last rewind (a rewind is not consumption)."""
    facts = _facts(window)
    committed = facts.committed[facts.after_rewind :]
    if len(committed) < 2 or span(committed) <= 0:
        return None
    moved = (committed[-1].committed or 0) - (committed[0].committed or 0)
    return moved / span(committed)


def eta_seconds(lag: int | None, produce: float | None, consume: float | None) -> float | None:
    """Seconds until lag reaches zero at the current rates: lag / (consume - produce).

    0 when there is no lag; None when unknown or never (the consumers do not outpace the producers).
    """
    if lag == 0:
        return 0.0
    if lag is None or produce is None or consume is None or consume <= produce:
        return None
    return lag / (consume - produce)


def _log_end(sample: PartitionSample) -> int:
    return sample.log_end


def lag_seconds(samples: Samples, now: float, facts: Facts | None = None) -> tuple[float | None, bool]:
    """How long ago the oldest unconsumed message was written, from the window's (time, log-end) table.

    As Kafka Lag Exporter does, the time at which the log end passed the committed offset is found by
    linear interpolation between the two samples around it; lag in seconds is `now` minus that time.
    0 when caught up; None with no committed offset or fewer than two samples. When the committed offset
    is older than the whole window there is nothing to interpolate between: rather than extrapolating
    (which gives absurd values on bursty or idle topics), the answer is `now` minus the oldest sample,
    flagged as a lower bound. Only the samples since the log end last went backwards (the topic was
    recreated) are used: older log ends belong to another log and would place the message in it.

    Returns:
        (seconds or None, whether it is a lower bound)
    """
    if len(samples) < 2 and (samples[-1].lag or 0) > 0:
        return None, False  # behind, and one sample: nothing to interpolate between
    restart = facts.log_end_restart if facts is not None else window_facts(samples).log_end_restart
    return _lag_seconds_upto(samples, len(samples) - 1, restart, now)


def _lag_seconds_upto(samples: Samples, last: int, restart: int, now: float) -> tuple[float | None, bool]:
    """`lag_seconds` judged on samples[restart..last] only (no copies: the severity series calls it per sample)."""
    newest = samples[last]
    committed = newest.committed
    if committed is None:
        return None, False
    if committed >= newest.log_end:
        return 0.0, False
    # The last sample whose log-end was still at or below the committed offset: message `committed`
    # was written after it and no later than the next sample.
    i = bisect.bisect_right(samples, committed, lo=restart, hi=last + 1, key=_log_end) - 1
    if i < restart:
        return max(0.0, now - samples[restart].at), True
    before, after = samples[i], samples[i + 1]
    fraction = (committed - before.log_end) / (after.log_end - before.log_end)
    written_at = before.at + fraction * (after.at - before.at)
    return max(0.0, now - written_at), False


# ---------------------------------------------------------------------------------------------------
# Severity
# ---------------------------------------------------------------------------------------------------


def severity(points: Sequence[GroupPoint], thresholds: Thresholds) -> tuple[Severity, str]:
    """The highest level whose trigger holds, with the reason; levels are checked page first."""
    pending: str | None = None
    fired: bool
    reason: str | None
    for sev, level in (
        (Severity.PAGE, thresholds.page),
        (Severity.CRITICAL, thresholds.critical),
        (Severity.WARN, thresholds.warn),
    ):
        fired, reason = level_fires(points, level, sev.label)
        if fired and reason is not None:
            return sev, reason
        pending = pending or reason
    return Severity.OK, pending if pending is not None else messages.severity_ok()


def level_fires(points: Sequence[GroupPoint], level: Level, name: str) -> tuple[bool, str | None]:
    """Whether one level fires at the newest point, and why (or why it is still pending).

    A message or seconds limit must hold at every point of the last `sustained_for` seconds, and the
    window must reach back that far: a window too short to prove it leaves the level pending.
    `doubling_within` fires on its own.
    """
    if not points or points[-1].lag is None:
        return False, None
    doubled = _doubling(points, level, name)
    if doubled:
        return True, doubled
    newest = points[-1]
    checks: list[tuple[Condition | None, Callable[[float], str]]] = [
        (
            _over_messages(level),
            lambda held: messages.severity_messages(name, newest.lag or 0, level.messages or 0, held),
        ),
        (
            _over_seconds(level),
            lambda held: messages.severity_seconds(name, newest.lag_seconds or 0.0, level.seconds or 0.0, held),
        ),
    ]
    for over, describe in checks:
        if over is None or not over(newest):
            continue
        held = _held_for(points, over)
        growing_ok = not level.growing or _grew_over(points, newest.at - level.sustained_for, level.sustained_for)
        if held >= level.sustained_for and growing_ok:
            return True, describe(held)
        if growing_ok:
            return False, messages.severity_pending(name, held, level.sustained_for)
    return False, None


Condition = Callable[[GroupPoint], bool]


def _over_messages(level: Level) -> Condition | None:
    if level.messages is None:
        return None
    limit = level.messages
    return lambda p: p.lag is not None and p.lag > limit


def _over_seconds(level: Level) -> Condition | None:
    if level.seconds is None:
        return None
    limit = level.seconds
    return lambda p: p.lag_seconds is not None and p.lag_seconds > limit


def _held_for(points: Sequence[GroupPoint], over: Condition) -> float:
    """Seconds the condition has held without a break, up to the newest point."""
    start = points[-1].at
    for point in reversed(points):
        if not over(point):
            break
        start = point.at
    return points[-1].at - start


def _grew_over(points: Sequence[GroupPoint], since: float, sustained_for: float) -> bool:
    """The lag at the newest point is higher than at the first point at or after `since`.

    With no sustain period (0), growth is judged over the whole window.
    """
    recent = [p for p in points if p.lag is not None and (sustained_for <= 0 or p.at >= since)]
    return len(recent) >= 2 and (recent[-1].lag or 0) > (recent[0].lag or 0)


def _doubling(points: Sequence[GroupPoint], level: Level, name: str) -> str | None:
    if level.doubling_within is None:
        return None
    newest = points[-1].lag or 0
    if newest < level.doubling_min_lag:
        return None
    # Measured back from the newest point, like the sustain periods.
    for point in points:
        if point.at >= points[-1].at - level.doubling_within and point.lag and newest >= 2 * point.lag:
            return messages.severity_doubling(name, point.lag, newest, level.doubling_within)
    return None


# ---------------------------------------------------------------------------------------------------
# Whole groups
# ---------------------------------------------------------------------------------------------------


def ownership_of(group: GroupSnapshot | None, tp: TopicPartition) -> tuple[Ownership, Member | None]:
    """Who owns `tp` in the newest description of the group."""
    if group is None or not group.state.is_active:
        return Ownership.UNOWNED, None
    if not group.members:
        return Ownership.UNKNOWN, None
    owner = group.owner_of(tp)
    return (Ownership.OWNED, owner) if owner else (Ownership.UNOWNED, None)


def evaluate_partition(
    tp: TopicPartition, samples: Samples, group: GroupSnapshot | None, rules: Evaluation, now: float
) -> PartitionVerdict:
    """Judge one partition of a group at `now`."""
    ownership, owner = ownership_of(group, tp)
    facts = window_facts(samples)
    status, reason = partition_status(facts, ownership, rules)
    seconds, lower_bound = lag_seconds(samples, now, facts)
    last = samples[-1]
    return PartitionVerdict(
        topic=tp[0],
        partition=tp[1],
        committed=last.committed,
        log_end=last.log_end,
        log_start=last.log_start,
        lag=last.lag,
        lag_seconds=seconds,
        lag_seconds_lower_bound=lower_bound,
        status=status,
        reason=reason,
        produce_rate=produce_rate(facts),
        consume_rate=consume_rate(facts),
        owner=owner,
    )


def evaluate_partitions(window: GroupWindow, rules: Evaluation, now: float) -> tuple[PartitionVerdict, ...]:
    """`evaluate_partition` of every partition of the window that has samples, in (topic, partition) order.

    With the window's arrays (`columns`) the facts of all its partitions are gathered by a few array
    operations at once, instead of a Python loop over every sample: same verdicts, fewer steps (the
    proof is tests/unit/test_evaluate_columns.py). A partition the array route does not cover (a sample
    without a commit, a rewind, a log end that went back) is judged by `evaluate_partition` itself.
    """
    if window.columns is None:
        return tuple(
            evaluate_partition(tp, samples, window.latest, rules, now)
            for tp, samples in sorted(window.partitions.items())
            if samples
        )
    return _evaluate_columns(window, window.columns, rules, now)


def _evaluate_columns(
    window: GroupWindow, columns: WindowColumns, rules: Evaluation, now: float
) -> tuple[PartitionVerdict, ...]:
    import numpy as np  # only windows with arrays come here (see bot.window: `lagbot check` never loads numpy)

    committed, log_end = columns.committed, columns.log_end  # partitions x samples
    lags = np.maximum(log_end - committed, 0)
    last_committed = committed[:, -1:]
    # Plain: every sample committed, and neither the committed offset nor the log end ever went back. Then
    # the window's committed samples are all its samples, there is no rewind and no restart.
    plain = (
        columns.known.all(axis=1)
        & (np.diff(committed, axis=1) >= 0).all(axis=1)
        & (np.diff(log_end, axis=1) >= 0).all(axis=1)
    )
    zero_lag_seen = (lags == 0).any(axis=1)
    facts = zip(
        _listed(plain),
        _listed((committed == committed[:, :1]).all(axis=1)),  # unmoved
        _listed(zero_lag_seen),
        _listed((np.diff(lags, axis=1) >= 0).all(axis=1)),  # lags never decreased
        _listed((last_committed[:, 0] >= log_end[:, 0]) | zero_lag_seen),  # caught up in window
        _listed((log_end <= last_committed).sum(axis=1) - 1),  # bisect_right(log ends, committed) - 1
        strict=True,
    )
    times = columns.times
    n = len(times)
    window_span = times[-1] - times[0] if n >= 2 else 0.0
    plain_rules = _PlainRules(rules, n, window_span, window.latest)
    rated = n >= 2 and window_span > 0  # produce_rate and consume_rate of a plain partition are known
    verdicts = []
    for tp, (is_plain, unmoved, zero_seen, never_decreased, caught_up, below) in zip(columns.tps, facts, strict=True):
        samples = window.partitions[tp]
        if not is_plain:
            verdicts.append(evaluate_partition(tp, samples, window.latest, rules, now))
            continue
        ownership, owner = plain_rules.ownership(tp)
        status, reason = plain_rules.status(samples, ownership, unmoved, zero_seen, never_decreased, caught_up)
        first, last = samples[0], samples[-1]
        seconds, lower_bound = _plain_lag_seconds(samples, below, now)
        verdicts.append(
            PartitionVerdict(
                topic=tp[0],
                partition=tp[1],
                committed=last.committed,
                log_end=last.log_end,
                log_start=last.log_start,
                lag=last.lag,
                lag_seconds=seconds,
                lag_seconds_lower_bound=lower_bound,
                status=status,
                reason=reason,
                produce_rate=(last.log_end - first.log_end) / window_span if rated else None,
                consume_rate=((last.committed or 0) - (first.committed or 0)) / window_span if rated else None,
                owner=owner,
            )
        )
    return tuple(verdicts)


def _listed(values: Any) -> list[Any]:
    """An array's values as a list of Python ints or bools (never numpy scalars: verdicts hold plain numbers)."""
    listed: list[Any] = values.tolist()
    return listed


class _PlainRules:
    """`partition_status` and `ownership_of` for the plain partitions of one group, from their array facts.

    A plain partition (see `_evaluate_columns`) has every sample committed, so its committed samples are the
    window's samples: `judgeable` and the spans are the same for all of them, and only the facts differ.
    """

    def __init__(self, rules: Evaluation, n: int, window_span: float, latest: GroupSnapshot | None) -> None:
        self.rules = rules
        self.n = n
        self.span = window_span
        self.judgeable = n >= rules.min_samples and window_span >= rules.min_span
        self.latest = latest
        self.owners: dict[TopicPartition, Member] = {}
        if latest is not None:
            for member in reversed(latest.members):  # the first member that has a partition owns it, as owner_of
                self.owners.update(dict.fromkeys(member.assignment, member))

    def ownership(self, tp: TopicPartition) -> tuple[Ownership, Member | None]:
        latest = self.latest
        if latest is None or not latest.state.is_active:
            return Ownership.UNOWNED, None
        if not latest.members:
            return Ownership.UNKNOWN, None
        owner = self.owners.get(tp)
        return (Ownership.OWNED, owner) if owner else (Ownership.UNOWNED, None)

    def status(
        self,
        samples: Samples,
        ownership: Ownership,
        unmoved: bool,
        zero_seen: bool,
        never_decreased: bool,
        caught_up: bool,
    ) -> Finding:
        """`partition_status` of a plain partition: the same rules in the same order (no rewind can fire)."""
        rules, n, span_ = self.rules, self.n, self.span
        last_lag = samples[-1].lag or 0
        if last_lag == 0:
            return Status.OK, messages.reason_caught_up()
        unmoved_with_lag = self.judgeable and unmoved and not caught_up
        if ownership is Ownership.UNOWNED and unmoved_with_lag:
            return Status.STOP, messages.reason_stop(last_lag, span_, messages.nobody_owns())
        if ownership is not Ownership.UNOWNED and unmoved_with_lag:
            who = messages.owned() if ownership is Ownership.OWNED else messages.owner_unknown()
            return Status.STALL, messages.reason_stall(last_lag, span_, who)
        if n >= rules.min_samples and not zero_seen and never_decreased:
            first_lag = samples[0].lag or 0
            if last_lag > first_lag:
                return Status.WARN, messages.reason_warn(first_lag, last_lag, span_)
        if n < rules.min_samples:
            return Status.OK, messages.reason_few_samples(n, rules.min_samples)
        if unmoved and span_ < rules.min_span:
            return Status.OK, messages.reason_span_short(span_, rules.min_span)
        if caught_up:
            return Status.OK, messages.reason_caught_up_in_window()
        return Status.OK, messages.reason_ok_moving()


def _plain_lag_seconds(samples: Samples, below: int, now: float) -> tuple[float | None, bool]:
    """`lag_seconds` of a plain partition, given the bisect index `below` found by the arrays."""
    newest = samples[-1]
    if len(samples) < 2 and (newest.lag or 0) > 0:
        return None, False
    committed = newest.committed or 0
    if committed >= newest.log_end:
        return 0.0, False
    if below < 0:
        return max(0.0, now - samples[0].at), True
    before, after = samples[below], samples[below + 1]
    fraction = (committed - before.log_end) / (after.log_end - before.log_end)
    written_at = before.at + fraction * (after.at - before.at)
    return max(0.0, now - written_at), False


def group_points(window: GroupWindow, thresholds: Thresholds) -> list[GroupPoint]:
    """Total lag (and max lag in seconds, where a seconds threshold needs it) at each sample time."""
    totals = _lag_totals_from_columns(window.columns) if window.columns is not None else None
    if totals is None:
        totals = {}
        for samples in window.partitions.values():
            for s in samples:
                if s.lag is not None:
                    totals[s.at] = totals.get(s.at, 0) + s.lag
    needs_seconds = any(lv.seconds is not None for lv in (thresholds.warn, thresholds.critical, thresholds.page))
    seconds = _max_lag_seconds_series(window) if needs_seconds else {}
    return [GroupPoint(at=g.at, lag=totals.get(g.at), lag_seconds=seconds.get(g.at)) for g in window.samples]


def _lag_totals_from_columns(columns: WindowColumns) -> dict[float, int] | None:
    """The total known lag at each sample time, from the arrays (None when two samples share a time)."""
    times = columns.times
    if len(set(times)) != len(times) or len(columns.tps) >= 2**14:
        return None
    import numpy as np

    lags = np.where(columns.known, np.maximum(columns.log_end - columns.committed, 0), 0)
    counted = zip(times, _listed(lags.sum(axis=0)), _listed(columns.known.any(axis=0)), strict=True)
    return {at: total for at, total, any_known in counted if any_known}


def _max_lag_seconds_series(window: GroupWindow) -> dict[float, float]:
    """Max lag in seconds over the partitions at each sample time, each judged on the window up to then."""
    series: dict[float, float] = {}
    for samples in window.partitions.values():
        restart = 0
        for i, sample in enumerate(samples):
            if i and sample.log_end < samples[i - 1].log_end:
                restart = i
            if i < 1 and sample.lag:
                continue  # behind, and one sample: nothing to interpolate between (as lag_seconds)
            value, _ = _lag_seconds_upto(samples, i, restart, sample.at)
            if value is not None:
                series[sample.at] = max(series.get(sample.at, 0.0), value)
    return series


TREND_POINTS = 5
"""The trend reads the last five known totals: a window can span half an hour, and the arrow in a
headline is read as 'now' (a group draining for five checks after a long rise is shrinking)."""


def trend(points: Sequence[GroupPoint]) -> str:
    """'growing', 'shrinking' or 'steady' (within 1%) from the first to the last of the recent known totals."""
    known = [p.lag for p in points if p.lag is not None][-TREND_POINTS:]
    if len(known) < 2:
        return "unknown"
    first, last = known[0], known[-1]
    if abs(last - first) <= max(1.0, 0.01 * max(first, last)):
        return "steady"
    return "growing" if last > first else "shrinking"


def _sum_known(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def evaluate_group(window: GroupWindow, *, thresholds: Thresholds, rules: Evaluation, now: float) -> GroupVerdict:
    """Judge a whole group at `now` (causes are added by the diagnosis)."""
    latest = window.latest
    partitions = evaluate_partitions(window, rules, now)
    lags = [p.lag for p in partitions if p.lag is not None]
    total_lag = sum(lags) if lags else None
    # Rates of partitions with nothing committed are left out, as their (unknown) lag is: otherwise a group
    # whose consumed partitions keep pace would get an ETA of "never" from a partition it does not read.
    produce = _sum_known([p.produce_rate for p in partitions if p.committed is not None])
    consume = _sum_known([p.consume_rate for p in partitions if p.committed is not None])
    points = group_points(window, thresholds)
    sev, sev_reason = severity(points, thresholds)
    known_seconds = [p.lag_seconds for p in partitions if p.lag_seconds is not None]
    return GroupVerdict(
        cluster=window.cluster,
        group=window.group,
        state=latest.state if latest else (window.samples[-1].state if window.samples else GroupState.UNKNOWN),
        status=max((p.status for p in partitions), default=Status.OK),
        severity=sev,
        severity_reason=sev_reason,
        partitions=partitions,
        total_lag=total_lag,
        max_lag_seconds=max(known_seconds) if known_seconds else None,
        produce_rate=produce,
        consume_rate=consume,
        eta_seconds=eta_seconds(total_lag, produce, consume),
        trend=trend(points),
        members=latest.members if latest else (),
    )


def error_verdict(cluster: str, group: str, state: GroupState, reason: str) -> GroupVerdict:
    """A group that could not be read this cycle: status ERR, severity not judged."""
    return GroupVerdict(
        cluster=cluster,
        group=group,
        state=state,
        status=Status.ERR,
        severity=Severity.OK,
        severity_reason=messages.severity_error(reason),
        partitions=(),
        total_lag=None,
        max_lag_seconds=None,
        produce_rate=None,
        consume_rate=None,
        eta_seconds=None,
        trend="unknown",
        error=reason,
    )
