"""The partition rules: pure functions from one partition's window to its status, rates and lag in seconds.

Each rule has one home, here: the evaluator's per-partition route (lagbot.engine.evaluate) calls these functions
on a partition's `Facts`; its array route calls their array forms, next to them (`PlainRows` and the functions
after it), which build the reasons with the same functions (tests/engine/test_evaluate_columns.py compares both,
row by row). Nothing here reads a clock or does I/O: `now` is an argument. The rules follow Burrow's evaluator,
adapted to offsets that are polled rather than read from __consumer_offsets:

    STOP    nobody owns the partition, messages wait, and its committed offset has not moved over a short
            grace (its last `min_samples` committed samples, spanning `min_span`): nobody reads it.
    REWIND  the committed offset went backwards in the window and has not come back since to the offset
            it went back from (Burrow's rewind recovery: a rebalance makes a consumer commit an old offset).
    STALL   the group is live (the partition is owned, or the group does not report owners) but the
            committed offset did not move over the whole window while lag stayed above zero.
    WARN    lag never decreased over the window, ended higher than it started, and ends more than
            `quiet_lag` messages and `quiet_seconds` seconds behind.
    OK      anything else.

They are checked worst first, so a partition gets the first rule that fires; `Status` is ordered the
same way, so a group's status is the max of its partitions'. Burrow's guard applies to STOP and STALL:
a consumer that reached a broker offset seen recently (at one of the window's last `min_samples` samples, as
Burrow looks at its ring of recent broker offsets) is not stuck, the topic is merely quiet, so idle topics stay OK;
an old zero lag does not hide a consumer that stopped since (Burrow #290). WARN has Burrow's rule 1 as
its guard: a lag of zero at any sample of the window means the consumer kept up, so a burst on a quiet
topic that the consumer has not committed yet is not a slow consumer. A lag of CAUGHT_UP_LAG (1) is
caught up: a transaction's commit or abort marker takes an offset a read_committed consumer never reads.
The rule that reads a group's partitions together (stuck against its siblings) is in lagbot.engine.siblings.
The proof of these is tests/engine/test_evaluate_cases.py, whose cases run through both routes.
"""

from __future__ import annotations

import bisect
import itertools
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

CAUGHT_UP_LAG = 1
"""A lag of at most this many messages is caught up. A transactional producer's commit (or abort) writes a marker
that takes one offset of each partition it wrote; the consumer commits the offset after the last record it read,
which is the marker's, so a group fully caught up on a transactional topic shows lag 1 per partition (as Kafka Lag
Exporter and KEDA users found). The broker cannot tell a marker from a record without reading the log."""


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
    """A committed sample's lag was caught up (at most CAUGHT_UP_LAG) somewhere in the window."""
    rewind: tuple[int, int] | None
    """The first (before, after) step where the committed offset went backwards and never came back to `before`
    later in the window (a rewind the consumer recovered from does not count: `unrecovered_rewind`)."""
    after_rewind: int
    """Index in `committed` where the run after the last rewind starts (0 without a rewind)."""
    lags_never_decreased: bool
    log_end_restart: int
    """Index in `samples` after the last log-end decrease (the topic was recreated); 0 without one."""
    still_since: int
    """Index in `committed` where the run of the newest committed offset starts (the offset has not moved since)."""
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
    rewinds: list[tuple[int, int, int]] = []
    after_rewind = restart = still_since = 0
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
        if lag <= CAUGHT_UP_LAG:
            zero_lag_seen = True
        if previous is not None:
            before = previous.committed or 0
            if offset != before:
                unmoved = False
                still_since = len(committed)
                if offset < before:
                    rewinds.append((before, offset, len(committed)))
                    after_rewind = len(committed)
            if lag < (previous.lag or 0):
                never_decreased = False
        committed.append(sample)
        previous = sample
    return Facts(
        samples, tuple(committed), unmoved and bool(committed), zero_lag_seen,
        unrecovered_rewind(committed, rewinds) if rewinds else None, after_rewind, never_decreased, restart,
        still_since, samples[0], samples[-1], span(samples), span(committed),
    )  # fmt: skip


