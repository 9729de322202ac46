"""A window's entries: one cycle's observation of one group as the window stores keep it (lagbot.engine.window), its
versioned JSON form, and the window read out of a group's entries.

An entry holds the group's state, members and generation with the offsets of all its partitions, made once when the
cycle is appended (as int64 arrays where the offsets allow exact arithmetic, else as samples). Its JSON is one
versioned document of the one codec (lagbot.core.stored); reading an unknown version raises StoredFormatError.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is loaded by the first entry with arrays
    import numpy as np
    from numpy.typing import NDArray

from lagbot.core.model import (
    ClusterSnapshot,
    ColumnSamples,
    ColumnWindow,
    GroupSample,
    GroupSnapshot,
    GroupState,
    GroupWindow,
    Member,
    PartitionSample,
    TopicPartition,
    WindowColumns,
)
from lagbot.core.stored import decode, encode

FORMAT_VERSION = 1
EXACT_LIMIT = 2**48
"""Offsets at or above this (or negative) keep a window off the array route, whose int64 sums of up to
2**14 partitions' lags must be exact (Python's ints never overflow)."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One cycle's observation of one group, as stored, with what reading a window needs ready-made.

    `tps` (the sorted partitions), the partitions' offsets (`columns`, or `samples` where there are no arrays)
    and `group_sample` are derived from the others when the entry is made (`new_entry`), once, rather than at
    every read of the window. An entry with arrays keeps no PartitionSample objects: a bot holds 30 entries of
    every group, and one object per partition and entry (with its own `lag` int) was most of the windows'
    memory, and millions of objects for the cyclic garbage collector to walk (bench/README.md, `scale.py`).
    A window's samples are built from the arrays when they are read (`ColumnSamples`).
    """

    at: float
    state: GroupState
    members: tuple[Member, ...]
    generation: int | None
    tps: tuple[TopicPartition, ...]
    samples: tuple[PartitionSample, ...] | None
    """The samples in `tps` order; None when `columns` holds them."""
    group_sample: GroupSample
    columns: NDArray[np.int64] | None
    """Rows committed (-1 where None), log_end, log_start, one column per partition of `tps`; None when an offset
    is negative or too big for exact int64 arithmetic (or `arrays=False`), and then `samples` holds them."""


def entry_of(
    snapshot: ClusterSnapshot, group: GroupSnapshot, *, like: Entry | None = None, arrays: bool = True
) -> Entry:
    at = snapshot.taken_at
    if arrays:  # the usual case: the arrays straight from the snapshot's offsets, no sample made
        log_end, log_start = snapshot.log_end, snapshot.log_start
        tps = _like(tuple(sorted(tp for tp in group.committed if tp in log_end)), like)
        committed = [group.committed[tp] for tp in tps]
        columns = _offset_columns(committed, [log_end[tp] for tp in tps], [log_start.get(tp, 0) for tp in tps])
        if columns is not None:
            return _made_entry(at, group.state, group.members, group.generation, tps, None, columns)
    partitions = {
        tp: PartitionSample(at, committed, snapshot.log_end[tp], snapshot.log_start.get(tp, 0))
        for tp, committed in group.committed.items()
        if tp in snapshot.log_end
    }
    return new_entry(at, group.state, group.members, group.generation, partitions, like=like, arrays=False)


def new_entry(
    at: float,
    state: GroupState,
    members: tuple[Member, ...],
    generation: int | None,
    partitions: dict[TopicPartition, PartitionSample],
    *,
    like: Entry | None,
    arrays: bool = True,
) -> Entry:
    """An entry with its derived parts. `like` is the group's previous entry (see `_like`)."""
    tps = _like(tuple(sorted(partitions)), like)
    samples = tuple([partitions[tp] for tp in tps])
    columns = _entry_columns(at, samples) if arrays else None
    return _made_entry(at, state, members, generation, tps, samples if columns is None else None, columns)


def _like(tps: tuple[TopicPartition, ...], like: Entry | None) -> tuple[TopicPartition, ...]:
    """`tps`, or the previous entry's `like` equal tuple: entries with the same partitions share one `tps` tuple, so
    that a window sees at a glance (`is`) that its entries line up."""
    return like.tps if like is not None and like.tps == tps else tps


