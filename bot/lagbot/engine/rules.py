"""The partition rules: pure functions from one partition's window to its status, rates and lag in seconds.

Each rule has one home, here: the evaluator's per-partition route (lagbot.engine.evaluate) calls these functions
on a partition's `Facts`; its array route calls their array forms, next to them (`PlainRows` and the functions
after it), which build the reasons with the same functions (tests/engine/test_evaluate_columns.py compares both,
row by row). Nothing here reads a clock or does I/O: `now` is an argument. The rules follow Burrow's evaluator,
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
The rule that reads a group's partitions together (stuck against its siblings) is in lagbot.engine.siblings.
The proof of these is tests/engine/test_evaluate_cases.py, whose cases run through both routes.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING

from lagbot.core import messages
from lagbot.core.model import (
    ColumnSamples,
    PartitionSample,
    Status,
    WindowColumns,
)
from lagbot.engine import wording
from lagbot.engine.ownership import Ownership

if TYPE_CHECKING:  # types only: the array route alone loads numpy, and judging loads no settings model (pydantic)
    import numpy as np
    from numpy.typing import NDArray

    from lagbot.core.config import Evaluation

Samples = Sequence[PartitionSample]


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
    committed: Samples
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
    first: PartitionSample
    """samples[0], and `last` samples[-1]; with `span` and `committed_span` (the `span` of `samples` and of
    `committed`) read here once: the rules ask for them many times, and the samples of a window with arrays
    are a view (lagbot.core.model.ColumnSamples) that is slower to index than a tuple."""
    last: PartitionSample
    span: float
    committed_span: float


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
        never_decreased, restart, samples[0], samples[-1], span(samples), span(committed),
    )  # fmt: skip


def plain_facts(samples: Samples, *, unmoved: bool, zero_lag_seen: bool, lags_never_decreased: bool) -> Facts:
    """The Facts of a plain window, whose array route found the three window-wide facts at once.

    Plain: every sample carries a committed offset and neither the committed offset nor the log end ever
    went back. So the committed samples are all the samples, there is no rewind and no restart: exactly what
    `window_facts` gathers for such a window (tests/engine/test_evaluate_cases.py checks it case by case).
    """
    whole = span(samples)
    return Facts(
        samples, samples, unmoved, zero_lag_seen, None, 0, lags_never_decreased, 0, samples[0], samples[-1],
        whole, whole,
    )  # fmt: skip


def judgeable(facts: Facts, rules: Evaluation) -> bool:
    """Enough committed samples over a long enough span to judge behaviour (not only lag)."""
    return len(facts.committed) >= rules.min_samples and facts.committed_span >= rules.min_span


def caught_up_in_window(facts: Facts) -> bool:
    """Burrow's guard: the consumer reached a broker offset seen inside the window.

    Its newest committed offset is at or past the oldest log-end of the window, or its lag was zero
    at some sample. Such a consumer is waiting for new messages on a quiet topic, not stuck.
    """
    last = facts.last.committed
    return (last is not None and last >= facts.first.log_end) or facts.zero_lag_seen


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
    return stop_finding(facts.last.lag or 0, facts.committed_span)


def stop_finding(lag: int, since: float) -> Finding:
    """STOP with its reason: lag `lag` and no commit for `since` seconds (the rule is `rule_stop`)."""
    return Status.STOP, wording.reason_stop(lag, since, wording.nobody_owns())


def rule_rewind(window: Samples | Facts) -> Finding | None:
    """The committed offset went backwards within the window: REWIND."""
    found = _facts(window).rewind
    if found is None:
        return None
    return Status.REWIND, wording.reason_rewind(*found)


def rule_stall(window: Samples | Facts, ownership: Ownership, rules: Evaluation) -> Finding | None:
    """The group is live but the offset did not move over the whole window, with lag: STALL."""
    facts = _facts(window)
    if ownership is Ownership.UNOWNED or not _unmoved_with_lag(facts, rules):
        return None
    return stall_finding(facts.last.lag or 0, facts.committed_span, ownership)


def stall_finding(lag: int, since: float, ownership: Ownership) -> Finding:
    """STALL with its reason: lag `lag` and no commit for `since` seconds (the rule is `rule_stall`)."""
    who = messages.owned() if ownership is Ownership.OWNED else wording.owner_unknown()
    return Status.STALL, wording.reason_stall(lag, since, who)


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
        return warn_finding(first, last, facts.committed_span)
    return None


def warn_finding(first: int, last: int, span: float) -> Finding:
    """WARN with its reason: lag went from `first` to `last` over `span` seconds (the rule is `rule_warn`)."""
    return Status.WARN, wording.reason_warn(first, last, span)


def partition_status(window: Samples | Facts, ownership: Ownership, rules: Evaluation) -> Finding:
    """The status of one partition: the first rule that fires, worst first."""
    facts = _facts(window)
    last = facts.last
    if last.committed is None:
        return Status.OK, wording.reason_no_commit()
    if last.lag == 0:
        return Status.OK, wording.reason_caught_up()
    found = (
        rule_stop(facts, ownership, rules)
        or rule_rewind(facts)
        or rule_stall(facts, ownership, rules)
        or rule_warn(facts, rules)
    )
    if found is not None:
        return found
    return ok_finding(len(facts.committed), facts.unmoved, facts.committed_span, caught_up_in_window(facts), rules)


def ok_finding(committed: int, unmoved: bool, span: float, caught_up: bool, rules: Evaluation) -> Finding:
    """OK with its reason when no rule fired, from the window's number of committed samples, whether its offset
    moved, its committed span and Burrow's guard: why the rules could not judge, or that it consumes."""
    if committed < rules.min_samples:
        return Status.OK, wording.reason_few_samples(committed, rules.min_samples)
    if unmoved and span < rules.min_span:
        return Status.OK, wording.reason_span_short(span, rules.min_span)
    if caught_up:
        return Status.OK, wording.reason_caught_up_in_window()
    return Status.OK, wording.reason_ok_moving()


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
    if len(facts.samples) < 2 or facts.span <= 0 or facts.log_end_restart:
        return None
    return (facts.last.log_end - facts.first.log_end) / facts.span