def unrecovered_rewind(committed: Samples, rewinds: Sequence[tuple[int, int, int]]) -> tuple[int, int] | None:
    """The first rewind (before, after, index in `committed` of the sample after the step) the consumer did not
    recover from: no committed offset from that sample on is at or past `before` (Burrow's checkIfRewindRecovered)."""
    highest: list[int] = [0] * (len(committed) + 1)  # highest[i]: the highest committed offset from index i on
    for i in range(len(committed) - 1, -1, -1):
        highest[i] = max(highest[i + 1], committed[i].committed or 0)
    for before, after, at in rewinds:
        if highest[at] < before:
            return before, after
    return None


def plain_facts(
    samples: Samples, *, unmoved: bool, zero_lag_seen: bool, lags_never_decreased: bool, still_since: int
) -> Facts:
    """The Facts of a plain window, whose array route found the window-wide facts at once (`still_since` too).

    Plain: every sample carries a committed offset and neither the committed offset nor the log end ever
    went back. So the committed samples are all the samples, there is no rewind and no restart: exactly what
    `window_facts` gathers for such a window (tests/engine/test_evaluate_cases.py checks it case by case).
    """
    whole = span(samples)
    return Facts(
        samples, samples, unmoved, zero_lag_seen, None, 0, lags_never_decreased, 0, still_since, samples[0],
        samples[-1], whole, whole,
    )  # fmt: skip


def caught_up_in_window(facts: Facts) -> bool:
    """Burrow's guard over the whole window: the consumer reached a broker offset seen inside the window.

    Its newest committed offset is at or past the oldest log-end of the window (but for a marker's offset), or its
    lag was caught up at some sample. The rule that reads siblings asks it of its short windows; STOP and STALL ask
    `caught_up_recently`, which bounds it by a recent horizon.
    """
    last = facts.last.committed
    return (last is not None and last + CAUGHT_UP_LAG >= facts.first.log_end) or facts.zero_lag_seen


def recent_start(count: int, rules: Evaluation) -> int:
    """Index of the oldest of the recent samples of a window of `count`: its last `min_samples`, the grace STOP and
    STALL need. How far back Burrow's guard may look, as Burrow's looks only at its ring of recent broker offsets."""
    return max(0, count - rules.min_samples)


def caught_up_recently(facts: Facts, rules: Evaluation) -> bool:
    """Burrow's guard, bounded by the recent samples (`recent_start`): the consumer's newest committed offset is at or
    past the log end of one of them (but for a marker's offset), or a recent committed sample was caught up. Such a
    consumer is waiting for new messages on a quiet topic, not stuck; one caught up only before them (an old zero
    lag, in a long window) is not covered: it stopped since (Burrow #290)."""
    last = facts.last.committed
    if last is None:
        return False
    samples = facts.samples
    for sample in samples[recent_start(len(samples), rules) :]:
        if last + CAUGHT_UP_LAG >= sample.log_end:
            return True
        if sample.committed is not None and (sample.lag or 0) <= CAUGHT_UP_LAG:
            return True
    return False


# ---------------------------------------------------------------------------------------------------
# The rules, worst first. Each returns (status, reason) when it fires, None otherwise. Each takes the
# window's samples (or its Facts, already gathered).
# ---------------------------------------------------------------------------------------------------

Finding = tuple[Status, str]


def _facts(window: Samples | Facts) -> Facts:
    return window if isinstance(window, Facts) else window_facts(window)


def still_run(facts: Facts) -> Samples:
    """The committed samples since the committed offset last moved (all of them when it never moved)."""
    return facts.committed[facts.still_since :] if facts.still_since else facts.committed


def still_for(facts: Facts, rules: Evaluation) -> float | None:
    """The shared ground of STOP and STALL: messages wait, the offset has not moved over a grace (its last
    `min_samples` committed samples or more, spanning `min_span` or more) and the consumer was not caught up recently
    (`caught_up_recently`). The seconds it has been still, or None."""
    if (facts.last.lag or 0) <= CAUGHT_UP_LAG:
        return None
    still = still_run(facts)
    since = span(still)
    if len(still) < rules.min_samples or since < rules.min_span or caught_up_recently(facts, rules):
        return None
    return since


