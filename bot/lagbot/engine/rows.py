"""The partition rules on arrays: every plain partition of a window at once (the evaluator's array route).

The same rules as lagbot.engine.rules (statuses) and lagbot.engine.rates (rates and lag in seconds), written on
columns; they build their reasons with the same functions, and tests/engine/test_evaluate_columns.py compares both
routes row by row. Pure: `now` is an argument.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING

from lagbot.core.model import (
    Status,
    WindowColumns,
)
from lagbot.engine import wording
from lagbot.engine.ownership import Ownership

if TYPE_CHECKING:  # types only: the array route alone loads numpy, and judging loads no settings model (pydantic)
    import numpy as np
    from numpy.typing import NDArray

    from lagbot.core.config import Evaluation

from lagbot.engine.facts import CAUGHT_UP_LAG, recent_start
from lagbot.engine.rules import AUTO_COMMIT_SECONDS, Finding, ok_finding, stall_finding, stop_finding, warn_finding


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
