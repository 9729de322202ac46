"""Small facts about one partition's window, gathered once for every rule: its span, the committed samples, where
the committed offset last moved, rewinds and whether they recovered, and whether the consumer caught up (in the
window, or recently: Burrow's guard, bounded by a recent horizon).

Pure: nothing here reads a clock. The rules on these facts are lagbot.engine.rules (statuses) and
lagbot.engine.rates; their array forms are lagbot.engine.rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lagbot.core.model import (
    PartitionSample,
)

if TYPE_CHECKING:  # types only: the array route alone loads numpy, and judging loads no settings model (pydantic)
    from lagbot.core.config import Evaluation


Samples = Sequence[PartitionSample]

CAUGHT_UP_LAG = 1
"""A lag of at most this many messages is caught up. A transactional producer's commit (or abort) writes a marker
that takes one offset of each partition it wrote; the consumer commits the offset after the last record it read,
which is the marker's, so a group fully caught up on a transactional topic shows lag 1 per partition (as Kafka Lag
Exporter and KEDA users found). The broker cannot tell a marker from a record without reading the log."""


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


def as_facts(window: Samples | Facts) -> Facts:
    """The window's Facts, gathered unless given."""
    return window if isinstance(window, Facts) else window_facts(window)