def rule_stop(window: Samples | Facts, ownership: Ownership, rules: Evaluation) -> Finding | None:
    """Nobody owns the partition, messages wait, and its offset has not moved over a short grace: STOP.

    The grace is `still_for`'s: the rules' own judging bar (`min_samples` committed samples spanning `min_span`), met
    by the samples since the offset last moved, so a group whose consumers left after consuming is STOP a few checks
    later, not a window later. Not after a rewind it has not recovered from (REWIND says what happened).
    """
    facts = _facts(window)
    if ownership is not Ownership.UNOWNED or facts.rewind is not None:
        return None
    since = still_for(facts, rules)
    return None if since is None else stop_finding(facts.last.lag or 0, since)


def stop_finding(lag: int, since: float) -> Finding:
    """STOP with its reason: lag `lag` and no commit for `since` seconds (the rule is `rule_stop`)."""
    return Status.STOP, wording.reason_stop(lag, since, wording.nobody_owns())


def rule_rewind(window: Samples | Facts) -> Finding | None:
    """The committed offset went backwards within the window and has not come back since: REWIND."""
    found = _facts(window).rewind
    if found is None:
        return None
    return Status.REWIND, wording.reason_rewind(*found)


def rule_stall(window: Samples | Facts, ownership: Ownership, rules: Evaluation) -> Finding | None:
    """The group is live, messages wait, and the offset has not moved over the whole window, or over the grace of
    `still_for` and for longer than it moved before (Burrow's checkIfOffsetsStopped: the time since the last commit
    is greater than the time the commits before it span): STALL."""
    facts = _facts(window)
    if ownership is Ownership.UNOWNED:
        return None
    since = still_for(facts, rules)
    if since is None:
        return None
    if facts.still_since and since <= facts.committed[facts.still_since].at - facts.committed[0].at:
        return None
    return stall_finding(facts.last.lag or 0, since, ownership)


def stall_finding(lag: int, since: float, ownership: Ownership) -> Finding:
    """STALL with its reason: lag `lag` and no commit for `since` seconds (the rule is `rule_stall`)."""
    who = messages.owned() if ownership is Ownership.OWNED else wording.owner_unknown()
    return Status.STALL, wording.reason_stall(lag, since, who)


def rule_warn(window: Samples | Facts, rules: Evaluation) -> Finding | None:
    """Lag never decreased over the window, ended higher than it started, and ends really behind: WARN.

    Burrow warns on 'never decreasing' alone; we also require growth, so a consumer that keeps exact
    pace with a constant in-flight lag is not flagged forever. As in Burrow (rule 1), a caught-up lag at any
    sample means the consumer kept up within the window: the growth since is new messages not yet
    committed (on a quiet topic, every message would otherwise be a WARN). And the newest lag must be more than
    `quiet_lag` messages and more than `quiet_seconds` seconds behind (`behind_seconds`), or have risen at every step
    by more than AUTO_COMMIT_SECONDS of writes (`outgrew_commits`): a consumer that keeps up shows a few messages
    and a few seconds of lag that can rise across a few samples between its commits (auto-commit commits every
    5 s); that is jitter, not a consumer falling behind.
    """
    facts = _facts(window)
    committed = facts.committed
    if len(committed) < rules.min_samples or facts.zero_lag_seen or not facts.lags_never_decreased:
        return None
    first, last = committed[0].lag or 0, committed[-1].lag or 0
    if last <= first or last <= rules.quiet_lag:
        return None
    if behind_seconds(facts) > rules.quiet_seconds or outgrew_commits(facts):
        return warn_finding(first, last, facts.committed_span)
    return None


AUTO_COMMIT_SECONDS = 5.0
"""auto.commit.interval.ms's default: a consumer that keeps up and commits this often shows, between two commits, a lag
that rises by what is written in this many seconds, and no more."""


def outgrew_commits(facts: Facts) -> bool:
    """The lag rose at every step and by more than the partition is written in AUTO_COMMIT_SECONDS: more than any
    commit cadence of a consumer that keeps up explains (WARN's other way past its seconds floor, for a deficit that
    began too recently for its oldest unread message to be `quiet_seconds` old)."""
    lags = [s.lag or 0 for s in facts.committed]
    if any(b <= a for a, b in itertools.pairwise(lags)):
        return False
    rate = produce_rate(facts)
    return rate is not None and lags[-1] - lags[0] > rate * AUTO_COMMIT_SECONDS


