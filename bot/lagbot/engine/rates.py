"""Rates, ETA and lag in seconds of one partition's window: messages/s written and committed, when the lag would be
gone, and when the first unconsumed message was written (Kafka Lag Exporter's interpolation on the window's
(time, log end) points, never extrapolated beyond the oldest).

Pure: `now` is an argument. Their array forms are in lagbot.engine.rows; the proof is
tests/engine/test_evaluate_cases.py (and the exact-lag cases of tests/engine/test_exactlag_cases.py).
"""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING

from lagbot.core.model import (
    ColumnSamples,
    PartitionSample,
)

if TYPE_CHECKING:  # types only: the array route alone loads numpy, and judging loads no settings model (pydantic)
    pass

from lagbot.engine.facts import Facts, Samples, as_facts, span


def produce_rate(window: Samples | Facts) -> float | None:
    """Messages/s appended to the partition over the window, from log-end offsets.

    None with fewer than two samples, no elapsed time, or a log-end that went backwards anywhere in the
    window (the topic was deleted and recreated: no meaningful rate, even once the new log has grown past
    the old end).
    """
    facts = as_facts(window)
    if len(facts.samples) < 2 or facts.span <= 0 or facts.log_end_restart:
        return None
    return (facts.last.log_end - facts.first.log_end) / facts.span


def consume_rate(window: Samples | Facts) -> float | None:
    """Messages/s committed over the window, measured after the last rewind (a rewind is not consumption)."""
    facts = as_facts(window)
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