def consume_rate(window: Samples | Facts) -> float | None:
    """Messages/s committed over the window, measured after the last rewind (a rewind is not consumption)."""
    facts = _facts(window)
    committed = facts.committed[facts.after_rewind :] if facts.after_rewind else facts.committed
    elapsed = span(committed) if facts.after_rewind else facts.committed_span
    if len(committed) < 2 or elapsed <= 0:
        return None
    moved = (committed[-1].committed or 0) - (committed[0].committed or 0)
    return moved / elapsed


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
    restart = facts.log_end_restart if facts is not None else log_end_restart(samples)
    return lag_seconds_upto(samples, len(samples) - 1, restart, now)


def log_end_restart(samples: Samples) -> int:
    """`Facts.log_end_restart` alone: the index after the last log-end decrease, 0 without one."""
    ends = samples.log_ends() if isinstance(samples, ColumnSamples) else [s.log_end for s in samples]
    restart = 0
    for i in range(1, len(ends)):
        if ends[i] < ends[i - 1]:
            restart = i
    return restart


def lag_seconds_upto(samples: Samples, last: int, restart: int, now: float) -> tuple[float | None, bool]:
    """`lag_seconds` judged on samples[restart..last] only (no copies: the severity series calls it per sample)."""
    newest = samples[last]
    committed = newest.committed
    if committed is None:
        return None, False
    if committed >= newest.log_end:
        return 0.0, False
    # The last sample whose log-end was still at or below the committed offset: message `committed`
    # was written after it and no later than the next sample.
    if isinstance(samples, ColumnSamples):  # bisect its log ends, not samples it would have to make
        i = bisect.bisect_right(samples.log_ends(), committed, lo=restart, hi=last + 1) - 1
    else:
        i = bisect.bisect_right(samples, committed, lo=restart, hi=last + 1, key=_log_end) - 1
    if i < restart:
        return max(0.0, now - samples[restart].at), True
    before, after = samples[i], samples[i + 1]
    fraction = (committed - before.log_end) / (after.log_end - before.log_end)
    written_at = before.at + fraction * (after.at - before.at)
    return max(0.0, now - written_at), False


# ---------------------------------------------------------------------------------------------------
# The same rules on arrays: every plain partition of a window at once (the evaluator's array route)
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PlainRows:
    """The plain partitions of a window (see `plain_facts`) as arrays, one row per partition, oldest sample first.

    What `Facts` holds of each plain partition, for all of them at once: every sample carries a committed offset
    and nothing went back, so the committed samples are all the samples, the committed span is the window's span
    and there is no rewind and no restart. `at` is each row's row in the window's arrays (`WindowColumns`).
    The functions below are the rules above on these arrays, each next to its meaning; the proof that both give
    the same answers is tests/engine/test_evaluate_columns.py (random histories) and the case tables
    (tests/engine/test_evaluate_cases.py), which judge every case both ways.
    """

    at: list[int]
    times: NDArray[np.float64]
    span: float
    committed: NDArray[np.int64]
    log_end: NDArray[np.int64]
    lags: NDArray[np.int64]
    unmoved: NDArray[np.bool_]
    zero_lag_seen: NDArray[np.bool_]
    lags_never_decreased: NDArray[np.bool_]

    @property
    def samples(self) -> int:
        return len(self.times)


