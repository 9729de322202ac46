"""The drain's reads and writes of the group on the broker: its state, its committed offsets (through the
offset reader, never this process's AdminClient), and the commit past the drained ranges."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from lagbot.core.model import GroupState
from lagbot.engine.collector import offset_reader
from lagbot.remediations import kafka
from lagbot.remediations.drain import wording as drain_wording
from lagbot.remediations.drain.plan import (
    PartitionDrain,
)

_NOT_ACTIVE = (GroupState.EMPTY, GroupState.DEAD)
"""States with no members: Empty (offsets kept) or Dead (no group metadata). Offsets may move only then."""


class DrainError(Exception):
    """A step of the drain refused or failed; the message is one line fit for the incident thread."""


def group_state(admin: Any, group: str, *, timeout: float = 10.0) -> GroupState:
    """The group's state as its coordinator reports it (DescribeGroups), through the client's offset reader (a
    child process: never this process's AdminClient, which a coordinator error during a broker restart crashes)."""
    described = offset_reader(admin).read([group], timeout)[group].described
    if isinstance(described, str):
        raise DrainError(drain_wording.drain_group_unreadable(group, described))
    return described.state


def committed_offsets(
    admin: Any, group: str, partitions: Sequence[tuple[str, int]], *, timeout: float = 10.0
) -> dict[tuple[str, int], int | None]:
    """The group's committed offset of each partition (None: nothing committed), read through the client's
    offset reader (lagbot.engine.offset_reader: never this process's AdminClient, which a coordinator error
    crashes)."""
    answer = offset_reader(admin).fetch({group: list(partitions)}, timeout)[group]
    if isinstance(answer, str):
        raise DrainError(
            drain_wording.drain_offsets_unreadable(group, ", ".join(f"{t}/{p}" for t, p in partitions), answer)
        )
    offsets: dict[tuple[str, int], int | None] = {}
    for c in answer:
        if c.error is not None:
            raise DrainError(drain_wording.drain_offsets_unreadable(group, f"{c.topic}/{c.partition}", c.error))
        offsets[(c.topic, c.partition)] = c.offset
    return offsets


def moved_back(partitions: Sequence[PartitionDrain], current: dict[tuple[str, int], int | None]) -> list[str]:
    """Partitions whose committed offset is now behind where the plan saw it: advancing would skip unread data."""
    behind = []
    for p in partitions:
        now = current.get((p.topic, p.partition))
        if p.committed is not None and (now is None or now < p.committed):
            behind.append(f"{p.topic}/{p.partition} {p.committed} -> {now if now is not None else '-'}")
    return behind


def commits_for(
    partitions: Sequence[PartitionDrain], current: dict[tuple[str, int], int | None]
) -> dict[tuple[str, int], int]:
    """Offsets to commit: each range end, except where the group is already at or past it (never backwards)."""
    moves = {}
    for p in partitions:
        now = current.get((p.topic, p.partition))
        if now is None or now < p.end:
            moves[(p.topic, p.partition)] = p.end
    return moves


def advance_offsets(
    admin: Any, group: str, partitions: Sequence[PartitionDrain], *, timeout: float = 10.0
) -> dict[tuple[str, int], int]:
    """Commit the drained ends for an Empty group, after checking; returns what was committed.

    Apache Kafka refuses to alter an active group's offsets; some brokers do not, so the state is
    checked here right before the request, and the result is read back.

    Raises:
        DrainError: the group is not Empty, its offsets moved back since the plan, or the broker
            refused or did not store what was asked.
    """
    state = group_state(admin, group, timeout=timeout)
    if state not in _NOT_ACTIVE:
        raise DrainError(drain_wording.drain_group_active(group, state.value))
    tps = [(p.topic, p.partition) for p in partitions]
    current = committed_offsets(admin, group, tps, timeout=timeout)
    behind = moved_back(partitions, current)
    if behind:
        raise DrainError(drain_wording.drain_moved_back(group, behind))
    moves = commits_for(partitions, current)
    if not moves:
        return {}
    unanswered = ""
    try:
        kafka.alter_offsets(admin, group, moves, timeout)
    except kafka.AlterOutcomeUnknown as exc:
        unanswered = f"{exc}; "  # the read back below tells whether the broker stored the offsets
    except kafka.KafkaActionError as exc:
        raise DrainError(drain_wording.drain_commit_failed(group, str(exc))) from exc
    stored = committed_offsets(admin, group, list(moves), timeout=timeout)
    wrong = [f"{t}/{p}" for (t, p), o in moves.items() if stored.get((t, p)) != o]
    if wrong:
        raise DrainError(
            drain_wording.drain_commit_failed(group, f"{unanswered}read back different offsets for {', '.join(wrong)}")
        )
    return moves


def wait_until_empty(
    admin: Any, group: str, *, timeout: float, sleep: Callable[[float], None] = time.sleep
) -> GroupState:
    """Poll the group's state until it has no members or `timeout` seconds passed; the last state seen (UNKNOWN
    when it could not be read then). A failed read is polled again: the caller paused the consumers and must be
    the one to restore them, so this never raises for a read."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            state = group_state(admin, group, timeout=min(10.0, timeout))
        except DrainError:
            state = GroupState.UNKNOWN
        if state in _NOT_ACTIVE or time.monotonic() >= deadline:
            return state
        sleep(0.5)
