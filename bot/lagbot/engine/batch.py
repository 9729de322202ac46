"""The evaluator's array route for many groups at once: the plain partitions (lagbot.engine.rows `PlainRows`) of every
window that shares its sample times with the others, judged by one pass of the array rules.

All groups of one cluster's snapshot are read at the same times, so their windows' arrays stack into one: each array
rule then runs once per cycle on 100,000 rows (2,000 groups x 50 partitions) instead of once per group on 50, where
a numpy operation on a 50 x 30 array costs a few microseconds whatever it does (about 100 of them per group). Every
rule of the array route is a row's own answer (no row reads another), so a row judged in a stack gets the answer it
gets in its window alone: the same integers, the same floats to the last bit. What a group's verdict then needs of
its rows is handed to the evaluator as lists (`GroupRows`), cut out of the stack's.
A window alone is a stack of one (lagbot.engine.evaluate `evaluate_group`). The proof that a stack judges as its
windows alone, and as the per-partition route, is tests/engine/test_batch.py.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from lagbot.core.model import GroupWindow, Member, TopicPartition, WindowColumns
from lagbot.engine.ownership import Owners, Ownership
from lagbot.engine.rows import PlainRows, consume_rates, lag_seconds_rows, plain_findings, plain_rows, produce_rates
from lagbot.engine.rules import Finding
from lagbot.engine.siblings import commit_times_rows, still_and_growing_rows

if TYPE_CHECKING:  # types only: the array route alone loads numpy, and judging loads no settings model (pydantic)
    import numpy as np
    from numpy.typing import NDArray

    from lagbot.core.config import Evaluation
    from lagbot.core.model import PartitionVerdict


class TimeIndex(Protocol):
    """The broker's time index of a cycle, as the evaluator asks it (lagbot.engine.index_tables `IndexTables`): the
    figure of lag in seconds it gives a partition where the window's is unknown or only a lower bound it improves on,
    put in the verdict when the verdict is made."""

    def improve(self, verdict: PartitionVerdict) -> PartitionVerdict:
        """The verdict with the index's figure, where it improves on the window's."""
        ...

    def improve_rows(
        self,
        tps: Sequence[TopicPartition],
        committed: NDArray[np.int64],
        log_end: NDArray[np.int64],
        lags: Sequence[int],
        seconds: Sequence[float | None],
        bounds: Sequence[bool],
    ) -> tuple[list[float | None], list[bool], list[str | None]]:
        """`improve` of partitions before their verdicts are made: each one's figure, lower bound and method."""
        ...

    def baselines_of_stack(
        self, tps: Sequence[TopicPartition], log_ends: NDArray[np.int64], edges: Sequence[int], measured_at: float
    ) -> list[tuple[tuple[float, float | None], ...]]:
        """The baseline produce rates of groups whose partitions and log ends are one after the other."""
        ...


@dataclass(frozen=True, slots=True)
class GroupRows:
    """What the array rules found of one group's plain partitions, one item per plain row, in the window's order.

    `at` is each one's row in the window's arrays (`WindowColumns`); `owned` its ownership and owner; `findings`
    its `partition_status` (before the sibling rule); `seconds`, `bounds`, `methods` its lag in seconds (with the
    time index's figure where it wins), whether a lower bound, and which method gave it; `committed`, `log_end`,
    `log_start`, `lags` its newest sample's; `first_lags` its oldest lag; `produce`, `consume` its rates; `growing`
    whether it is a candidate of the sibling rule (`still_and_growing`) when owned; `start` and `end` the window's
    first and last sample times; `moves` the commit times of each row (`commit_times`), made when asked, and
    `commits` how many there are; `totals`
    the group's total known lag at each sample time (None when the evaluator must add it up itself); `baselines` the
    group's baseline produce rates from the time index, of all its partitions (None without an index)."""

    at: list[int]
    owned: list[tuple[Ownership, Member | None]]
    findings: list[Finding]
    seconds: list[float | None]
    bounds: list[bool]
    methods: list[str | None]
    committed: list[int]
    log_end: list[int]
    log_start: list[int]
    lags: list[int]
    first_lags: list[int]
    produce: list[float | None]
    consume: list[float | None]
    growing: list[bool]
    start: float
    end: float
    moves: Callable[[], list[list[float]]]
    commits: list[int]
    totals: dict[float, int] | None
    baselines: tuple[tuple[float, float | None], ...] | None


def group_rows(
    windows: Iterable[GroupWindow], rules: Evaluation, now: float, index: TimeIndex | None = None
) -> dict[str, GroupRows]:
    """The `GroupRows` of every window with arrays (keyed by group), the windows that share their sample times judged
    together (`judge_stack`)."""
    stacks: dict[tuple[float, ...], list[tuple[GroupWindow, WindowColumns]]] = {}
    for window in windows:
        if window.columns is not None:
            stacks.setdefault(window.columns.times, []).append((window, window.columns))
    found: dict[str, GroupRows] = {}
    for stacked in stacks.values():
        found.update(zip((w.group for w, _ in stacked), judge_stack(stacked, rules, now, index), strict=True))
    return found