def _made_entry(
    at: float,
    state: GroupState,
    members: tuple[Member, ...],
    generation: int | None,
    tps: tuple[TopicPartition, ...],
    samples: tuple[PartitionSample, ...] | None,
    columns: NDArray[np.int64] | None,
) -> Entry:
    group_sample = GroupSample(at, state, tuple(sorted(m.member_id for m in members)), generation)
    return Entry(at, state, members, generation, tps, samples, group_sample, columns)


def _entry_columns(at: float, samples: tuple[PartitionSample, ...]) -> NDArray[np.int64] | None:
    """The entry's offsets as a 3 x partitions array (see `Entry.columns`), or None unless `_offset_columns` takes
    them and every sample is at the entry's time."""
    if not samples or any(s.at != at for s in samples):
        return None
    return _offset_columns([s.committed for s in samples], [s.log_end for s in samples], [s.log_start for s in samples])


def _offset_columns(committed: list[int | None], log_end: list[int], log_start: list[int]) -> NDArray[np.int64] | None:
    """Rows committed (-1 where None), log end and log start as an int64 array, or None unless there are some and
    they are all integers (committed and log end from 0 to below EXACT_LIMIT): numpy infers int64 only for ints; a
    float, an int too big for int64 or anything else gives another dtype."""
    import numpy as np

    if not committed:
        return None
    try:
        if any(c < 0 for c in committed if c is not None):  # -1 stands for None in the array
            return None
        columns = np.array([[-1 if c is None else c for c in committed], log_end, log_start])
    except (OverflowError, TypeError, ValueError):
        return None
    if columns.dtype != np.int64 or columns[1].min() < 0 or columns[:2].max() >= EXACT_LIMIT:
        return None
    return columns


def _entry_rows(entry: Entry) -> list[tuple[TopicPartition, int | None, int, int]]:
    """(partition, committed or None, log end, log start) of each partition of the entry, in `tps` order."""
    if entry.columns is None:
        assert entry.samples is not None
        return [(tp, s.committed, s.log_end, s.log_start) for tp, s in zip(entry.tps, entry.samples, strict=True)]
    committed, log_end, log_start = entry.columns.tolist()
    return [
        (tp, None if c < 0 else c, e, s) for tp, c, e, s in zip(entry.tps, committed, log_end, log_start, strict=True)
    ]


def _entry_committed(entry: Entry) -> dict[TopicPartition, int | None]:
    """The committed offset (or None) of each partition of the entry, in `tps` order (`_entry_rows`'s second)."""
    if entry.columns is None:
        return {tp: committed for tp, committed, _, _ in _entry_rows(entry)}
    return dict(zip(entry.tps, [None if c < 0 else c for c in entry.columns[0].tolist()], strict=True))


def entry_samples(entry: Entry) -> tuple[PartitionSample, ...]:
    """The entry's samples in `tps` order: kept, or built from its arrays (see `Entry`)."""
    if entry.samples is not None:
        return entry.samples
    at = entry.at
    return tuple([PartitionSample(at, c, e, s) for _, c, e, s in _entry_rows(entry)])


def encode_entry(entry: Entry) -> str:
    """Versioned JSON of one entry: members with their assignments, partitions grouped by topic."""
    topics: dict[str, list[list[int | None]]] = {}
    for (topic, partition), committed, log_end, log_start in _entry_rows(entry):  # tps are sorted
        topics.setdefault(topic, []).append([partition, committed, log_end, log_start])
    document = {
        "at": entry.at,
        "state": entry.state.value,
        "generation": entry.generation,
        "members": [[m.member_id, m.client_id, m.host, [[t, p] for t, p in m.assignment]] for m in entry.members],
        "topics": topics,
    }
    return encode(FORMAT_VERSION, document, sort_keys=False)


def decode_entry(raw: bytes | str, *, like: Entry | None = None) -> Entry:
    document = decode("window entry", FORMAT_VERSION, raw)
    members = tuple(
        Member(member_id=m[0], client_id=m[1], host=m[2], assignment=tuple((t, p) for t, p in m[3]))
        for m in document["members"]
    )
    at, state, generation = document["at"], GroupState(document["state"]), document["generation"]
    made = _decoded_with_arrays(at, state, members, generation, document["topics"], like)
    if made is not None:
        return made
    partitions = {
        (topic, row[0]): PartitionSample(at, row[1], row[2], row[3])
        for topic, rows in document["topics"].items()
        for row in rows
    }
    return new_entry(at, state, members, generation, partitions, like=like)