def plain_rows(columns: WindowColumns) -> PlainRows:
    """The plain partitions of a window with arrays, and what the rules ask of them (see `PlainRows`)."""
    import numpy as np

    committed, log_end = columns.committed, columns.log_end  # partitions x samples
    plain = (
        columns.known.all(axis=1)
        & (committed[:, 1:] >= committed[:, :-1]).all(axis=1)
        & (log_end[:, 1:] >= log_end[:, :-1]).all(axis=1)
    )
    at = np.flatnonzero(plain)
    if len(at) < len(columns.tps):
        committed, log_end = committed[at], log_end[at]
    lags = np.maximum(log_end - committed, 0)
    times = np.array(columns.times, dtype=np.float64)
    return PlainRows(
        at=at.tolist(),
        times=times,
        span=span_of_times(columns.times),
        committed=committed,
        log_end=log_end,
        lags=lags,
        unmoved=(committed == committed[:, :1]).all(axis=1),
        zero_lag_seen=(lags == 0).any(axis=1),
        lags_never_decreased=(lags[:, 1:] >= lags[:, :-1]).all(axis=1),
    )


def span_of_times(times: Sequence[float]) -> float:
    """`span` of samples at these times."""
    return times[-1] - times[0] if len(times) >= 2 else 0.0


def caught_up_rows(rows: PlainRows) -> NDArray[np.bool_]:
    """`caught_up_in_window` of every row."""
    return (rows.committed[:, -1] >= rows.log_end[:, 0]) | rows.zero_lag_seen


class Fired(IntEnum):
    """Which of `partition_status`'s answers a plain row gets, in its order (a plain row never rewinds)."""

    CAUGHT_UP = 0
    STOP = 1
    STALL = 2
    WARN = 3
    NONE = 4
    """No rule fired: OK, with `ok_finding`'s reason."""


def fired_rows(rows: PlainRows, unowned: NDArray[np.bool_], rules: Evaluation) -> NDArray[np.int64]:
    """`partition_status` of every row as a `Fired`, the first that holds, in the order of the rules: caught up
    (lag 0), STOP (`rule_stop`), STALL (`rule_stall`), WARN (`rule_warn`). `unowned`: the row's ownership is
    UNOWNED."""
    import numpy as np

    first_lag, last_lag = rows.lags[:, 0], rows.lags[:, -1]
    judged = rows.samples >= rules.min_samples and rows.span >= rules.min_span  # `judgeable`
    still = rows.unmoved & ~caught_up_rows(rows) & judged  # `_unmoved_with_lag`
    warn = (rows.samples >= rules.min_samples) & ~rows.zero_lag_seen & rows.lags_never_decreased
    fired: NDArray[np.int64] = np.full(len(rows.at), Fired.NONE, dtype=np.int64)
    fired[warn & (last_lag > first_lag)] = Fired.WARN  # the best first: a worse rule that holds overwrites it
    fired[still & ~unowned] = Fired.STALL
    fired[still & unowned] = Fired.STOP
    fired[last_lag == 0] = Fired.CAUGHT_UP
    return fired


def plain_findings(rows: PlainRows, ownerships: Sequence[Ownership], rules: Evaluation) -> list[Finding]:
    """`partition_status` of every row, with the reasons the scalar rules give (the same functions)."""
    import numpy as np

    unowned = np.array([o is Ownership.UNOWNED for o in ownerships], dtype=np.bool_)
    fired = fired_rows(rows, unowned, rules).tolist()
    first_lags, last_lags = rows.lags[:, 0].tolist(), rows.lags[:, -1].tolist()
    caught = (Status.OK, wording.reason_caught_up())
    count, whole = rows.samples, rows.span
    oks: dict[tuple[bool, bool], Finding] = {}  # one per (unmoved, caught up): the rest is the window's
    fired_once: dict[tuple[int, int, int, Ownership], Finding] = {}  # rows of the same lags share their finding
    found: list[Finding] = []
    rows_of = zip(
        fired, first_lags, last_lags, ownerships, rows.unmoved.tolist(), caught_up_rows(rows).tolist(), strict=True
    )
    for rule, first, last, ownership, unmoved, caught_up in rows_of:
        if rule == Fired.CAUGHT_UP:
            found.append(caught)
        elif rule == Fired.NONE:
            ok = oks.get((unmoved, caught_up))
            if ok is None:
                ok = oks[(unmoved, caught_up)] = ok_finding(count, unmoved, whole, caught_up, rules)
            found.append(ok)
        else:
            key = (rule, first, last, ownership)
            finding = fired_once.get(key)
            if finding is None:
                finding = fired_once[key] = _fired_finding(rule, first, last, whole, ownership)
            found.append(finding)
    return found