def behind_seconds(facts: Facts) -> float:
    """How old the oldest unread message was at the newest sample (`lag_seconds` at its time; a lower bound, the
    window's span, when it is older than the window): what WARN's seconds floor reads. 0 when unknown."""
    seconds, _ = lag_seconds_upto(facts.samples, len(facts.samples) - 1, facts.log_end_restart, facts.last.at)
    return seconds or 0.0


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
    if (last.lag or 0) <= CAUGHT_UP_LAG:
        return Status.OK, wording.reason_caught_up_marker()
    caught_up = caught_up_recently(facts, rules)
    return ok_finding(len(facts.committed), facts.unmoved, facts.committed_span, caught_up, rules)


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
    still_since: NDArray[np.intp]
    """`Facts.still_since` of every row: the sample where the run of its newest committed offset starts."""

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
    newest = (committed == committed[:, -1:])[:, ::-1]  # newest first: the run of the newest offset
    count = committed.shape[1]
    trailing = np.where(newest.all(axis=1), count, np.argmin(newest, axis=1))
    return PlainRows(
        at=at.tolist(),
        times=times,
        span=span_of_times(columns.times),
        committed=committed,
        log_end=log_end,
        lags=lags,
        unmoved=(committed == committed[:, :1]).all(axis=1),
        zero_lag_seen=(lags <= CAUGHT_UP_LAG).any(axis=1),
        lags_never_decreased=(lags[:, 1:] >= lags[:, :-1]).all(axis=1),
        still_since=(count - trailing).astype(np.intp),
    )


def span_of_times(times: Sequence[float]) -> float:
    """`span` of samples at these times."""
    return times[-1] - times[0] if len(times) >= 2 else 0.0


def caught_up_rows(rows: PlainRows) -> NDArray[np.bool_]:
    """`caught_up_in_window` of every row."""
    return (rows.committed[:, -1] + CAUGHT_UP_LAG >= rows.log_end[:, 0]) | rows.zero_lag_seen


def caught_up_recently_rows(rows: PlainRows, rules: Evaluation) -> NDArray[np.bool_]:
    """`caught_up_recently` of every row (a plain row's log end never falls: its oldest recent one is the least)."""
    start = recent_start(rows.samples, rules)
    reached = rows.committed[:, -1] + CAUGHT_UP_LAG >= rows.log_end[:, start]
    found: NDArray[np.bool_] = reached | (rows.lags[:, start:] <= CAUGHT_UP_LAG).any(axis=1)
    return found


def behind_seconds_rows(rows: PlainRows) -> NDArray[np.float64]:
    """`behind_seconds` of every row: `lag_seconds` at the newest sample's time."""
    import numpy as np

    if rows.samples < 2:
        return np.zeros(len(rows.at), dtype=np.float64)
    times = np.broadcast_to(rows.times, rows.log_end.shape)
    seconds, _ = lag_seconds_arrays(times, rows.log_end, rows.committed[:, -1], float(rows.times[-1]))
    return seconds


def outgrew_commits_rows(rows: PlainRows) -> NDArray[np.bool_]:
    """`outgrew_commits` of every row (a plain row's committed samples are all its samples, with no restart)."""
    import numpy as np

    if rows.samples < 2 or rows.span <= 0:
        return np.zeros(len(rows.at), dtype=np.bool_)
    rising = (rows.lags[:, 1:] > rows.lags[:, :-1]).all(axis=1)
    rates = (rows.log_end[:, -1] - rows.log_end[:, 0]) / rows.span
    found: NDArray[np.bool_] = rising & ((rows.lags[:, -1] - rows.lags[:, 0]) > rates * AUTO_COMMIT_SECONDS)
    return found


class Fired(IntEnum):
    """Which of `partition_status`'s answers a plain row gets, in its order (a plain row never rewinds)."""

    CAUGHT_UP = 0
    STOP = 1
    STALL = 2
    WARN = 3
    NONE = 4
    """No rule fired: OK, with `ok_finding`'s reason."""
    MARKER = 5
    """No rule fired and the lag is CAUGHT_UP_LAG: OK, caught up but for a marker."""