def judge_stack(
    stacked: Sequence[tuple[GroupWindow, WindowColumns]], rules: Evaluation, now: float, index: TimeIndex | None
) -> list[GroupRows]:
    """The `GroupRows` of windows whose arrays have the same sample times, by one pass of the array rules over their
    rows stacked (the first window's rows, then the second's, ...)."""
    import numpy as np

    columns = _stacked([window_columns for _, window_columns in stacked])
    rows = plain_rows(columns)
    edges = [0]
    for _, window_columns in stacked:
        edges.append(edges[-1] + len(window_columns.tps))
    cut = _cuts(rows.at, edges)
    owned: list[tuple[Ownership, Member | None]] = []
    for (window, _), (lo, hi) in zip(stacked, cut, strict=True):
        owned += Owners(window.latest).of_all([columns.tps[i] for i in rows.at[lo:hi]])
    findings = plain_findings(rows, [ownership for ownership, _ in owned], rules)
    seconds, bounds = lag_seconds_rows(rows, now)
    lags = rows.lags[:, -1].tolist()
    if index is None:
        methods: list[str | None] = [None if s is None else "window" for s in seconds]
    else:
        plain = [columns.tps[i] for i in rows.at]
        seconds, bounds, methods = index.improve_rows(
            plain, rows.committed[:, -1], rows.log_end[:, -1], lags, seconds, bounds
        )
    committed, log_end = rows.committed[:, -1].tolist(), rows.log_end[:, -1].tolist()
    log_start = columns.last_log_start[rows.at].tolist()
    first_lags, produce, consume = rows.lags[:, 0].tolist(), produce_rates(rows), consume_rates(rows)
    growing = still_and_growing_rows(rows, rules).tolist()
    start, end = float(rows.times[0]), float(rows.times[-1])
    moves = _Moves(rows)
    commits = np.count_nonzero(rows.committed[:, 1:] != rows.committed[:, :-1], axis=1).tolist()
    totals = lag_totals(columns, edges)
    baselines: list[tuple[tuple[float, float | None], ...] | None] = [None] * len(stacked)
    if index is not None:  # of every partition of the windows (their log ends are the arrays' newest)
        baselines[:] = index.baselines_of_stack(columns.tps, columns.log_end[:, -1], edges, columns.times[-1])
    found = []
    for g, (lo, hi) in enumerate(cut):
        base = edges[g]
        found.append(
            GroupRows(
                at=[i - base for i in rows.at[lo:hi]] if base else rows.at[lo:hi],
                owned=owned[lo:hi],
                findings=findings[lo:hi],
                seconds=seconds[lo:hi],
                bounds=bounds[lo:hi],
                methods=methods[lo:hi],
                committed=committed[lo:hi],
                log_end=log_end[lo:hi],
                log_start=log_start[lo:hi],
                lags=lags[lo:hi],
                first_lags=first_lags[lo:hi],
                produce=produce[lo:hi],
                consume=consume[lo:hi],
                growing=growing[lo:hi],
                start=start,
                end=end,
                moves=moves.cut(lo, hi),
                commits=commits[lo:hi],
                totals=None if totals is None or edges[g + 1] - base >= TOTALS_LIMIT else totals[g],
                baselines=baselines[g],
            )
        )
    return found


TOTALS_LIMIT = 2**14
"""A group of this many partitions or more has its total lags added up by the evaluator (in Python's ints): int64
sums of so many offsets below 2**48 (lagbot.engine.window_entries) could overflow."""


def _stacked(parts: Sequence[WindowColumns]) -> WindowColumns:
    """One WindowColumns of the rows of `parts` (of the same times), in their order."""
    if len(parts) == 1:
        return parts[0]
    import numpy as np

    return WindowColumns(
        times=parts[0].times,
        tps=tuple(tp for part in parts for tp in part.tps),
        committed=np.concatenate([part.committed for part in parts]),
        log_end=np.concatenate([part.log_end for part in parts]),
        known=np.concatenate([part.known for part in parts]),
        last_log_start=np.concatenate([part.last_log_start for part in parts]),
    )


def _cuts(at: list[int], edges: list[int]) -> list[tuple[int, int]]:
    """Per window, where its plain rows are in `at` (the plain rows of the stack, ascending): rows from edges[g] to
    edges[g + 1] are window g's."""
    if len(at) == edges[-1]:  # every row is plain
        return list(itertools.pairwise(edges))
    return [(bisect.bisect_left(at, lo), bisect.bisect_left(at, hi)) for lo, hi in itertools.pairwise(edges)]


class _Moves:
    """`commit_times_rows` of a stack's plain rows, made at the first ask (only groups with a candidate of the sibling
    rule ask), and cut per group."""

    def __init__(self, rows: PlainRows) -> None:
        self.rows = rows
        self.made: list[list[float]] | None = None

    def cut(self, lo: int, hi: int) -> Callable[[], list[list[float]]]:
        def moves() -> list[list[float]]:
            if self.made is None:
                self.made = commit_times_rows(self.rows)
            return self.made[lo:hi]

        return moves


def lag_totals(columns: WindowColumns, edges: list[int]) -> list[dict[float, int]] | None:
    """Per window of the stack, its total known lag at each sample time (lagbot.engine.evaluate `group_points`); None
    when two samples share a time."""
    times = columns.times
    if len(set(times)) != len(times):
        return None
    import numpy as np

    lags = np.where(columns.known, np.maximum(columns.log_end - columns.committed, 0), 0)
    starts = np.array(edges[:-1], dtype=np.intp)
    sums = np.add.reduceat(lags, starts, axis=0).tolist()
    known = np.logical_or.reduceat(columns.known, starts, axis=0).tolist()
    return [
        {at: total for at, total, any_known in zip(times, group_sums, group_known, strict=True) if any_known}
        for group_sums, group_known in zip(sums, known, strict=True)
    ]
