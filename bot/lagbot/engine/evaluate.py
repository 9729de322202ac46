"""The evaluator: a group's window to its verdict: partition statuses, totals, rates, ETA, trend, severity.

Nothing here reads a clock or does I/O: `now` is an argument. The per-partition rules live in lagbot.engine.rules
(STOP, REWIND, STALL, WARN, on a window's lagbot.engine.facts) and lagbot.engine.rates (rates and lag in seconds);
this module judges each partition by the per-partition route (its Facts, the rule functions) or, for the plain
partitions of a window with arrays, by the array route (the array forms of the same rules, lagbot.engine.rows), and
judges the group.
The proof is tests/engine/test_evaluate_cases.py (every case both ways) and tests/engine/test_evaluate_columns.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

from lagbot.core.model import (
    GroupSnapshot,
    GroupState,
    GroupVerdict,
    GroupWindow,
    PartitionVerdict,
    Severity,
    Status,
    TopicPartition,
    Trend,
    WindowColumns,
    partition_verdict_of,
    partition_verdicts,
)
from lagbot.engine import wording
from lagbot.engine.batch import TOTALS_LIMIT, GroupRows, TimeIndex, judge_stack, lag_totals
from lagbot.engine.facts import Facts, Samples, plain_facts, window_facts
from lagbot.engine.ownership import Owners
from lagbot.engine.rates import consume_rate, lag_seconds, lag_seconds_upto, produce_rate
from lagbot.engine.rows import plain_rows
from lagbot.engine.rules import partition_status
from lagbot.engine.siblings import SiblingStall, stuck_vs_siblings, stuck_vs_siblings_rows

if TYPE_CHECKING:  # types only: judging loads no settings model (pydantic)
    from lagbot.core.config import Evaluation, Level, Thresholds


class GroupPoint(NamedTuple):
    """The group's totals at one sample time: the series severity and trend are judged on. A named tuple: immutable,
    and made for every sample of every group each cycle (60,000 at 2,000 groups x 30 samples), at a third of a
    frozen dataclass's cost."""

    at: float
    lag: int | None
    lag_seconds: float | None


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
    return Severity.OK, pending if pending is not None else wording.severity_ok()


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
            lambda held: wording.severity_messages(name, newest.lag or 0, level.messages or 0, held),
        ),
        (
            _over_seconds(level),
            lambda held: wording.severity_seconds(name, newest.lag_seconds or 0.0, level.seconds or 0.0, held),
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
            return False, wording.severity_pending(name, held, level.sustained_for)
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
            return wording.severity_doubling(name, point.lag, newest, level.doubling_within)
    return None


# ---------------------------------------------------------------------------------------------------
# Whole groups
# ---------------------------------------------------------------------------------------------------


def evaluate_partition(
    tp: TopicPartition, samples: Samples, group: GroupSnapshot | None, rules: Evaluation, now: float
) -> PartitionVerdict:
    """Judge one partition of a group at `now`."""
    return partition_verdict(tp, window_facts(samples), Owners(group), rules, now)


def partition_verdict(
    tp: TopicPartition,
    facts: Facts,
    owners: Owners,
    rules: Evaluation,
    now: float,
    sibling: SiblingStall | None = None,
) -> PartitionVerdict:
    """The verdict of one partition from its Facts: the one place both routes of the evaluator meet the rules.

    `sibling` is the group rule's finding for this partition (`stuck_vs_siblings`): a STALL, which replaces an
    OK or WARN of the window rules (a window rule that fires worse keeps its answer).
    """
    ownership, owner = owners.of(tp)
    status, reason = partition_status(facts, ownership, rules)
    sibling_commits = 0
    if sibling is not None and status <= Status.WARN:
        (status, reason), sibling_commits = sibling.finding, sibling.sibling_commits
    seconds, lower_bound = lag_seconds(facts.samples, now, facts)
    last = facts.last
    return partition_verdict_of(  # PartitionVerdict's fields by position (lagbot.core.model)
        tp[0],
        tp[1],
        last.committed,
        last.log_end,
        last.log_start,
        last.lag,
        seconds,
        lower_bound,
        status,
        reason,
        produce_rate(facts),
        consume_rate(facts),
        owner,
        sibling_commits,
        None if seconds is None else "window",
    )


def evaluate_partitions(
    window: GroupWindow, rules: Evaluation, now: float, index: TimeIndex | None = None, rows: GroupRows | None = None
) -> tuple[PartitionVerdict, ...]:
    """`evaluate_partition` of every partition of the window that has samples, in (topic, partition) order, with the
    time index's figures of lag in seconds when `index` is given.

    With the window's arrays (`columns`) its plain partitions (see `plain_facts`) are judged all at once, by the
    array forms of the rules (lagbot.engine.rows `PlainRows`), instead of a Python loop over every sample and
    rule: by the window's own arrays, or with those of the other windows of its sample times when `rows` is given
    (lagbot.engine.batch `group_rows`, what they found of this window's rows). Any other partition (a sample without a
    commit, a rewind, a log end that went back) has its Facts gathered by `window_facts` and is judged by
    `partition_verdict`. The proof that both routes give the same verdicts, case by case, is
    tests/engine/test_evaluate_cases.py; tests/engine/test_evaluate_columns.py compares random histories.
    """
    owners = Owners(window.latest)
    if window.columns is not None:
        found = rows if rows is not None else judge_stack([(window, window.columns)], rules, now, index)[0]
        return _evaluate_columns(window, window.columns, found, owners, rules, now, index)
    facts = {tp: window_facts(samples) for tp, samples in sorted(window.partitions.items()) if samples}
    siblings = stuck_vs_siblings(facts, owners, rules)
    verdicts = (partition_verdict(tp, found, owners, rules, now, siblings.get(tp)) for tp, found in facts.items())
    return tuple(verdicts if index is None else map(index.improve, verdicts))


def _evaluate_columns(
    window: GroupWindow,
    columns: WindowColumns,
    rows: GroupRows,
    owners: Owners,
    rules: Evaluation,
    now: float,
    index: TimeIndex | None,
) -> tuple[PartitionVerdict, ...]:
    """`evaluate_partitions` of a window with arrays: its plain partitions by rows, the others one by one."""
    tps = columns.tps  # sorted, and every partition has every sample
    plain = [tps[i] for i in rows.at] if len(rows.at) < len(tps) else list(tps)
    others = {}
    if len(plain) < len(tps):
        as_rows = set(plain)
        others = {tp: window_facts(window.partitions[tp]) for tp in tps if tp not in as_rows}
    siblings = stuck_vs_siblings_rows(plain, rows, others, owners, rules)
    verdicts = plain_verdicts(plain, rows, siblings)
    if not others:
        return tuple(verdicts)
    judged = dict(zip(plain, verdicts, strict=True))
    other_verdicts = {tp: partition_verdict(tp, others[tp], owners, rules, now, siblings.get(tp)) for tp in others}
    if index is not None:
        other_verdicts = {tp: index.improve(verdict) for tp, verdict in other_verdicts.items()}
    return tuple(judged[tp] if tp in judged else other_verdicts[tp] for tp in tps)


def plain_verdicts(
    tps: Sequence[TopicPartition], rows: GroupRows, siblings: Mapping[TopicPartition, SiblingStall]
) -> list[PartitionVerdict]:
    """The verdicts of the plain partitions `tps`, from what the array rules found of them (`rows`: their findings,
    figures of lag in seconds, with the time index's where it wins, as `TimeIndex.improve` would make them, rates and
    newest offsets), as `partition_verdict` makes them, with the sibling rule's findings (`siblings`)."""
    findings, sibling_commits = rows.findings, [0] * len(tps)
    if siblings:
        findings = list(findings)
        for j, sibling in enumerate(map(siblings.get, tps)):
            if sibling is not None and findings[j][0] <= Status.WARN:
                findings[j], sibling_commits[j] = sibling.finding, sibling.sibling_commits
    statuses, reasons = zip(*findings, strict=True) if findings else ((), ())
    # PartitionVerdict's fields in their order, a column each (lagbot.core.model `partition_verdicts`).
    return partition_verdicts(
        [tp[0] for tp in tps],
        [tp[1] for tp in tps],
        rows.committed,
        rows.log_end,
        rows.log_start,
        rows.lags,
        rows.seconds,
        rows.bounds,
        statuses,
        reasons,
        rows.produce,
        rows.consume,
        [owner for _, owner in rows.owned],
        sibling_commits,
        rows.methods,
    )


def column_facts(columns: WindowColumns, partitions: Mapping[TopicPartition, Samples]) -> dict[TopicPartition, Facts]:
    """The Facts of the plain partitions of a window, from its arrays (the others are left out)."""
    rows = plain_rows(columns)
    found = zip(
        rows.at,
        rows.unmoved.tolist(),
        rows.zero_lag_seen.tolist(),
        rows.lags_never_decreased.tolist(),
        rows.still_since.tolist(),
        strict=True,
    )
    return {
        columns.tps[i]: plain_facts(
            partitions[columns.tps[i]],
            unmoved=unmoved,
            zero_lag_seen=zero_seen,
            lags_never_decreased=never_down,
            still_since=still,
        )
        for i, unmoved, zero_seen, never_down, still in found
    }


def group_points(window: GroupWindow, thresholds: Thresholds, rows: GroupRows | None = None) -> list[GroupPoint]:
    """Total lag (and max lag in seconds, where a seconds threshold needs it) at each sample time; the totals from
    the window's arrays (or its `rows`, which found them with the other windows of its sample times) where it can."""
    totals = None
    if rows is not None:
        totals = rows.totals
    elif window.columns is not None:
        totals = _lag_totals_from_columns(window.columns)
    if totals is None:
        totals = {}
        for samples in window.partitions.values():
            for s in samples:
                if s.lag is not None:
                    totals[s.at] = totals.get(s.at, 0) + s.lag
    needs_seconds = any(lv.seconds is not None for lv in (thresholds.warn, thresholds.critical, thresholds.page))
    seconds = _max_lag_seconds_series(window) if needs_seconds else {}
    return [GroupPoint(g.at, totals.get(g.at), seconds.get(g.at)) for g in window.samples]


def _lag_totals_from_columns(columns: WindowColumns) -> dict[float, int] | None:
    """The total known lag at each sample time, from the arrays (None when two samples share a time or the group has
    too many partitions for exact int64 sums)."""
    found = lag_totals(columns, [0, len(columns.tps)])
    return None if found is None or len(columns.tps) >= TOTALS_LIMIT else found[0]


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
            value, _ = lag_seconds_upto(samples, i, restart, sample.at)
            if value is not None:
                series[sample.at] = max(series.get(sample.at, 0.0), value)
    return series


TREND_POINTS = 5
"""The trend reads the last five known totals: a window can span half an hour, and the arrow in a
headline is read as 'now' (a group draining for five checks after a long rise is shrinking)."""


def trend(points: Sequence[GroupPoint]) -> Trend:
    """Growing, shrinking or steady (within 1%) from the first to the last of the recent known totals."""
    known = [p.lag for p in points if p.lag is not None][-TREND_POINTS:]
    if len(known) < 2:
        return Trend.UNKNOWN
    first, last = known[0], known[-1]
    if abs(last - first) <= max(1.0, 0.01 * max(first, last)):
        return Trend.STEADY
    return Trend.GROWING if last > first else Trend.SHRINKING


def drain_rate(points: Sequence[GroupPoint]) -> float | None:
    """Messages/s by which the total lag fell from the first to the last of the trend's recent known totals.

    The same points as `trend`: positive exactly when the total fell, so a "shrinking" group always has a
    drain rate and an ETA. None with fewer than two known totals or no time between them.
    """
    known = [p for p in points if p.lag is not None][-TREND_POINTS:]
    if len(known) < 2 or known[-1].at <= known[0].at:
        return None
    return ((known[0].lag or 0) - (known[-1].lag or 0)) / (known[-1].at - known[0].at)


def group_eta(total_lag: int | None, direction: str, rate: float | None) -> float | None:
    """Seconds to zero lag: 0 without lag; lag / drain rate while shrinking; None (never or unknown) otherwise."""
    if total_lag == 0:
        return 0.0
    if total_lag is None or direction != "shrinking" or rate is None or rate <= 0:
        return None
    return total_lag / rate


def _sum_known(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def group_lag_seconds(partitions: Sequence[PartitionVerdict]) -> float | None:
    """How far behind the group is in seconds: the worst figure of its lagging partitions.

    A lagging partition is one with messages it has not read: lag above 0, or no committed offset on a log that
    holds messages. Caught-up partitions say nothing about how far behind the others are, so when no lagging
    partition has a figure (one sample, nothing committed) the answer is None, "unknown", never their 0. With no
    lagging partition at all, the group is 0 s behind if any partition's figure is known.
    """
    lagging = [p for p in partitions if (p.lag or 0) > 0 or (p.lag is None and p.log_end > p.log_start)]
    known = [p.lag_seconds for p in (lagging or partitions) if p.lag_seconds is not None]
    return max(known) if known else None


def evaluate_group(
    window: GroupWindow,
    *,
    thresholds: Thresholds,
    rules: Evaluation,
    now: float,
    index: TimeIndex | None = None,
    rows: GroupRows | None = None,
    baselines: tuple[tuple[float, float | None], ...] = (),
) -> GroupVerdict:
    """Judge a whole group at `now` (causes are added by the diagnosis), with the time index's figures of lag in
    seconds when `index` is given (its baselines are the caller's: lagbot.engine.check `judge_window`). `rows`: what
    the array rules found of the window's plain partitions with the other windows of its sample times
    (lagbot.engine.batch `group_rows`, given the same `rules`, `now` and `index`); `baselines` the group's baseline
    produce rates from the time index (`GroupVerdict.baseline_produce`), found by the caller."""
    latest = window.latest
    if rows is None and window.columns is not None:
        rows = judge_stack([(window, window.columns)], rules, now, index)[0]
    partitions = evaluate_partitions(window, rules, now, index, rows)
    lags = [p.lag for p in partitions if p.lag is not None]
    total_lag = sum(lags) if lags else None
    # Rates of partitions with nothing committed are left out, as their (unknown) lag is: otherwise a group
    # whose consumed partitions keep pace would get an ETA of "never" from a partition it does not read.
    produce = _sum_known([p.produce_rate for p in partitions if p.committed is not None])
    consume = _sum_known([p.consume_rate for p in partitions if p.committed is not None])
    points = group_points(window, thresholds, rows)
    direction, drained = trend(points), drain_rate(points)
    sev, sev_reason = severity(points, thresholds)
    return GroupVerdict(
        cluster=window.cluster,
        group=window.group,
        state=latest.state if latest else (window.samples[-1].state if window.samples else GroupState.UNKNOWN),
        status=max((p.status for p in partitions), default=Status.OK),
        severity=sev,
        severity_reason=sev_reason,
        partitions=partitions,
        total_lag=total_lag,
        max_lag_seconds=group_lag_seconds(partitions),
        produce_rate=produce,
        consume_rate=consume,
        eta_seconds=group_eta(total_lag, direction, drained),
        trend=direction,
        members=latest.members if latest else (),
        baseline_produce=baselines,
        drain_rate=drained,
    )


def error_verdict(cluster: str, group: str, state: GroupState, reason: str) -> GroupVerdict:
    """A group that could not be read this cycle: status ERR, severity not judged."""
    return GroupVerdict(
        cluster=cluster,
        group=group,
        state=state,
        status=Status.ERR,
        severity=Severity.OK,
        severity_reason=wording.severity_error(reason),
        partitions=(),
        total_lag=None,
        max_lag_seconds=None,
        produce_rate=None,
        consume_rate=None,
        eta_seconds=None,
        trend=Trend.UNKNOWN,
        error=reason,
    )