def fired_rows(rows: PlainRows, unowned: NDArray[np.bool_], rules: Evaluation) -> NDArray[np.int64]:
    """`partition_status` of every row as a `Fired`, the first that holds, in the order of the rules: caught up
    (lag 0), STOP (`rule_stop`), STALL (`rule_stall`), WARN (`rule_warn`), caught up but for a marker. `unowned`: the
    row's ownership is UNOWNED."""
    import numpy as np

    first_lag, last_lag = rows.lags[:, 0], rows.lags[:, -1]
    recent = caught_up_recently_rows(rows, rules)
    run = rows.samples - rows.still_since
    run_span = rows.times[-1] - rows.times[rows.still_since]
    still = (last_lag > CAUGHT_UP_LAG) & (run >= rules.min_samples) & (run_span >= rules.min_span) & ~recent
    stop = still & unowned  # `rule_stop` (a plain row never rewinds)
    moved_for = rows.times[rows.still_since] - rows.times[0]
    stall = still & ~unowned & ((rows.still_since == 0) | (run_span > moved_for))  # `rule_stall`
    warn = (rows.samples >= rules.min_samples) & ~rows.zero_lag_seen & rows.lags_never_decreased
    warn &= (last_lag > first_lag) & (last_lag > rules.quiet_lag)
    fired: NDArray[np.int64] = np.full(len(rows.at), Fired.NONE, dtype=np.int64)
    fired[last_lag <= CAUGHT_UP_LAG] = Fired.MARKER
    if warn.any():
        warn &= (behind_seconds_rows(rows) > rules.quiet_seconds) | outgrew_commits_rows(rows)
    fired[warn] = Fired.WARN  # the best first: a worse rule that holds overwrites it
    fired[stall] = Fired.STALL
    fired[stop] = Fired.STOP
    fired[last_lag == 0] = Fired.CAUGHT_UP
    return fired


def plain_findings(rows: PlainRows, ownerships: Sequence[Ownership], rules: Evaluation) -> list[Finding]:
    """`partition_status` of every row, with the reasons the scalar rules give (the same functions)."""
    import numpy as np

    unowned = np.array([o is Ownership.UNOWNED for o in ownerships], dtype=np.bool_)
    fired = fired_rows(rows, unowned, rules).tolist()
    first_lags, last_lags = rows.lags[:, 0].tolist(), rows.lags[:, -1].tolist()
    caught = (Status.OK, wording.reason_caught_up())
    marker = (Status.OK, wording.reason_caught_up_marker())
    count, whole = rows.samples, rows.span
    runs = (rows.times[-1] - rows.times[rows.still_since]).tolist()
    oks: dict[tuple[bool, bool], Finding] = {}  # one per (unmoved, caught up): the rest is the window's
    fired_once: dict[tuple[int, int, int, Ownership, float], Finding] = {}  # rows of the same lags share a finding
    found: list[Finding] = []
    recent = caught_up_recently_rows(rows, rules).tolist()
    rows_of = zip(fired, first_lags, last_lags, ownerships, rows.unmoved.tolist(), recent, runs, strict=True)
    for rule, first, last, ownership, unmoved, caught_up, run in rows_of:
        if rule == Fired.CAUGHT_UP:
            found.append(caught)
        elif rule == Fired.MARKER:
            found.append(marker)
        elif rule == Fired.NONE:
            ok = oks.get((unmoved, caught_up))
            if ok is None:
                ok = oks[(unmoved, caught_up)] = ok_finding(count, unmoved, whole, caught_up, rules)
            found.append(ok)
        else:
            key = (rule, first, last, ownership, run)
            finding = fired_once.get(key)
            if finding is None:
                finding = fired_once[key] = _fired_finding(rule, first, last, whole, run, ownership)
            found.append(finding)
    return found


def _fired_finding(rule: int, first: int, last: int, whole: float, still: float, ownership: Ownership) -> Finding:
    """The finding of a plain row on which STOP, STALL or WARN fired (`plain_findings`), with the scalar rules'
    reason: its last lag and the seconds its offset has been still (`still`), or its first and last lags over the
    window's span `whole`."""
    if rule == Fired.STOP:
        return stop_finding(last, still)
    if rule == Fired.STALL:
        return stall_finding(last, still, ownership)
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