def _decoded_with_arrays(
    at: float,
    state: GroupState,
    members: tuple[Member, ...],
    generation: int | None,
    topics: dict[str, list[list[int | None]]],
    like: Entry | None,
) -> Entry | None:
    """The entry of a decoded document's `topics` ([partition, committed, log end, log start] rows per topic) with its
    arrays made straight from them, as `entry_of` makes a snapshot's: no sample per partition (a replica that reads a
    window cold decodes 30 entries of every group). None when the rows are not in partition order without repeats
    (as `encode_entry` writes them) or the arrays cannot hold them (`_offset_columns`): the entry is then made of
    samples, as before."""
    tps: list[TopicPartition] = []
    committed: list[int | None] = []
    log_end: list[int] = []
    log_start: list[int] = []
    for topic, rows in topics.items():
        if rows:
            partitions, commits, ends, starts = zip(*rows, strict=True)
            tps += zip(itertools.repeat(topic), partitions)
            committed += commits
            log_end += ends
            log_start += starts
    found = tuple(tps)
    if like is not None and found == like.tps:
        found = like.tps  # the previous entry's, already found in order
    elif tps != sorted(set(tps)):
        return None
    columns = _offset_columns(committed, log_end, log_start)
    if columns is None:
        return None
    return _made_entry(at, state, members, generation, found, None, columns)


def to_window(cluster: str, group: str, entries: list[Entry]) -> GroupWindow:
    newest = entries[-1]
    latest = GroupSnapshot(
        group=group,
        state=newest.state,
        members=newest.members,
        committed=_entry_committed(newest),
        generation=newest.generation,
    )
    tps = newest.tps
    columns = None
    partitions: dict[TopicPartition, Sequence[PartitionSample]]
    if not all(e.tps is tps or e.tps == tps for e in entries):
        partitions = dict(_series(entries))
    elif tps and all(e.columns is not None for e in entries):
        # Every entry saw the same partitions and kept them as arrays (the usual case): each partition's samples
        # are a view over the entries' arrays, which makes a sample only when it is read. The evaluator judges
        # the plain partitions from the arrays alone (lagbot.engine.rows `PlainRows`), reading no sample of them.
        columns = _window_columns(entries)
        blocks = tuple(e.columns for e in entries if e.columns is not None)
        shared = ColumnWindow(columns.times, blocks, columns.log_end)
        partitions = {tp: ColumnSamples(shared, i) for i, tp in enumerate(tps)}
    else:
        # The same partitions, some entry without arrays: transposing the rows is one zip.
        partitions = dict(zip(tps, zip(*[entry_samples(e) for e in entries], strict=True), strict=True))
    return GroupWindow(
        cluster=cluster,
        group=group,
        samples=tuple([e.group_sample for e in entries]),
        partitions=partitions,
        latest=latest,
        columns=columns,
    )


def _series(entries: list[Entry]) -> dict[TopicPartition, tuple[PartitionSample, ...]]:
    """Each partition of the newest entry with its samples from every entry that has it, oldest first."""
    series: dict[TopicPartition, list[PartitionSample]] = {tp: [] for tp in entries[-1].tps}
    for entry in entries:
        for tp, sample in zip(entry.tps, entry_samples(entry), strict=True):
            found = series.get(tp)
            if found is not None:
                found.append(sample)
    return {tp: tuple(samples) for tp, samples in series.items()}


def _window_columns(entries: list[Entry]) -> WindowColumns:
    """The arrays of a window whose entries all have arrays of the same partitions (see WindowColumns)."""
    import numpy as np

    # samples x 2 rows x partitions -> 2 rows x partitions x samples; log start stays in the entries' arrays.
    stacked = np.array([e.columns[:2] for e in entries if e.columns is not None]).transpose(1, 2, 0)
    committed, log_end = stacked[0], stacked[1]
    known = committed >= 0
    np.maximum(committed, 0, out=committed)  # 0 where unknown, as WindowColumns holds it
    newest = entries[-1].columns
    assert newest is not None
    return WindowColumns(
        times=tuple(e.at for e in entries),
        tps=entries[-1].tps,
        committed=committed,
        log_end=log_end,
        known=known,
        last_log_start=newest[2],
    )