def _fired_finding(rule: int, first: int, last: int, whole: float, ownership: Ownership) -> Finding:
    """The finding of a plain row on which STOP, STALL or WARN fired (`plain_findings`), with the scalar rules' reason:
    its first and last lags over the window's span `whole`."""
    if rule == Fired.STOP:
        return stop_finding(last, whole)
    if rule == Fired.STALL:
        return stall_finding(last, whole, ownership)
    return warn_finding(first, last, whole)


def produce_rates(rows: PlainRows) -> list[float | None]:
    """`produce_rate` of every row (a plain row has no restart)."""
    if rows.samples < 2 or rows.span <= 0:
        return [None] * len(rows.at)
    rates: list[float | None] = ((rows.log_end[:, -1] - rows.log_end[:, 0]) / rows.span).tolist()
    return rates


def consume_rates(rows: PlainRows) -> list[float | None]:
    """`consume_rate` of every row (a plain row has no rewind: every sample counts)."""
    if rows.samples < 2 or rows.span <= 0:
        return [None] * len(rows.at)
    rates: list[float | None] = ((rows.committed[:, -1] - rows.committed[:, 0]) / rows.span).tolist()
    return rates


def lag_seconds_rows(rows: PlainRows, now: float) -> tuple[list[float | None], list[bool]]:
    """`lag_seconds` of every row (its table is the window's times and the row's log ends)."""
    import numpy as np

    times = np.broadcast_to(rows.times, rows.log_end.shape)
    return lag_seconds_tables(times, rows.log_end, rows.committed[:, -1], now)


def lag_seconds_tables(
    times: NDArray[np.float64], log_end: NDArray[np.int64], committed: NDArray[np.int64], now: float
) -> tuple[list[float | None], list[bool]]:
    """`lag_seconds` of many (time, log end) tables of the same length at once, one per row, each with the committed
    offset of its newest sample (`lag_seconds_arrays`; with one sample, behind is None and caught up 0)."""
    if log_end.shape[1] < 2:
        ends = log_end[:, -1].tolist()
        return [None if c < e else 0.0 for c, e in zip(committed.tolist(), ends, strict=True)], [False] * len(ends)
    seconds, older = lag_seconds_arrays(times, log_end, committed, now)
    return seconds.tolist(), older.tolist()


def lag_seconds_arrays(
    times: NDArray[np.float64], log_end: NDArray[np.int64], committed: NDArray[np.int64], now: float
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """`lag_seconds_tables` of two samples or more, as arrays (every figure known): the same restart (after the last
    log-end decrease), bisection (a count: no log end falls after the restart), interpolation and lower bound."""
    import numpy as np

    count, length = log_end.shape
    fell = log_end[:, 1:] < log_end[:, :-1]
    reached = log_end <= committed[:, None]
    restart = np.zeros(count, dtype=np.intp)  # no log end fell (every plain row): every run starts at the oldest
    if fell.any():
        restart = np.where(fell.any(axis=1), length - 1 - np.argmax(fell[:, ::-1], axis=1), 0)
        reached &= np.arange(length) >= restart[:, None]
    below = restart + reached.sum(axis=1) - 1  # bisect_right - 1
    caught_up = committed >= log_end[:, -1]
    older = (below < restart) & ~caught_up  # older than the run: a lower bound
    interpolated = ~(caught_up | older)
    row, i = np.arange(count), np.where(interpolated, below, 0)
    before_end, after_end, before_at, after_at = log_end[row, i], log_end[row, i + 1], times[row, i], times[row, i + 1]
    fraction = (committed - before_end) / np.where(interpolated, after_end - before_end, 1)
    written_at = before_at + fraction * (after_at - before_at)
    since_restart = np.maximum(0.0, now - times[row, restart])
    seconds = np.where(caught_up, 0.0, np.where(older, since_restart, np.maximum(0.0, now - written_at)))
    return seconds, older
