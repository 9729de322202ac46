"""Stuck against its siblings: the rule that reads a group's partitions together.

An owned partition whose committed offset did not move while other partitions of the group committed (of other
members, or of its own owner: a member that reads its other partitions and not this one is stuck on a record of it,
a poison message) is a STALL,
even in a window shorter than `min_span` (where the window rules of lagbot.engine.rules cannot say so yet). The
per-partition route gives it each partition's Facts (`stuck_vs_siblings`), the array route its plain rows and the
Facts of the others (`stuck_vs_siblings_rows`): the same candidates, the same count of sibling commits. The proof is
tests/engine/test_agreement_cases.py; tests/engine/test_evaluate_columns.py compares both forms.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from lagbot.core.model import Member, Status, TopicPartition
from lagbot.engine import wording
from lagbot.engine.facts import Facts, caught_up_recently
from lagbot.engine.ownership import Owners, Ownership
from lagbot.engine.rows import PlainRows, caught_up_recently_rows
from lagbot.engine.rules import Finding

if TYPE_CHECKING:  # only the array route loads numpy (`lagbot check` never does)
    import numpy as np
    from numpy.typing import NDArray

    from lagbot.core.config import Evaluation

SIBLING_MIN_COMMITS = 2
"""A sibling partition must have committed in at least this many steps of the still partition's span: then the
still partition missed at least as many chances to commit that the others took, which a short window proves."""


@dataclass(frozen=True, slots=True)
class SiblingStall:
    """A partition judged stuck against its siblings, and how many of their commits it was judged on."""

    finding: Finding
    sibling_commits: int


def stuck_vs_siblings(
    facts: Mapping[TopicPartition, Facts], owners: Owners, rules: Evaluation
) -> dict[TopicPartition, SiblingStall]:
    """Owned partitions whose committed offset did not move while other partitions of the group committed.

    A candidate has at least two committed samples, all the same offset, lag above 0 and growing from its first
    committed sample to its last, and not caught up recently (Burrow's guard, bounded by the recent samples as for
    STOP and STALL: a zero lag older than them hides no stop, Burrow #290). It is stuck when
    another partition (of another member, or of its own owner) committed in at least SIBLING_MIN_COMMITS steps over
    the candidate's span: the group is consuming and this partition is not, even in a window shorter than
    `min_span`. A group in which nobody commits gives no candidate here; the window rules (STALL, STOP) judge it.
    The count of sibling commits seen (over the group's other partitions) is kept: the diagnosis' confidence grows
    with it.
    """
    still = {
        tp: still_partition(f)
        for tp, f in facts.items()
        if still_and_growing(f, rules) and owners.of(tp)[0] is Ownership.OWNED
    }
    if not still:
        return {}
    return stuck_against(still, {tp: commit_times(f) for tp, f in facts.items()}, owners)


@dataclass(frozen=True, slots=True)
class StillPartition:
    """A candidate of `stuck_vs_siblings`: the time and lag of its first and last committed samples."""

    start: float
    end: float
    first_lag: int
    last_lag: int


def still_partition(facts: Facts) -> StillPartition:
    committed = facts.committed
    return StillPartition(committed[0].at, committed[-1].at, committed[0].lag or 0, committed[-1].lag or 0)


def stuck_against(
    still: Mapping[TopicPartition, StillPartition], moves: Mapping[TopicPartition, Sequence[float]], owners: Owners
) -> dict[TopicPartition, SiblingStall]:
    """The candidates of `stuck_vs_siblings` that are stuck, from the commit times (`commit_times`) of every
    partition of the group, `moves`. The commits of each member's partitions are counted once per candidate
    span (most candidates of a group share the window's), not once per candidate and partition."""
    members = {tp: who.member_id for tp in moves if (who := owners.of(tp)[1]) is not None}
    tallies: dict[tuple[float, float], dict[str, tuple[int, int]]] = {}
    sums: dict[tuple[float, float, str], int | None] = {}  # per span and owner: its siblings' commits, if enough
    found: dict[TopicPartition, SiblingStall] = {}
    for tp, candidate in still.items():
        owner = owners.of(tp)[1]
        if owner is None:
            continue
        key = (candidate.start, candidate.end)
        per_member = tallies.get(key)
        if per_member is None:
            per_member = tallies[key] = _commits_per_member(moves, members, candidate.start, candidate.end)
        summed = (*key, owner.member_id)
        if summed not in sums:
            sums[summed] = _sibling_commits(per_member, owner.member_id)
        commits = sums[summed]
        if commits is None:
            continue
        reason = wording.reason_stall_siblings(
            candidate.last_lag, candidate.end - candidate.start, candidate.first_lag, commits
        )
        found[tp] = SiblingStall((Status.STALL, reason), commits)
    return found


def _sibling_commits(per_member: Mapping[str, tuple[int, int]], owner: str) -> int | None:
    """The commits of the group's other partitions (`_commits_per_member`: every member's, the owner's own other
    partitions too, the still candidate adding none), or None when none of those committed in at least
    SIBLING_MIN_COMMITS steps. `owner` is kept for the callers' cache key: the owner's own partitions count since a
    member that commits its other partitions is alive and polling, and only this partition is stuck."""
    others = list(per_member.values())
    if max((most for _, most in others), default=0) < SIBLING_MIN_COMMITS:
        return None
    return sum(total for total, _ in others)


def _commits_per_member(
    moves: Mapping[TopicPartition, Sequence[float]], members: Mapping[TopicPartition, str], start: float, end: float
) -> dict[str, tuple[int, int]]:
    """Per member: the commits of its partitions in (start, end], and the most of any one of its partitions."""
    per_member: dict[str, tuple[int, int]] = {}
    for tp, member in members.items():
        commits = sum(1 for at in moves[tp] if start < at <= end)
        total, most = per_member.get(member, (0, 0))
        per_member[member] = (total + commits, max(most, commits))
    return per_member


def still_and_growing(facts: Facts, rules: Evaluation) -> bool:
    committed = facts.committed
    if len(committed) < 2 or not facts.unmoved or caught_up_recently(facts, rules):
        return False
    first, last = committed[0].lag or 0, committed[-1].lag or 0
    return last > 0 and last > first and facts.committed_span > 0


def commit_times(facts: Facts) -> list[float]:
    """The sample times at which the committed offset had moved since the previous committed sample."""
    committed = facts.committed
    return [b.at for a, b in itertools.pairwise(committed) if b.committed != a.committed]


def stuck_vs_siblings_rows(
    plain: Sequence[TopicPartition],
    rows: PlainFound,
    others: Mapping[TopicPartition, Facts],
    owners: Owners,
    rules: Evaluation,
) -> dict[TopicPartition, SiblingStall]:
    """`stuck_vs_siblings` of a group whose plain partitions `plain` are `rows` (what the array rules found of them:
    lagbot.engine.batch `GroupRows`) and whose other partitions have their Facts in `others`."""
    if max(rows.commits, default=0) < SIBLING_MIN_COMMITS and all(
        len(commit_times(f)) < SIBLING_MIN_COMMITS for f in others.values()
    ):
        return {}  # no partition committed often enough for any candidate's siblings to (`_sibling_commits`)
    still: dict[TopicPartition, StillPartition] = {}
    if any(rows.growing):
        start, end = rows.start, rows.end
        found = zip(plain, rows.growing, rows.owned, rows.first_lags, rows.lags, strict=True)
        for tp, is_still, (ownership, _), first, last in found:
            if is_still and ownership is Ownership.OWNED:
                still[tp] = StillPartition(start, end, first, last)
    for tp, f in others.items():
        if still_and_growing(f, rules) and owners.of(tp)[0] is Ownership.OWNED:
            still[tp] = still_partition(f)
    if not still:
        return {}
    moves: dict[TopicPartition, Sequence[float]] = dict(zip(plain, rows.moves(), strict=True))
    moves.update((tp, commit_times(f)) for tp, f in others.items())
    return stuck_against(still, moves, owners)


class PlainFound(Protocol):
    """What `stuck_vs_siblings_rows` reads of a group's plain rows (lagbot.engine.batch `GroupRows`), one item per
    row: `still_and_growing` (`growing`), the ownership (`owned`), the first and last lags, the window's first and
    last sample times, each row's `commit_times` (`moves`) and how many there are (`commits`)."""

    @property
    def growing(self) -> list[bool]: ...
    @property
    def owned(self) -> list[tuple[Ownership, Member | None]]: ...
    @property
    def first_lags(self) -> list[int]: ...
    @property
    def lags(self) -> list[int]: ...
    @property
    def start(self) -> float: ...
    @property
    def end(self) -> float: ...
    @property
    def moves(self) -> Callable[[], list[list[float]]]: ...
    @property
    def commits(self) -> list[int]: ...


def still_and_growing_rows(rows: PlainRows, rules: Evaluation) -> NDArray[np.bool_]:
    """`still_and_growing` of every row: a candidate of `stuck_vs_siblings` (when it is owned)."""
    import numpy as np

    first_lag, last_lag = rows.lags[:, 0], rows.lags[:, -1]
    if rows.samples < 2 or not rows.span > 0:
        return np.zeros(len(rows.at), dtype=np.bool_)
    recently = caught_up_recently_rows(rows, rules)
    growing: NDArray[np.bool_] = rows.unmoved & ~recently & (last_lag > 0) & (last_lag > first_lag)
    return growing


def commit_times_rows(rows: PlainRows) -> list[list[float]]:
    """`commit_times` of every row."""
    import numpy as np

    moved = rows.committed[:, 1:] != rows.committed[:, :-1]
    row, step = np.nonzero(moved)
    times = rows.times[1:][step].tolist()
    ends = np.cumsum(np.bincount(row, minlength=len(rows.at))).tolist()
    return [times[start:end] for start, end in zip([0, *ends][:-1], ends, strict=True)]
